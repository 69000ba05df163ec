// The synthetic language on disk: corpus.txt, annotations.jsonl and meta.json,
// the reader, and `ordo data synth` as a user runs it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/file_io.h"
#include "synth/synth.h"
#include "tests/helpers.h"

using namespace ordo::synth;
namespace fs = std::filesystem;

namespace {

using Scratch = ordo::test::TempDir;

std::string slurp(const std::string& path) { return ordo::read_file(path); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Runs the ordo binary; returns its exit status and puts stderr in `err`.
int ordo_cli(const std::string& args, std::string& err, const Scratch& scratch) {
  std::string log = scratch.file("stderr.txt");
  std::string cmd = std::string(ORDO_BINARY) + " " + args + " > /dev/null 2> " + log;
  int status = std::system(cmd.c_str());
  err = slurp(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("the files hold the corpus and its annotations line for line", "[synth]") {
  Scratch scratch;
  std::string dir = scratch.file("out");
  Counts counts = write_synthetic(dir, 500, 7, Config(), false);
  CHECK(counts.sentences == 500);

  std::vector<std::string> corpus = lines(slurp(dir + "/corpus.txt"));
  std::vector<std::string> annotations = lines(slurp(dir + "/annotations.jsonl"));
  REQUIRE(annotations.size() == 500);
  // A blank line between documents, none at either end.
  CHECK(static_cast<int64_t>(corpus.size()) == 500 + counts.documents - 1);
  CHECK(!corpus.front().empty());
  CHECK(!corpus.back().empty());

  // The documents are the grammar's, cut to 500 sentences; the text is the words.
  std::vector<Document> docs = read_annotations(dir + "/annotations.jsonl");
  CHECK(static_cast<int64_t>(docs.size()) == counts.documents);
  Grammar grammar(Config(), 7);
  size_t line = 0;
  for (size_t d = 0; d < docs.size(); ++d) {
    Document expected = grammar.next_document();
    REQUIRE(docs[d].sentences.size() <= expected.sentences.size());
    if (d + 1 < docs.size()) REQUIRE(docs[d].sentences.size() == expected.sentences.size());
    for (size_t i = 0; i < docs[d].sentences.size(); ++i, ++line) {
      const Sentence& s = docs[d].sentences[i];
      REQUIRE(s == expected.sentences[i]);
      std::string text;
      for (const std::string& w : s.words) text += (text.empty() ? "" : " ") + w;
      REQUIRE(corpus[line] == text);
      REQUIRE(to_json_line(s, static_cast<int64_t>(d), static_cast<int64_t>(i)) == annotations[line - d]);
    }
    if (d + 1 < docs.size()) REQUIRE(corpus[line++].empty());
  }

  ordo::json::Value meta = ordo::json::parse(slurp(dir + "/meta.json"));
  CHECK(meta["seed"].as_int() == 7);
  CHECK(meta["sentences"].as_int() == 500);
  CHECK(meta["documents"].as_int() == counts.documents);
  CHECK(meta["words"].as_int() == counts.words);
  CHECK(meta["grammar_version"].as_int() == kGrammarVersion);
  CHECK(meta["config"]["p_passive"].as_number() == Config().p_passive);
}

TEST_CASE("the same seed writes the same bytes, another seed other bytes", "[synth]") {
  Scratch scratch;
  write_synthetic(scratch.file("a"), 300, 11, Config(), false);
  write_synthetic(scratch.file("b"), 300, 11, Config(), false);
  write_synthetic(scratch.file("c"), 300, 12, Config(), false);
  for (const char* file : {"/corpus.txt", "/annotations.jsonl", "/meta.json"})
    CHECK(slurp(scratch.file("a") + file) == slurp(scratch.file("b") + file));
  CHECK(slurp(scratch.file("a") + "/corpus.txt") != slurp(scratch.file("c") + "/corpus.txt"));
}

TEST_CASE("bad requests and existing output are refused", "[synth]") {
  Scratch scratch;
  CHECK_THROWS_WITH(write_synthetic(scratch.file("zero"), 0, 1, Config(), false),
                    Catch::Matchers::Contains("at least 1"));
  CHECK_FALSE(fs::exists(scratch.file("zero")));

  // An existing directory with files in it is kept unless --overwrite.
  std::string dir = scratch.file("taken");
  fs::create_directories(dir);
  ordo::write_file_atomic(dir + "/notes.txt", "mine");
  CHECK_THROWS_WITH(write_synthetic(dir, 10, 1, Config(), false), Catch::Matchers::Contains("not empty") &&
                                                                     Catch::Matchers::Contains("--overwrite"));
  CHECK_FALSE(fs::exists(dir + "/corpus.txt"));
  // --overwrite replaces the folder whole: nothing of what was there stays.
  write_synthetic(dir, 10, 1, Config(), true);
  CHECK(fs::exists(dir + "/corpus.txt"));
  CHECK_FALSE(fs::exists(dir + "/notes.txt"));
  ordo::write_file_atomic(dir + "/notes.txt", "mine");
  // An empty existing directory is fine.
  fs::create_directories(scratch.file("empty"));
  CHECK_NOTHROW(write_synthetic(scratch.file("empty"), 5, 1, Config(), false));

  // A path that cannot be a directory: under a regular file.
  CHECK_THROWS_WITH(write_synthetic(dir + "/notes.txt/sub", 5, 1, Config(), false),
                    Catch::Matchers::Contains("notes.txt"));
  CHECK_THROWS_WITH(write_synthetic(dir + "/notes.txt", 5, 1, Config(), false),
                    Catch::Matchers::Contains("is a file, not a folder"));
  Config bad;
  bad.p_relative = -0.1;
  CHECK_THROWS_WITH(write_synthetic(scratch.file("bad"), 5, 1, bad, false), Catch::Matchers::Contains("p_relative"));
  CHECK_FALSE(fs::exists(scratch.file("bad")));
}

TEST_CASE("a malformed annotations line is reported with file and line", "[synth]") {
  Scratch scratch;
  std::string dir = scratch.file("out");
  write_synthetic(dir, 20, 3, Config(), false);
  std::vector<std::string> good = lines(slurp(dir + "/annotations.jsonl"));
  auto with_line3 = [&](const std::string& replacement) {
    std::string text;
    for (size_t i = 0; i < good.size(); ++i) text += (i == 2 ? replacement : good[i]) + "\n";
    std::string path = scratch.file("bad.jsonl");
    ordo::write_file_atomic(path, text);
    return path;
  };
  auto fails_with = [&](const std::string& line, const std::string& message) {
    std::string path = with_line3(line);
    CHECK_THROWS_WITH(read_annotations(path),
                      Catch::Matchers::Contains(path + ":3: ") && Catch::Matchers::Contains(message));
  };
  auto replace = [&](std::string line, const std::string& from, const std::string& to) {
    size_t at = line.find(from);
    REQUIRE(at != std::string::npos);
    return line.replace(at, from.size(), to);
  };
  fails_with("{\"doc\": 0,", "json: line 1");
  fails_with("", "empty line");
  fails_with("[1, 2]", "expected a JSON object");
  fails_with(replace(good[2], "\"words\":", "\"wordz\":"), "missing key 'words'");
  fails_with(replace(good[2], "\"heads\":[", "\"heads\":[99,"), "heads");
  fails_with(replace(good[2], "\"tree\":\"(S ", "\"tree\":\"(S (X x) "), "'tree' does not match");
  fails_with(replace(good[2], "\"kind\":\"", "\"kind\":\"x"), "unknown value");
  fails_with(replace(good[2], "\"sent\":", "\"sent\":7"), "out of order");
  CHECK_THROWS_WITH(read_annotations(scratch.file("missing.jsonl")), Catch::Matchers::Contains("missing.jsonl"));
  ordo::write_file_atomic(scratch.file("empty.jsonl"), "");
  CHECK_THROWS_WITH(read_annotations(scratch.file("empty.jsonl")), Catch::Matchers::Contains("no sentences"));
}

TEST_CASE("ordo data synth writes the corpus and refuses bad flags", "[synth]") {
  Scratch scratch;
  std::string err, dir = scratch.file("cli");
  REQUIRE(ordo_cli("data synth --sentences 50 --seed 3 --out " + dir, err, scratch) == 0);
  CHECK(read_annotations(dir + "/annotations.jsonl").size() >= 1);
  CHECK(ordo_cli("data synth --sentences 50 --seed 3 --out " + dir, err, scratch) != 0);
  CHECK_THAT(err, Catch::Matchers::Contains("not empty"));
  CHECK(ordo_cli("data synth --sentences 50 --seed 3 --out " + dir + " --overwrite --set p_passive=0.5", err,
                 scratch) == 0);
  CHECK(ordo::json::parse(slurp(dir + "/meta.json"))["config"]["p_passive"].as_number() == 0.5);

  CHECK(ordo_cli("data synth --sentences 0 --out " + scratch.file("x"), err, scratch) != 0);
  CHECK_THAT(err, Catch::Matchers::Contains("--sentences"));
  CHECK(ordo_cli("data synth --out " + scratch.file("x"), err, scratch) != 0);
  CHECK_THAT(err, Catch::Matchers::Contains("--sentences"));
  CHECK(ordo_cli("data synth --sentences 5", err, scratch) != 0);
  CHECK_THAT(err, Catch::Matchers::Contains("--out"));
  CHECK(ordo_cli("data synth --sentences 5 --out " + scratch.file("x") + " --set p_oops=1", err, scratch) != 0);
  CHECK_THAT(err, Catch::Matchers::Contains("p_oops"));
  CHECK(ordo_cli("data synth --sentences 5 --seed -1 --out " + scratch.file("x"), err, scratch) != 0);
  CHECK_THAT(err, Catch::Matchers::Contains("--seed"));
  CHECK_FALSE(fs::exists(scratch.file("x")));
}
