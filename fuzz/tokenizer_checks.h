// What the tokenizer fuzz targets check of a tokenizer that loaded: a text's
// tokens are ids of the vocabulary, each with a span of the text's code
// points, in order; encode() gives the ids encode_with_offsets() does. Text
// that is not UTF-8 must be refused with an ordo::Error. A broken property aborts (libFuzzer keeps
// the input).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/error.h"
#include "text/subword.h"
#include "text/utf8.h"

namespace ordo::fuzz {

inline void check_encoding(const text::SubwordTokenizer& tokenizer, const std::string& input) {
  text::Encoding e;
  try {
    e = tokenizer.encode_with_offsets(input);
  } catch (const Error&) {
    if (text::utf8::valid(input)) std::abort();  // valid text is always tokenized
    return;
  }
  if (!text::utf8::valid(input)) std::abort();
  const int32_t length = static_cast<int32_t>(text::utf8::decode_or_throw(input, "fuzz input").size());
  if (e.offsets.size() != e.ids.size()) std::abort();
  int32_t previous_begin = 0;
  for (size_t i = 0; i < e.ids.size(); ++i) {
    if (e.ids[i] < 0 || e.ids[i] >= tokenizer.id_bound()) std::abort();
    const text::CharSpan s = e.offsets[i];
    if (s.begin < previous_begin || s.begin >= s.end || s.end > length) std::abort();
    previous_begin = s.begin;
  }
  if (tokenizer.encode(input) != e.ids) std::abort();
}

// Saves the tokenizer into a scratch folder; the caller reads it back.
inline std::string saved(const text::SubwordTokenizer& tokenizer, const char* name) {
  static const std::string dir = "/tmp/ordo-fuzz-" + std::to_string(::getpid()) + "-" + name;
  std::filesystem::create_directories(dir);
  tokenizer.save(dir);
  return dir;
}

}  // namespace ordo::fuzz
