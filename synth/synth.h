// ordo's synthetic language: the embedded default data every experiment runs
// on when no corpus is given.
//
// A seeded probabilistic grammar writes English-like sentences over the
// lexicon of synth/lexicon.h (determiners, adjectives, nouns with number,
// intransitive and transitive verbs with tense and agreement, adverbs,
// prepositional phrases, subject and object relative clauses, clausal
// complements, adverbial clauses, coordination of noun phrases and of
// clauses, passives) and groups them into documents whose sentences share a
// small cast of recurring nouns. Every sentence carries its annotations:
//   - the constituency tree (Penn Treebank labels: S, NP, VP, PP, SBAR, WHNP,
//     ADJP, ADVP; part-of-speech tags per word),
//   - the dependency arcs (Universal Dependencies labels; 0-based word
//     indices; the root's head is -1),
//   - for each clause its verb, agent and patient as semantic roles (the
//     agent of "the cat was chased by the dog" is "the dog").
//
// Word order carries the meaning: any animate noun can be the agent or the
// patient of a transitive verb like "chase", so "the dog chased the cat" and
// "the cat chased the dog" have the same words and differ only in order.
// Text is lower case throughout, one space between tokens, and the sentence's
// final "." is a token of its own.
//
// The same (config, seed, lexicon) gives the same documents on every platform:
// all randomness is ordo's counter-based Philox (base/counter_rng.h), keyed by
// the seed and the document's index, turned into choices by ordo's own integer
// and IEEE arithmetic (not by the standard library's distributions, whose
// outputs differ between implementations).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "synth/lexicon.h"

namespace ordo::synth {

// Bump when the grammar changes what a seed generates.
constexpr int kGrammarVersion = 1;

// ---- annotations ------------------------------------------------------------------

struct Span {
  int start = 0, end = 0;  // words [start, end)
  friend bool operator==(const Span& a, const Span& b) { return a.start == b.start && a.end == b.end; }
};

// A phrase of the constituency tree. A sentence's phrases are kept in
// preorder, so a phrase's parent comes before it and tree[0] is the root S.
struct Constituent {
  std::string label;  // "S", "NP", "VP", "PP", "SBAR", "WHNP", "ADJP", "ADVP"
  Span span;
  int parent = -1;    // index into the tree; -1 for the root
};

// The head of one word: arcs[i] is word i's head and the relation's label.
struct Arc {
  int head = -1;       // -1 for the root
  std::string label;   // "nsubj", "obj", "det", "amod", "acl:relcl", "root", ...
};

enum class ClauseKind {
  Main,        // the sentence's first clause
  Coordinate,  // a clause after "and"/"but"
  Relative,    // "(the dog) that chased the cat"
  Complement,  // "(said) that the cat slept"
  Adverbial,   // "(ran) because the cat barked"
};
enum class Tense { Past, Present };

struct Clause {
  int verb = 0;                 // the lexical verb ("chased" in "was chased")
  ClauseKind kind = ClauseKind::Main;
  Tense tense = Tense::Past;
  bool passive = false;
  std::optional<Span> agent;    // absent for a passive without "by ..."
  std::optional<Span> patient;  // absent for intransitive and clausal verbs
};

struct Sentence {
  std::vector<std::string> words;
  std::vector<std::string> tags;  // Penn Treebank part-of-speech tag of each word
  std::vector<Constituent> tree;
  std::vector<Arc> arcs;          // one per word
  std::vector<Clause> clauses;    // in the order of their verbs
};

struct Document {
  std::vector<Sentence> sentences;
};

bool operator==(const Constituent& a, const Constituent& b);
bool operator==(const Arc& a, const Arc& b);
bool operator==(const Clause& a, const Clause& b);
bool operator==(const Sentence& a, const Sentence& b);

const char* name(ClauseKind kind);  // "main", "coordinate", "relative", "complement", "adverbial"
const char* name(Tense tense);      // "past", "present"

// The tree in Penn Treebank brackets: "(S (NP (DT the) (NN dog)) (VP (VBD ran)) (. .))".
std::string bracketed(const Sentence& s);

// Throws ordo::Error naming the first inconsistency: tags or arcs not one per
// word; a head out of range, not exactly one root, or a cycle; phrases that
// do not nest, are empty, or a root that does not span the sentence; a clause
// whose verb is out of range or whose agent or patient is not an NP of the tree.
void check(const Sentence& s);

// The words with two disjoint spans exchanged: the agent/patient swap that
// keeps the bag of words and changes who did what.
std::vector<std::string> swap_spans(const std::vector<std::string>& words, Span a, Span b);

// ---- the grammar --------------------------------------------------------------------

// The grammar's probabilities. A p_* is the chance of a choice each time it
// comes up; w_* are relative weights of alternatives.
struct Config {
  // Documents.
  int min_sentences = 3;     // sentences per document, drawn uniformly in [min, max]
  int max_sentences = 8;
  int cast_animate = 3;      // a document's recurring animate nouns
  int cast_things = 2;       // and recurring thing nouns
  double p_cast = 0.7;       // a noun comes from the document's cast
  double zipf_shift = 20;    // other nouns (and all verbs, adjectives, adverbs) are drawn
                             // with weight 1 / (frequency rank + zipf_shift)
  // Sentences and clauses.
  double p_coordinate = 0.15;  // "S and S" / "S but S"
  double p_adverbial = 0.1;    // a main or coordinate clause ends in "because S", "while S", ...
  double w_intransitive = 0.25;
  double w_transitive_animate = 0.45;
  double w_transitive_thing = 0.2;
  double w_clausal = 0.1;      // "said that S"
  double p_passive = 0.1;      // of transitive clauses
  double p_by_agent = 0.8;     // a passive names its agent with "by NP"
  double p_past = 0.5;         // otherwise present tense
  double p_adverb = 0.15;      // a clause has a manner adverb
  double p_adverb_first = 0.4; // ... before the verb ("quickly chased") rather than after the VP
  double p_vp_pp = 0.2;        // a clause has a prepositional phrase ("in the garden")
  // Noun phrases.
  double p_plural = 0.3;
  double p_definite = 0.6;     // the determiner is "the"
  double p_numeral = 0.1;      // a plural without "the" is counted ("three dogs")
  double p_adjective = 0.3;    // per adjective, at most two
  double p_collocation = 0;    // the adjective next to the noun is the noun's own (a fixed
                               // adjective per noun: "fine crops"), a local dependency that
                               // only the neighbouring position tells; 0 leaves the draws
                               // exactly as they were before the option existed
  double p_degree = 0.15;      // an adjective is graded ("very old")
  double p_np_pp = 0.1;        // "the dog near the house"
  double p_relative = 0.15;    // "the dog that chased the cat"
  double p_object_relative = 0.45;  // ... of relative clauses: "the dog that the cat chased"
  double p_that = 0.6;         // the relative pronoun is "that", else "who"/"which"
  double p_np_coordinate = 0.08;    // "the dog and the cat"
  int max_depth = 2;           // embedded clauses and phrases nest at most this deep
  int max_words = 40;          // longer sentences are drawn again
};

// Throws ordo::Error naming the first field out of range.
void validate(const Config& config);

// Every field, by name, in declaration order (for meta.json).
json::Value to_json(const Config& config);
// Sets one field from its name and text ("p_passive", "0.2"); an unknown name
// or a value that does not parse throws ordo::Error.
void set_field(Config& config, const std::string& name, const std::string& value);

class Grammar {
 public:
  // The lexicon is copied. Throws ordo::Error if the config is invalid or the
  // lexicon lacks words the config asks for (two animate nouns at least).
  Grammar(Config config, uint64_t seed, const Lexicon& lexicon = default_lexicon());

