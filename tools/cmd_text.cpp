// The text commands: `ordo tokenize`, `ordo vocab train`, `ordo data english`
// and the data benchmark `ordo bench data`.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "base/output.h"
#include "text/corpus.h"
#include "text/english.h"
#include "text/pretraining_data.h"
#include "text/tokenizer.h"
#include "text/vocab_trainer.h"
#include "tools/cli.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using namespace ordo::text;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// ---- ordo tokenize ------------------------------------------------------------------

int tokenize(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {"vocab", "text", "file"}, {"no-lower", "ids"});
  ORDO_USAGE_CHECK(args.has("text") != args.has("file"), "give exactly one of --text and --file");
  TokenizerOptions options;
  options.lower_case = !args.has("no-lower");
  Tokenizer tokenizer(Vocab::load(args.required("vocab")), options);
  const bool ids = args.has("ids");
  auto print = [&](const std::string& line) {
    std::vector<int32_t> encoded = tokenizer.encode(line);
    std::string out;
    for (size_t i = 0; i < encoded.size(); ++i) {
      if (i > 0) out += ' ';
      out += ids ? std::to_string(encoded[i]) : tokenizer.vocab().token(encoded[i]);
    }
    std::printf("%s\n", out.c_str());
  };
  if (args.has("text")) {
    print(args.required("text"));
    return 0;
  }
  // One output line per input line.
  const std::string file = args.required("file");
  std::istringstream in(ordo::read_file(file));
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    try {
      print(line);
    } catch (const ordo::Error& e) {
      throw ordo::Error(file + " line " + std::to_string(number) + ": " + e.what());
    }
  }
  return 0;
}

ordo::cli::Register tokenize_command(
    {"tokenize", "show the WordPiece tokens (or ids) of a text",
     "--vocab vocab.txt (--text \"...\" | --file F) [--no-lower] [--ids]", tokenize});

// ---- ordo vocab train ------------------------------------------------------------------

int vocab_train(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {"corpus", "out", "size", "min-frequency"}, {"no-lower", "overwrite"});
  VocabTrainerOptions options;
  options.vocab_size = args.integer("size", 8000, 5, 1 << 24);
  options.min_frequency = args.integer("min-frequency", 2, 1, INT64_MAX);
  options.lower_case = !args.has("no-lower");
  const std::string corpus = args.required("corpus"), out = args.required("out");
  ordo::check_output(out, ordo::OutputKind::file, args.has("overwrite"), {{corpus, "--corpus"}});
  auto start = Clock::now();
  VocabTrainerStats stats;
  Vocab vocab = train_wordpiece_from_corpus(corpus, options, &stats);
  vocab.save(out);
  std::printf("%s: %d tokens (5 special, %lld alphabet, %lld merges) from %lld words (%lld distinct) in %.2f s\n",
              out.c_str(), vocab.size(), static_cast<long long>(stats.alphabet),
              static_cast<long long>(stats.merges), static_cast<long long>(stats.words),
              static_cast<long long>(stats.unique_words), seconds_since(start));
  const std::string warning =
      small_vocabulary_warning(vocab.size(), options.vocab_size, "--size", options.min_frequency, "--min-frequency");
  if (!warning.empty()) {
    std::fprintf(stderr, "warning: %s\n", warning.c_str());
  } else if (vocab.size() < options.vocab_size) {
    std::printf("note: stopped below --size %lld: no pair is seen --min-frequency %lld times any more\n",
                static_cast<long long>(options.vocab_size), static_cast<long long>(options.min_frequency));
  }
  return 0;
}

ordo::cli::Register vocab_train_command(
    {"vocab train", "learn a WordPiece vocab.txt from a corpus",
     "--corpus FILE_OR_DIR --out vocab.txt [--size 8000] [--min-frequency 2] [--no-lower] [--overwrite]\n"
     "  an existing vocab.txt is replaced only with --overwrite; a vocabulary under half of --size is a warning",
     vocab_train});

// ---- ordo data english ------------------------------------------------------------------

int data_english(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {"out", "source", "from"}, {"overwrite"});
  EnglishSource source = parse_english_source(args.str("source", "wordnet"));
  const std::string out = args.required("out"), from = args.str("from", english_folder(source));
  ordo::check_output(out, ordo::OutputKind::file, args.has("overwrite"), {{from, "--from"}});
  EnglishStats stats;
  std::string text = extract_english(source, &stats, from);
  ordo::write_file_atomic(out, text);
  std::printf("%s: %lld documents, %lld sentences, %.1f MB of English from %s (%s)\n", out.c_str(),
              static_cast<long long>(stats.documents), static_cast<long long>(stats.sentences), text.size() / 1e6,
              from.c_str(), english_package(source));
  return 0;
}

ordo::cli::Register data_english_command(
    {"data english", "extract a real-English corpus from an installed Debian package",
     "--out FILE [--source wordnet|fortunes] [--from DIR] [--overwrite]  (packages wordnet-base / fortunes-min)\n"
     "  --from  the folder of the source's files (default: the package's, /usr/share/wordnet or\n"
     "          /usr/share/games/fortunes)", data_english});

// ---- ordo bench data ------------------------------------------------------------------

