#include "text/corpus.h"

#include <algorithm>
#include <exception>
#include <filesystem>

#include "base/counter_rng.h"
#include "base/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace ordo::text {

namespace fs = std::filesystem;

std::vector<std::string> corpus_files(const std::string& path) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  ORDO_CHECK(!ec && fs::exists(status), "corpus '", path, "' does not exist");
  if (fs::is_regular_file(status)) return {path};
  ORDO_CHECK(fs::is_directory(status), "corpus '", path, "' is neither a file nor a directory");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path)) {
    std::string name = entry.path().filename().string();
    if (!name.empty() && name[0] != '.' && entry.is_regular_file()) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  ORDO_CHECK(!files.empty(), "corpus directory '", path, "' holds no files");
  return files;
}

CorpusReader::CorpusReader(const std::string& path) : path_(path), files_(corpus_files(path)) {}

bool CorpusReader::open_next_file() {
  if (in_.is_open()) in_.close();
  if (file_index_ >= files_.size()) return false;
  const std::string& file = files_[file_index_++];
  in_.open(file, std::ios::binary);
  ORDO_CHECK(in_.is_open(), "cannot open corpus file '", file, "'");
  line_ = 0;
  return true;
}

bool CorpusReader::next(Document& doc) {
  doc.sentences.clear();
  std::string line;
  for (;;) {
    if (!in_.is_open() || !std::getline(in_, line)) {
      // The end of a file ends its last document.
      if (!doc.sentences.empty()) break;
      if (!open_next_file()) {
        ORDO_CHECK(documents_ > 0, "corpus '", path_, "' holds no sentences (", files_.size(),
                   " file(s), all empty or blank)");
        return false;
      }
      continue;
    }
    ++line_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    utf8::Invalid invalid;
    ORDO_CHECK(utf8::valid(line, &invalid), "invalid UTF-8 in ", files_[file_index_ - 1], " line ", line_,
               " at byte ", invalid.offset, ": ", invalid.reason);
    bool blank = std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
    if (blank) {
      if (doc.sentences.empty()) continue;  // runs of blank lines separate once
      break;
    }
    if (doc.sentences.empty()) {
      doc.file = files_[file_index_ - 1];
      doc.first_line = line_;
    }
    doc.sentences.push_back(std::move(line));
  }
  doc.index = documents_++;
  return true;
}

bool is_held_out(uint64_t seed, int64_t index, double fraction) {
  if (fraction <= 0) return false;
  CounterRng rng(seed, rng_stream(RngPurpose::split), static_cast<uint64_t>(index));
  return rng.uniform() < fraction;
}

void TokenizedCorpus::add_document(const std::vector<std::vector<int32_t>>& sentences, int64_t index) {
  int64_t before = this->sentences();
  for (const auto& sentence : sentences) {
    if (sentence.empty()) continue;
    tokens.insert(tokens.end(), sentence.begin(), sentence.end());
    sentence_begin.push_back(static_cast<int64_t>(tokens.size()));
  }
  if (this->sentences() == before) return;
  document_begin.push_back(this->sentences());
  source_index.push_back(index);
}

namespace {

// Tokenizes a batch of documents in parallel, keeping their order.
std::vector<std::vector<std::vector<int32_t>>> tokenize_batch(const std::vector<Document>& docs,
                                                              const Tokenizer& tokenizer, int threads) {
  std::vector<std::vector<std::vector<int32_t>>> out(docs.size());
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
  for (long d = 0; d < static_cast<long>(docs.size()); ++d) {
    try {
      for (const auto& sentence : docs[d].sentences) out[d].push_back(tokenizer.encode(sentence));
    } catch (...) {
#pragma omp critical
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  return out;
}

}  // namespace

CorpusSplit tokenize_corpus(const std::string& path, const Tokenizer& tokenizer, const CorpusSplitOptions& options) {
  ORDO_CHECK(options.held_out_fraction >= 0 && options.held_out_fraction < 1, "held-out fraction must be in [0, 1), got ",
             options.held_out_fraction);
  int threads = options.threads;
#ifdef _OPENMP
  if (threads <= 0) threads = omp_get_max_threads();
#else
  threads = 1;
#endif
  CorpusSplit split;
  CorpusReader reader(path);
  std::vector<Document> batch;
  auto flush = [&] {
    auto tokenized = tokenize_batch(batch, tokenizer, threads);
    for (size_t d = 0; d < batch.size(); ++d) {
      bool held_out = is_held_out(options.seed, batch[d].index, options.held_out_fraction);
      (held_out ? split.held_out : split.train).add_document(tokenized[d], batch[d].index);
    }
    batch.clear();
  };
  Document doc;
  while (reader.next(doc)) {
    batch.push_back(std::move(doc));
    if (batch.size() == 1024) flush();
  }
  flush();
  ORDO_CHECK(split.train.documents() > 0, "corpus '", path, "' leaves no training document with a token (",
             reader.documents_read(), " documents read, ", split.held_out.documents(), " held out)");
  return split;
}

}  // namespace ordo::text
