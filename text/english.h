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
// Whether the source's files are in `folder` ("": the package's folder):
// WordNet's data.noun, the fortunes' "fortunes".
bool english_installed(EnglishSource source, const std::string& folder = "");

struct EnglishStats {
  int64_t documents = 0, sentences = 0;
};

// The corpus text, from the package's folder or from `folder` where given (the
// same files elsewhere: another distribution's WordNet, a test's fixture).
// Throws ordo::Error naming the package to install when the source is absent,
// and when it yields no sentence.
std::string extract_english(EnglishSource source, EnglishStats* stats = nullptr, const std::string& folder = "");

}  // namespace ordo::text
