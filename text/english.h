// Real English text from Debian packages, for a machine without a network:
//   wordnet   the glosses of WordNet 3.0 (package wordnet-base): each synset's
//             definition and its quoted usage examples make one document;
//   fortunes  the fortune cookies (package fortunes-min or fortunes): each
//             fortune makes one document, split into sentences.
// The result is a corpus in the layout of corpus.h.
#pragma once

#include <cstdint>
#include <string>

namespace ordo::text {

enum class EnglishSource { wordnet, fortunes };

// "wordnet" or "fortunes"; anything else is an error naming the choices.
EnglishSource parse_english_source(const std::string& name);
// The Debian package that provides a source, and the folder it installs.
const char* english_package(EnglishSource source);
const char* english_folder(EnglishSource source);
bool english_installed(EnglishSource source);

struct EnglishStats {
  int64_t documents = 0, sentences = 0;
};

// The corpus text. Throws ordo::Error naming the package to install when the
// source is absent, and when it yields no sentence.
std::string extract_english(EnglishSource source, EnglishStats* stats = nullptr);

}  // namespace ordo::text