  // Documents 0, 1, 2, ... in turn.
  Document next_document();
  // Document `index` on its own: the same as the index-th next_document().
  Document document(uint64_t index) const;

  const Config& config() const { return config_; }
  const Lexicon& lexicon() const { return lexicon_; }
  uint64_t seed() const { return seed_; }

 private:
  class Writer;  // draws one document (synth/synth.cpp)
  Config config_;
  uint64_t seed_;
  Lexicon lexicon_;
  // Indices into lexicon_, each list most frequent first, with the running
  // sums of their Zipf weights.
  struct Pool {
    std::vector<int> items;
    std::vector<double> cumulative;
  };
  Pool animate_, things_, adjectives_, adverbs_;
  Pool verbs_[4];  // by VerbClass bit: intransitive, transitive animate, thing, clausal
  uint64_t next_ = 0;
};

// ---- files -----------------------------------------------------------------------------

// One annotations.jsonl line (without the newline) and back. from_json checks
// the sentence (check above) and that "tree" matches the constituents.
std::string to_json_line(const Sentence& s, int64_t doc, int64_t index);
Sentence from_json_line(const std::string& line, int64_t* doc = nullptr, int64_t* index = nullptr);

// Reads annotations.jsonl back into documents. Errors name the file and line.
std::vector<Document> read_annotations(const std::string& path);

struct Counts {
  int64_t documents = 0, sentences = 0, words = 0;
};

// Generates `sentences` sentences (the last document cut short to fit) and
// writes dir/corpus.txt (a sentence a line, a blank line between documents),
// dir/annotations.jsonl and dir/meta.json, meta.json last, in a folder built
// beside dir and swapped in whole (base/output.h: no file of a previous
// corpus stays). A dir that exists and is not empty is refused unless
// overwrite is set.
Counts write_synthetic(const std::string& dir, int64_t sentences, uint64_t seed,
                       const Config& config, bool overwrite);

}  // namespace ordo::synth
