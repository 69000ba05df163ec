// The lexicon of ordo's synthetic language: a few thousand real English words
// with the morphology and selectional classes the grammar (synth/synth.h) needs.
//
// The default lexicon is embedded (synth/lexicon_data.inc, written from WordNet
// 3.0 by scripts/gen_lexicon.py), so generating data needs no file or network.
// A Lexicon is plain data: tests build tiny ones by hand to force a derivation.
#pragma once

#include <string>
#include <vector>

namespace ordo::synth {

// Animate nouns (people, animals) fill agent and patient slots; things fill
// the objects of verbs like "carry" and of prepositions.
enum class NounKind { Animate, Thing };

struct Noun {
  std::string singular, plural;  // "mouse", "mice"
  NounKind kind;
};

// Selectional classes, a bit set: a verb may have several.
enum VerbClass : unsigned {
  kIntransitive = 1,        // "the dog slept"
  kTransitiveAnimate = 2,   // "the dog chased the cat": both roles animate, so reversible
  kTransitiveThing = 4,     // "the dog carried the box"
  kClausal = 8,             // "the dog said that the cat slept"
};

struct Verb {
  std::string base, third, past, participle;  // "run", "runs", "ran", "run"
  unsigned classes;                           // VerbClass bits
};

// Every list is ordered most frequent first; the grammar's word choice
// follows that order (a Zipf-like weight by rank).
struct Lexicon {
  std::vector<Noun> nouns;
  std::vector<Verb> verbs;
  std::vector<std::string> adjectives;
  std::vector<std::string> adverbs;  // manner adverbs ("quickly")
};

// The embedded lexicon, built on first use.
const Lexicon& default_lexicon();

// Whether the indefinite article before `word` is "an": by its first letter,
// with the exceptions English spelling makes ("an hour", "a unit", "a one").
bool takes_an(const std::string& word);

}  // namespace ordo::synth