// The benchmark's text: WordNet or fortunes where installed, else a made-up
// English-like text, so the benchmark always runs.
std::string bench_text(std::string& what) {
  for (EnglishSource source : {EnglishSource::wordnet, EnglishSource::fortunes}) {
    if (english_installed(source)) {
      what = std::string(english_package(source)) + " English";
      return extract_english(source);
    }
  }
  what = "generated words (no English package installed)";
  const char* words[] = {"the", "dog", "chased", "a", "small", "cat", "across", "garden", "while", "children",
                         "were", "laughing", "quietly", "naïve", "running", "unbelievable", "house", "river"};
  std::string text;
  uint32_t x = 1;
  for (int doc = 0; doc < 20000; ++doc) {
    for (int s = 0; s < 5; ++s) {
      for (int w = 0; w < 12; ++w) {
        x = x * 1664525u + 1013904223u;
        text += words[(x >> 16) % 18];
        text += w == 11 ? ".\n" : " ";
      }
    }
    text += '\n';
  }
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// MB/s of tokenizing every line with `threads` threads.
double tokenize_rate(const Tokenizer& tokenizer, const std::vector<std::string>& lines, size_t bytes, int threads) {
  auto start = Clock::now();
  int64_t tokens = 0;
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads) reduction(+ : tokens)
  for (long i = 0; i < static_cast<long>(lines.size()); ++i) {
    thread_local std::vector<int32_t> ids;
    ids.clear();
    tokenizer.encode_append(lines[i], ids);
    tokens += static_cast<int64_t>(ids.size());
  }
  double s = seconds_since(start);
  return tokens > 0 ? bytes / 1e6 / s : 0;
}

// Sequences per second of next_batch, over at least `min_seconds` (first epoch plan included).
double batch_rate(PretrainingData& data, int64_t batch_size, double min_seconds) {
  Cursor cursor;
  int64_t sequences = 0;
  auto start = Clock::now();
  do {
    Batch b = data.next_batch(cursor, batch_size);
    sequences += b.batch;
  } while (seconds_since(start) < min_seconds);
  return sequences / seconds_since(start);
}

int bench_data(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {"seconds", "max-seq-length", "batch"});
  const double seconds = args.number("seconds", 2.0, 0.1, 600);
  const int64_t length = args.integer("max-seq-length", 128, 8, 4096);
  const int64_t batch = args.integer("batch", 32, 1, 4096);
  std::string what;
  const std::string text = bench_text(what);
  const auto lines = lines_of(text);
  size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size();

  auto start = Clock::now();
  WordCounter counter(true);
  for (const auto& l : lines) counter.add_text(l);
  VocabTrainerOptions trainer;
  trainer.vocab_size = 8000;
  Vocab vocab = train_wordpiece(counter, trainer);
  const double train_s = seconds_since(start);
  Tokenizer tokenizer(vocab);

  const int threads = max_threads();
  const double one = tokenize_rate(tokenizer, lines, bytes, 1);
  const double all = tokenize_rate(tokenizer, lines, bytes, threads);

  std::string corpus_file = "/tmp/ordo_bench_data_" + std::to_string(::getpid()) + ".txt";
  ordo::write_file_atomic(corpus_file, text);
  start = Clock::now();
  TokenizedCorpus corpus;
  try {
    corpus = std::move(tokenize_corpus(corpus_file, tokenizer).train);
  } catch (...) {
    std::remove(corpus_file.c_str());
    throw;
  }
  std::remove(corpus_file.c_str());
  const double corpus_s = seconds_since(start);

  std::printf("data benchmark: %s, %.1f MB in %zu lines, %lld documents, %zu tokens; %d thread(s)\n", what.c_str(),
              bytes / 1e6, lines.size(), static_cast<long long>(corpus.documents()), corpus.tokens.size(),
              threads);
  std::printf("| %-48s | %14s |\n", "measure", "value");
  std::printf("|%s|%s|\n", std::string(50, '-').c_str(), std::string(16, '-').c_str());
  std::printf("| %-48s | %12.2f s |\n", "vocab train (8000 tokens, counting included)", train_s);
  std::printf("| %-48s | %9.2f MB/s |\n", "tokenize, 1 thread", one);
  std::printf("| %-48s | %9.2f MB/s |\n", ("tokenize, " + std::to_string(threads) + " threads").c_str(), all);
  std::printf("| %-48s | %12.2f s |\n", "tokenize_corpus (read + tokenize, all cores)", corpus_s);
  for (Objective objective : {Objective::mlm, Objective::mlm_nsp, Objective::causal}) {
    PretrainingOptions options;
    options.objective = objective;
    options.max_seq_length = length;
    PretrainingData data(corpus, vocab, options);
    double rate = batch_rate(data, batch, seconds);
    std::string label = std::string("batches, ") + objective_name(objective) + ", L=" + std::to_string(length) +
                        ", B=" + std::to_string(batch) + ", 1 thread";
    std::printf("| %-48s | %10.0f seq/s |\n", label.c_str(), rate);
  }
  return 0;
}

ordo::cli::Register bench_data_command(
    {"bench data", "tokenizer MB/s (one core, all cores) and pretraining batches/s",
     "[--seconds 2] [--max-seq-length 128] [--batch 32]", bench_data});

}  // namespace
