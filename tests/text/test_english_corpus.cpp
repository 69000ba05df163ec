// The real-English rung's preparation (scripts/english_corpus.sh: `ordo data
// english` over WordNet's data files, then `ordo vocab train`) on a made-up
// fixture in WordNet's layout (tests/data/english/wordnet/): the sentences
// it should give, worked out by hand from the extraction rule (text/english.h:
// one document per synset, the gloss split at the semicolons outside quotes,
// the quotes dropped), a vocabulary trained on them, and the same bytes twice.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "base/file_io.h"
#include "tests/helpers.h"
#include "text/english.h"
#include "text/tokenizer.h"

using namespace ordo;

namespace {

const std::string kFixture = std::string(ORDO_SOURCE_DIR) + "/tests/data/english/wordnet";

// data.noun, data.verb, data.adj, data.adv in that order, each synset a document.
const char* kCorpus =
    "a lamp with a transparent case\n"
    "she carried a lantern down the lane\n"
    "the lantern swung in the wind\n"
    "\n"
    "a sheltered port where ships can anchor\n"
    "\n"
    "move about without a fixed course\n"
    "we wandered through the old town\n"
    "\n"
    "making little or no noise\n"
    "a quiet evening by the fire\n"
    "\n"
    "without speed\n"
    "the river moved slowly toward the sea\n"
    "\n";

int prepare(const std::string& out, const std::string& wordnet) {
  const std::string cmd = "ENGLISH_VOCAB_SIZE=120 " + std::string(ORDO_SOURCE_DIR) + "/scripts/english_corpus.sh " +
                          ORDO_BINARY + " " + out + " " + wordnet + " > " + out + ".log 2>&1";
  return std::system(cmd.c_str());
}

}  // namespace

TEST_CASE("WordNet's glosses from a folder: one document per synset, examples as sentences", "[text][english]") {
  text::EnglishStats stats;
  CHECK(text::extract_english(text::EnglishSource::wordnet, &stats, kFixture) == kCorpus);
  CHECK(stats.documents == 5);
  CHECK(stats.sentences == 10);
  const test::TempDir empty("english_empty");
  CHECK_THROWS_WITH(text::extract_english(text::EnglishSource::wordnet, nullptr, empty.path),
                    Catch::Contains("no WordNet data in " + empty.path + " (no data.noun)") &&
                        Catch::Contains("apt-get install wordnet-base"));
  // A file cut short, a line of another shape, a byte that is not UTF-8: refused with the place, not
  // skipped (the corpus would lose documents in silence).
  const test::TempDir bad("english_bad");
  auto refused = [&](const std::string& noun) {
    for (const char* part : {"verb", "adj", "adv"})
      bad.write(std::string("data.") + part, read_file(kFixture + "/data." + part));
    bad.write("data.noun", noun);
    try {
      text::extract_english(text::EnglishSource::wordnet, nullptr, bad.path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const std::string noun = read_file(kFixture + "/data.noun");
  const std::string file = bad / "data.noun";
  CHECK(refused(noun.substr(0, noun.size() - 10)) ==
        file + ": its last line has no line break (a truncated file?)");
  CHECK_THAT(refused(noun + "lantern: a lamp\n"),
             Catch::StartsWith(file + ":4: not a WordNet data line (\"offset lex_filenum ss_type w_cnt word ... | "
                                      "gloss\"); is " + bad.path + " WordNet 3.0's dict folder"));
  CHECK(refused(noun + "00000009 03 n 01 caf\xe9 0 000 | a place\n") ==
        file + ":4: not UTF-8 (WordNet's data files are ASCII)");
}

TEST_CASE("the English corpus's preparation: sentences out, a vocabulary trained, the same bytes twice",
          "[text][english]") {
  const test::TempDir dir("english_corpus");
  REQUIRE(prepare(dir / "first", kFixture) == 0);
  REQUIRE(prepare(dir / "second", kFixture) == 0);
  const std::string corpus = read_file(dir / "first/wordnet.txt"), vocab = read_file(dir / "first/vocab.txt");
  CHECK(corpus == kCorpus);
  CHECK(read_file(dir / "second/wordnet.txt") == corpus);
  CHECK(read_file(dir / "second/vocab.txt") == vocab);

  // A WordPiece vocabulary of the fixture's alphabet and merges: every
  // sentence tokenizes without [UNK] and decodes back.
  const text::Vocab v = text::Vocab::load(dir / "first/vocab.txt");
  CHECK(v.size() > 40);  // 5 special tokens, ~50 first and continuing letters, merges up to 120
  CHECK(v.size() <= 120);
  text::Tokenizer tokenizer(v);
  for (const std::string sentence : {"a lamp with a transparent case", "the river moved slowly toward the sea"}) {
    INFO(sentence);
    const std::vector<int32_t> ids = tokenizer.encode(sentence);
    for (int32_t id : ids) CHECK(id != v.special().unk);
    CHECK(tokenizer.decode(ids) == sentence);
  }

  // No WordNet there: the script fails, saying where it looked.
  const test::TempDir empty("english_none");
  CHECK(prepare(dir / "third", empty.path) != 0);
  CHECK_THAT(read_file(dir / "third.log"), Catch::Contains("no WordNet data in " + empty.path));
  CHECK_FALSE(file_exists(dir / "third/wordnet.txt"));
}
