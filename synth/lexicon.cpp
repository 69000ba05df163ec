#include "synth/lexicon.h"

#include <cstring>

namespace ordo::synth {

namespace {

struct NounRow {
  const char* singular;
  const char* plural;
  NounKind kind;
};

struct VerbRow {
  const char* base;
  const char* third;
  const char* past;
  const char* participle;
  unsigned classes;
};

constexpr NounKind kAnimate = NounKind::Animate;
constexpr NounKind kThing = NounKind::Thing;

#include "synth/lexicon_data.inc"

Lexicon build_default() {
  Lexicon lex;
  for (const NounRow& r : kNounRows) lex.nouns.push_back({r.singular, r.plural, r.kind});
  for (const VerbRow& r : kVerbRows)
    lex.verbs.push_back({r.base, r.third, r.past, r.participle, r.classes});
  for (const char* a : kAdjectiveRows) lex.adjectives.emplace_back(a);
  for (const char* a : kAdverbRows) lex.adverbs.emplace_back(a);
  return lex;
}

bool starts_with(const std::string& word, const char* prefix) {
  return word.compare(0, std::strlen(prefix), prefix) == 0;
}

}  // namespace

const Lexicon& default_lexicon() {
  static const Lexicon lexicon = build_default();
  return lexicon;
}

bool takes_an(const std::string& word) {
  if (word.empty()) return false;
  // A silent h sounds like a vowel; "u" and "eu" said "you", and "one" said
  // "won", do not.
  for (const char* p : {"hour", "honest", "honor", "heir"})
    if (starts_with(word, p)) return true;
  for (const char* p : {"uni", "use", "usu", "uti", "ute", "ura", "ure", "uro", "eu", "one", "once", "ewe"})
    if (starts_with(word, p)) return false;
  return std::strchr("aeiou", word[0]) != nullptr;
}

}  // namespace ordo::synth
