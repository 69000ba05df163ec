// Integration: real English from the Debian packages wordnet-base and
// fortunes-min through `ordo data english`, `ordo vocab train` and the
// tokenizer. Where a package is absent the case says so with a WARN and checks
// nothing more; where it is present, any failure fails the test.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>
#include <string>
#include <unistd.h>

#include "base/error.h"
#include "base/file_io.h"
#include "text/corpus.h"
#include "text/english.h"
#include "text/tokenizer.h"
#include "text/vocab_trainer.h"

using namespace ordo::text;

namespace {

void check_source(EnglishSource source) {
  if (!english_installed(source)) {
    WARN("checked nothing: " << english_package(source) << " is not installed (no " << english_folder(source)
                             << "); apt-get install " << english_package(source));
    CHECK_THROWS_WITH(extract_english(source), Catch::Matchers::Contains(english_package(source)));
    return;
  }
  const std::string dir = "/tmp/ordo_test_english_" + std::to_string(::getpid());
  const std::string corpus = dir + "_corpus.txt", vocab_path = dir + "_vocab.txt";
  const char* name = source == EnglishSource::wordnet ? "wordnet" : "fortunes";

  // The command line, as a user runs it.
  std::string cmd = std::string(ORDO_BINARY) + " data english --source " + name + " --out " + corpus + " > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  cmd = std::string(ORDO_BINARY) + " vocab train --corpus " + corpus + " --out " + vocab_path +
        " --size 3000 > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);

  Vocab vocab = Vocab::load(vocab_path);
  CHECK(vocab.size() > 1000);  // 3000 unless pairs run out below --min-frequency
  Tokenizer tokenizer(vocab);
  // Every document reads back; every sentence tokenizes without [UNK] (the
  // vocabulary's alphabet covers its corpus) and lower-cased ASCII round-trips.
  CorpusReader reader(corpus);
  text::Document doc;
  int64_t sentences = 0, round_trips = 0;
  while (reader.next(doc)) {
    for (const auto& s : doc.sentences) {
      ++sentences;
      auto ids = tokenizer.encode(s);
      for (int32_t id : ids) {
        // A word over 100 characters is the only way to [UNK] with this vocabulary.
        if (id == vocab.special().unk) FAIL_CHECK("[UNK] in: " << s);
      }
      std::string words;
      for (const auto& w : BasicTokenizer(true).words(s)) words += (words.empty() ? "" : " ") + w;
      if (tokenizer.decode(ids) == words) ++round_trips;
    }
  }
  CHECK(sentences > 500);
  CHECK(round_trips == sentences);
  CorpusSplitOptions split;
  split.held_out_fraction = 0.1;
  CorpusSplit tokenized = tokenize_corpus(corpus, tokenizer, split);
  CHECK(tokenized.held_out.documents() > 0);
  std::remove(corpus.c_str());
  std::remove(vocab_path.c_str());
}

}  // namespace

TEST_CASE("English from wordnet-base: extract, train a vocabulary, tokenize, round-trip", "[text][english]") {
  check_source(EnglishSource::wordnet);
}

TEST_CASE("English from fortunes-min: extract, train a vocabulary, tokenize, round-trip", "[text][english]") {
  check_source(EnglishSource::fortunes);
}
