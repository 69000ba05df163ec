#include "text/english.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "text/utf8.h"

namespace ordo::text {

namespace fs = std::filesystem;

EnglishSource parse_english_source(const std::string& name) {
  if (name == "wordnet") return EnglishSource::wordnet;
  if (name == "fortunes") return EnglishSource::fortunes;
  throw Error("unknown English source '" + name + "' (choose wordnet or fortunes)");
}

const char* english_package(EnglishSource source) {
  return source == EnglishSource::wordnet ? "wordnet-base" : "fortunes-min";
}

const char* english_folder(EnglishSource source) {
  return source == EnglishSource::wordnet ? "/usr/share/wordnet" : "/usr/share/games/fortunes";
}

bool english_installed(EnglishSource source, const std::string& folder) {
  const std::string dir = folder.empty() ? english_folder(source) : folder;
  std::error_code ec;
  return fs::is_regular_file(dir + (source == EnglishSource::wordnet ? "/data.noun" : "/fortunes"), ec);
}

namespace {

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
}

// Appends one document; sentences that are empty or not UTF-8 are left out.
void add_document(const std::vector<std::string>& sentences, std::string& out, EnglishStats& stats) {
  int64_t kept = 0;
  for (const auto& s : sentences) {
    if (s.empty() || !utf8::valid(s)) continue;
    out += s;
    out += '\n';
    ++kept;
  }
  if (kept == 0) return;
  out += '\n';
  ++stats.documents;
  stats.sentences += kept;
}

// A WordNet data line: "offset lexfile type count words... pointers | gloss".
// The gloss is "definition; "example"; "example"": split at the semicolons
// outside quotes; a quoted part is an example sentence.
std::vector<std::string> wordnet_sentences(const std::string& line) {
  size_t bar = line.find(" | ");
  if (bar == std::string::npos) return {};
  std::string gloss = line.substr(bar + 3);
  std::vector<std::string> parts;
  std::string current;
  bool quoted = false;
  for (char c : gloss) {
    if (c == '"') quoted = !quoted;
    if (c == ';' && !quoted) {
      parts.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(trim(current));
  std::vector<std::string> sentences;
  for (auto& part : parts) {
    part.erase(std::remove(part.begin(), part.end(), '"'), part.end());
    part = trim(part);
    if (!part.empty()) sentences.push_back(part);
  }
  return sentences;
}

// "00001740 03 n 01 entity 0 ... | gloss": an 8-digit offset, a 2-digit lexicographer
// file, a synset type, a 2-hex-digit word count, and a gloss after " | ". Every line of
// WordNet 3.0's data files but the licence header has this shape.
bool is_wordnet_data_line(const std::string& line) {
  auto digits = [&](size_t from, size_t n, int (*is)(int)) {
    for (size_t i = from; i < from + n; ++i)
      if (!is(static_cast<unsigned char>(line[i]))) return false;
    return true;
  };
  return line.size() > 17 && digits(0, 8, isdigit) && line[8] == ' ' && digits(9, 2, isdigit) && line[11] == ' ' &&
         std::strchr("nvasr", line[12]) != nullptr && line[13] == ' ' && digits(14, 2, isxdigit) && line[16] == ' ' &&
         line.find(" | ") != std::string::npos;
}

// A line that is neither is refused with its place: a truncated or foreign file would
// otherwise give a corpus with documents silently missing.
void extract_wordnet(const std::string& folder, std::string& out, EnglishStats& stats) {
  for (const char* part : {"noun", "verb", "adj", "adv"}) {
    const std::string file = folder + "/data." + part;
    const std::string text = read_file(file);
    ORDO_CHECK(text.empty() || text.back() == '\n', file, ": its last line has no line break (a truncated file?)");
    std::istringstream in(text);
    std::string line;
    for (int64_t number = 1; std::getline(in, line); ++number) {
      if (line.rfind("  ", 0) == 0) continue;  // the licence header
      ORDO_CHECK(utf8::valid(line), file, ":", number, ": not UTF-8 (WordNet's data files are ASCII)");
      ORDO_CHECK(is_wordnet_data_line(line), file, ":", number, ": not a WordNet data line (\"offset lex_filenum ",
                 "ss_type w_cnt word ... | gloss\"); is ", folder, " WordNet 3.0's dict folder, and the file whole?");
      add_document(wordnet_sentences(line), out, stats);
    }
  }
}

// Fortune files underline and embolden by overstriking: "c\bc", "_\bc".
// A backspace takes back the character before it.
std::string remove_overstrikes(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c != '\b') {
      out += c;
    } else if (!out.empty()) {
      out.pop_back();
    }
  }
  return out;
}

// Splits running text after '.', '?' or '!' followed by a space.
std::vector<std::string> split_sentences(const std::string& text) {
  std::vector<std::string> sentences;
  size_t start = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if ((text[i] == '.' || text[i] == '?' || text[i] == '!') && text[i + 1] == ' ') {
      sentences.push_back(trim(std::string_view(text).substr(start, i + 1 - start)));
      start = i + 1;
    }
  }
  sentences.push_back(trim(std::string_view(text).substr(start)));
  return sentences;
}

// Fortune files: fortunes separated by lines holding "%"; the lines of one
// fortune are joined and split into sentences.
void extract_fortunes(const std::string& folder, std::string& out, EnglishStats& stats) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.find('.') == std::string::npos) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::istringstream in(read_file(file));
    std::string line, fortune;
    auto flush = [&] {
      add_document(split_sentences(fortune), out, stats);
      fortune.clear();
    };
    while (std::getline(in, line)) {
      line = remove_overstrikes(line);
      if (trim(line) == "%") {
        flush();
      } else {
        std::string t = trim(line);
        if (!t.empty()) fortune += (fortune.empty() ? "" : " ") + t;
      }
    }
    flush();
  }
}

}  // namespace

std::string extract_english(EnglishSource source, EnglishStats* stats, const std::string& folder) {
  const std::string dir = folder.empty() ? english_folder(source) : folder;
  ORDO_CHECK(english_installed(source, dir), "no ", source == EnglishSource::wordnet ? "WordNet" : "fortunes",
             " data in ", dir, " (no ", source == EnglishSource::wordnet ? "data.noun" : "fortunes", "): install the "
             "Debian package ", english_package(source), " (apt-get install ", english_package(source), ")");
  EnglishStats local;
  std::string out;
  if (source == EnglishSource::wordnet) {
    extract_wordnet(dir, out, local);
  } else {
    extract_fortunes(dir, out, local);
  }
  ORDO_CHECK(local.sentences > 0, "no sentences found in ", dir);
  if (stats) *stats = local;
  return out;
}

}  // namespace ordo::text
