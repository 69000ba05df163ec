// Text corpora in the layout of Google's BERT pretraining data: UTF-8, one
// sentence per line, a blank line between documents; one file or a directory
// of files read in sorted name order (a new file also starts a new document).
//
// CorpusReader streams documents one at a time, so a corpus larger than memory
// can be counted or tokenized. tokenize_corpus turns a corpus into token ids
// (4 bytes a token, the form pretraining samples from) and splits off a
// held-out set by a hash of each document's index, which needs no second pass.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace ordo::text {

class Tokenizer;

struct Document {
  std::vector<std::string> sentences;  // non-blank lines, a trailing '\r' removed
  std::string file;                    // the file it came from
  int64_t first_line = 0;              // 1-based line of its first sentence
  int64_t index = 0;                   // 0-based position in the whole corpus
};

// The files of a corpus: `path` itself, or the regular files directly inside a
// directory (names starting with '.' skipped), sorted by name. Errors for a
// missing path or a directory without files.
std::vector<std::string> corpus_files(const std::string& path);

class CorpusReader {
 public:
  explicit CorpusReader(const std::string& path);

  // The next document; false after the last. Throws ordo::Error naming the file
  // and line for invalid UTF-8, and, at the end, for a corpus with no sentence.
  bool next(Document& doc);

  const std::vector<std::string>& files() const { return files_; }
  int64_t documents_read() const { return documents_; }

 private:
  bool open_next_file();

  std::string path_;
  std::vector<std::string> files_;
  size_t file_index_ = 0;
  std::ifstream in_;
  int64_t line_ = 0;
  int64_t documents_ = 0;
};

// Held-out membership of document `index` under `seed`: true for about
// `fraction` of the documents, decided by the document alone (Philox on
// (seed, index)), so the split is stable and streaming-friendly.
bool is_held_out(uint64_t seed, int64_t index, double fraction);

// A corpus as token ids: sentence s is tokens[sentence_begin[s], sentence_begin[s+1]),
// document d is sentences [document_begin[d], document_begin[d+1]). A
// document's sentences, hence its tokens, are contiguous.
struct TokenizedCorpus {
  std::vector<int32_t> tokens;
  std::vector<int64_t> sentence_begin{0};
  std::vector<int64_t> document_begin{0};
  std::vector<int64_t> source_index;  // each document's index in the text corpus

  int64_t documents() const { return static_cast<int64_t>(document_begin.size()) - 1; }
  int64_t sentences() const { return static_cast<int64_t>(sentence_begin.size()) - 1; }
  int64_t sentence_length(int64_t s) const { return sentence_begin[s + 1] - sentence_begin[s]; }
  // Appends a document; empty sentences are dropped, and a document left with
  // none is not added.
  void add_document(const std::vector<std::vector<int32_t>>& sentences, int64_t index);
};

struct CorpusSplitOptions {
  double held_out_fraction = 0.0;  // in [0, 1)
  uint64_t seed = 0;
  int threads = 0;  // 0: all cores (OpenMP)
};

struct CorpusSplit {
  TokenizedCorpus train;
  TokenizedCorpus held_out;
};

// Streams the corpus once, tokenizing documents in parallel (in order).
// Errors: those of CorpusReader, and a training split left empty.
CorpusSplit tokenize_corpus(const std::string& path, const Tokenizer& tokenizer,
                            const CorpusSplitOptions& options = {});

}  // namespace ordo::text
