// Corpus streaming from a file and a directory, its errors, the held-out split
// and shuffling.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "tests/helpers.h"
#include "text/corpus.h"
#include "text/tokenizer.h"

using namespace ordo::text;
using Catch::Matchers::Contains;
using Strings = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

using ordo::test::TempDir;

std::vector<Document> read_all(const std::string& path) {
  CorpusReader reader(path);
  std::vector<Document> docs;
  Document doc;
  while (reader.next(doc)) docs.push_back(doc);
  return docs;
}

}  // namespace

TEST_CASE("corpus: one file, blank lines between documents", "[text][corpus]") {
  TempDir dir;
  std::string file = dir.write("c.txt", "\nFirst one.\nSecond one.\n\n\n  \nNext doc.\r\nMore.\n\nLast.");
  auto docs = read_all(file);
  REQUIRE(docs.size() == 3);
  CHECK(docs[0].sentences == Strings{"First one.", "Second one."});
  CHECK(docs[0].first_line == 2);
  CHECK(docs[1].sentences == Strings{"Next doc.", "More."});  // "\r" dropped; a blank-only line separates
  CHECK(docs[1].first_line == 7);
  CHECK(docs[2].sentences == Strings{"Last."});
  CHECK(docs[2].index == 2);
  CHECK(docs[2].file == file);
}

TEST_CASE("corpus: a directory is read in sorted order, each file its own documents", "[text][corpus]") {
  TempDir dir;
  dir.write("b.txt", "b one\n\nb two\n");
  dir.write("a.txt", "a one\na one more");
  dir.write(".hidden", "never read\n");
  auto docs = read_all(dir.path);
  REQUIRE(docs.size() == 3);
  CHECK(docs[0].sentences == Strings{"a one", "a one more"});
  CHECK(docs[1].sentences == Strings{"b one"});
  CHECK(docs[2].sentences == Strings{"b two"});
  CHECK(docs[2].file == dir.path + "/b.txt");
  CHECK(docs[2].first_line == 3);
}

TEST_CASE("corpus: invalid UTF-8 names the file and line", "[text][corpus]") {
  TempDir dir;
  std::string file = dir.write("bad.txt", "fine\n\nstill fine\nbroken \xC0\xAF here\n");
  CorpusReader reader(file);
  Document doc;
  REQUIRE(reader.next(doc));
  CHECK_THROWS_WITH(reader.next(doc), Contains(file + " line 4 at byte 7: overlong encoding"));
}

TEST_CASE("corpus: missing, empty and blank corpora are clear errors", "[text][corpus]") {
  TempDir dir;
  CHECK_THROWS_WITH(CorpusReader(dir.path + "/absent.txt"), Contains("absent.txt' does not exist"));
  CHECK_THROWS_WITH(CorpusReader(dir.path), Contains("holds no files"));
  std::string blank = dir.write("blank.txt", "\n  \n\n");
  CHECK_THROWS_WITH(read_all(blank), Contains("holds no sentences"));
}

TEST_CASE("corpus: held-out split is stable and near its fraction", "[text][corpus]") {
  const int n = 20000;
  int held = 0;
  for (int i = 0; i < n; ++i) held += is_held_out(7, i, 0.1);
  // Binomial(20000, 0.1): mean 2000, sd 42.4; 4 sigma = 170.
  CHECK(std::abs(held - 2000) < 170);
  for (int i = 0; i < 100; ++i) CHECK(is_held_out(7, i, 0.1) == is_held_out(7, i, 0.1));
  CHECK_FALSE(is_held_out(7, 3, 0.0));
}

TEST_CASE("corpus: tokenize_corpus keeps documents, drops empty sentences, splits", "[text][corpus]") {
  TempDir dir;
  std::string text;
  for (int d = 0; d < 200; ++d) text += "the dog .\n\x07\ncat\n\n";  // "\x07" alone tokenizes to nothing
  std::string file = dir.write("c.txt", text);
  Tokenizer tokenizer(Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "cat", "."}));
  CorpusSplitOptions options;
  options.held_out_fraction = 0.25;
  options.seed = 3;
  options.threads = 2;
  CorpusSplit split = tokenize_corpus(file, tokenizer, options);
  CHECK(split.train.documents() + split.held_out.documents() == 200);
  int expected_held = 0;
  for (int d = 0; d < 200; ++d) expected_held += is_held_out(3, d, 0.25);
  CHECK(split.held_out.documents() == expected_held);
  const TokenizedCorpus& t = split.train;
  CHECK(t.sentences() == 2 * t.documents());
  CHECK(std::vector<int32_t>(t.tokens.begin(), t.tokens.begin() + 4) == std::vector<int32_t>{5, 6, 8, 7});
  CHECK(t.sentence_begin[1] == 3);
  options.held_out_fraction = 1.5;
  CHECK_THROWS_WITH(tokenize_corpus(file, tokenizer, options), Contains("held-out fraction"));
}
