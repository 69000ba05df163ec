// The synthetic grammar: drawing documents, sentences and their annotations.
//
// A sentence is built left to right. Phrases are opened before their first
// word and closed after their last, so the tree comes out in preorder; each
// word's head is attached once both words exist. The shapes (Penn Treebank
// phrases, Universal Dependencies relations):
//
//   S     -> S CC S .  |  clause .
//   clause-> NP [ADVP] VP                         nsubj / nsubj:pass, advmod
//   VP    -> V [NP] [PP] [SBAR] [ADVP] [SBAR]     obj, obl, ccomp, advmod, advcl
//          | be (VP V-en [PP by NP] [PP] ...)     aux:pass, obl:agent
//   NP    -> NP CC NP                             conj, cc (plural agreement)
//          | NP SBAR                              acl:relcl ("the dog that ...")
//          | NP PP                                nmod
//          | DT|CD [ADJP|JJ]* N                   det/nummod, amod, advmod
//   SBAR  -> WHNP S   (relative: the pronoun is the verb's nsubj or obj)
//          | IN S     (complement "that", adverbial "because": mark)
//   PP    -> IN NP                                case
#include "synth/synth.h"

#include <algorithm>

#include "base/counter_rng.h"
#include "base/error.h"

namespace ordo::synth {

namespace {

struct Weighted {
  const char* word;
  double weight;
};

template <size_t N>
const char* pick(CounterRng& rng, const Weighted (&table)[N]) {
  double total = 0;
  for (const Weighted& w : table) total += w.weight;
  double x = rng.uniform32() * total;
  for (const Weighted& w : table) {
    if (x < w.weight) return w.word;
    x -= w.weight;
  }
  return table[N - 1].word;
}

template <size_t N>
const char* pick(CounterRng& rng, const char* const (&list)[N]) {
  return list[rng.below(N)];
}

// The closed classes.
constexpr Weighted kSingularDeterminers[] = {{"a", 6}, {"this", 1}, {"that", 1}, {"every", 1}, {"each", 1}};
constexpr Weighted kPluralDeterminers[] = {{"some", 4}, {"these", 2}, {"those", 2}, {"many", 1}, {"several", 1}};
constexpr const char* kNumerals[] = {"two", "three", "four", "five", "six"};
constexpr const char* kDegreeAdverbs[] = {"very", "quite", "rather", "really", "extremely"};
constexpr const char* kPrepositions[] = {"in", "on", "near", "under", "behind", "beside", "above",
                                         "inside", "outside", "across", "around", "through",
                                         "over", "toward", "along", "with", "without", "from"};
constexpr const char* kClauseConjunctions[] = {"and", "and", "but"};
constexpr const char* kSubordinators[] = {"because", "while", "after", "before", "when", "although"};

// Prepositions that may take a person or an animal ("with the dog").
bool animate_object_ok(const std::string& p) {
  return p == "with" || p == "without" || p == "near" || p == "behind" || p == "beside" ||
         p == "from" || p == "toward";
}

enum Frame { kIntransitiveFrame, kAnimateFrame, kThingFrame, kClausalFrame };
constexpr unsigned kFrameClass[] = {kIntransitive, kTransitiveAnimate, kTransitiveThing, kClausal};

struct NounPhrase {
  int head = -1;            // the head noun's word index
  bool plural = false;
  Span span;                // the whole phrase
  std::vector<int> nouns;   // lexicon indices of its head nouns (two when coordinated)
};

// The word that fills a subject or object slot from outside the verb phrase:
// a relative pronoun standing for its antecedent.
struct Gap {
  int word;               // the pronoun, which depends on the verb
  const NounPhrase* np;   // the antecedent: agreement and the role's span
};

}  // namespace

// Draws one document; all its randomness comes from the stream (seed, index).
class Grammar::Writer {
 public:
  Writer(const Grammar& g, uint64_t index) : g_(g), c_(g.config_), lex_(g.lexicon_), rng_(g.seed_, index) {
    cast_animate_ = draw_cast(g.animate_, c_.cast_animate);
    cast_things_ = draw_cast(g.things_, c_.cast_things);
  }

  Document document() {
    Document doc;
    int n = c_.min_sentences + rng_.below(c_.max_sentences - c_.min_sentences + 1);
    for (int i = 0; i < n; ++i) doc.sentences.push_back(sentence());
    return doc;
  }

 private:
  // ---- word choice ----

  int draw(const Pool& pool) {
    double x = rng_.uniform32() * pool.cumulative.back();
    size_t i = std::upper_bound(pool.cumulative.begin(), pool.cumulative.end(), x) - pool.cumulative.begin();
    return pool.items[std::min(i, pool.items.size() - 1)];
  }

  std::vector<int> draw_cast(const Pool& pool, int size) {
    std::vector<int> cast;
    size_t want = std::min(static_cast<size_t>(size), pool.items.size());
    for (int tries = 0; cast.size() < want && tries < 100 * size; ++tries) {
      int n = draw(pool);
      if (std::find(cast.begin(), cast.end(), n) == cast.end()) cast.push_back(n);
    }
    return cast;
  }

  // A noun of the kind, not one of `exclude` (so an agent does not act on
  // itself): mostly from the document's cast, so entities recur.
  int draw_noun(NounKind kind, const std::vector<int>& exclude) {
    bool animate = kind == NounKind::Animate;
    const Pool& pool = animate ? g_.animate_ : g_.things_;
    const std::vector<int>& cast = animate ? cast_animate_ : cast_things_;
    auto allowed = [&](int n) { return std::find(exclude.begin(), exclude.end(), n) == exclude.end(); };
    int n = -1;
    for (int tries = 0; tries < 32 && (n < 0 || !allowed(n)); ++tries)
      n = !cast.empty() && rng_.chance(c_.p_cast) ? cast[rng_.below(cast.size())] : draw(pool);
    if (allowed(n)) return n;
    for (int m : pool.items)  // a tiny lexicon: take the first noun left
      if (allowed(m)) return m;
    return n;
  }

  Frame draw_frame(int depth) {
    double w[] = {c_.w_intransitive, c_.w_transitive_animate, c_.w_transitive_thing,
                  depth < c_.max_depth ? c_.w_clausal : 0.0};
    double x = rng_.uniform32() * (w[0] + w[1] + w[2] + w[3]);
    Frame last = kIntransitiveFrame;  // validate() makes one of the first three positive
    for (int f = 0; f < 4; ++f) {
      if (w[f] <= 0) continue;
      last = static_cast<Frame>(f);
      if (x < w[f]) return last;
      x -= w[f];
    }
    return last;  // x rounded past the end
  }

  const Verb& draw_verb(Frame f) { return lex_.verbs[draw(g_.verbs_[f])]; }

  // ---- the builder ----

  void open(const char* label) {
    int n = static_cast<int>(s_.words.size());
    s_.tree.push_back({label, {n, n}, open_.empty() ? -1 : open_.back()});
    open_.push_back(static_cast<int>(s_.tree.size()) - 1);
  }

  Span close() {
    Constituent& c = s_.tree[open_.back()];
    open_.pop_back();
    c.span.end = static_cast<int>(s_.words.size());
    ORDO_ASSERT(c.span.start < c.span.end);
    return c.span;
  }

  int word(const std::string& w, const char* tag) {
    s_.words.push_back(w);
    s_.tags.push_back(tag);
    s_.arcs.push_back({-2, ""});  // -2: not attached yet
    return static_cast<int>(s_.words.size()) - 1;
  }

  void attach(int dependent, int head, const char* label) { s_.arcs[dependent] = {head, label}; }

  // ---- sentences ----

  Sentence sentence() {
    for (int attempt = 0; attempt < 1000; ++attempt) {
      s_ = Sentence();
      open_.clear();
      draw_sentence();
      if (static_cast<int>(s_.words.size()) <= c_.max_words) return finish();
    }
    throw Error("synthetic grammar: no sentence of at most max_words = " + std::to_string(c_.max_words) +
                " words in 1000 draws; raise max_words or lower the embedding probabilities");
  }

  void draw_sentence() {
    open("S");
    int verb;
    if (rng_.chance(c_.p_coordinate)) {
      open("S");
      verb = clause(ClauseKind::Main, 0);
      close();
      int cc = word(pick(rng_, kClauseConjunctions), "CC");
      open("S");
      int second = clause(ClauseKind::Coordinate, 0);
      close();
      attach(cc, second, "cc");
      attach(second, verb, "conj");
    } else {
      verb = clause(ClauseKind::Main, 0);
    }
    attach(word(".", "."), verb, "punct");
    attach(verb, -1, "root");
    close();
  }

  Sentence finish() {
    for (const Arc& a : s_.arcs) ORDO_ASSERT(a.head != -2);
    std::sort(s_.clauses.begin(), s_.clauses.end(),
              [](const Clause& a, const Clause& b) { return a.verb < b.verb; });
    return std::move(s_);
  }

  // ---- clauses ----

  // Subject NP and verb phrase into the open S; returns the verb.
  int clause(ClauseKind kind, int depth) {
    Frame frame = draw_frame(depth);
    bool passive = is_transitive(frame) && rng_.chance(c_.p_passive);
    NounKind subject_kind = passive && frame == kThingFrame ? NounKind::Thing : NounKind::Animate;
    NounPhrase subject = noun_phrase(subject_kind, depth, {});
    return verb_phrase(kind, depth, frame, passive, subject, subject.head, nullptr);
  }

  static bool is_transitive(Frame f) { return f == kAnimateFrame || f == kThingFrame; }

  // [ADVP] VP into the open S. `subject` agrees with the verb and fills its
  // role; `subject_word` is the word that depends on the verb as its subject
  // (the subject's head, or a relative pronoun). With an object gap the
  // verb's object is a relative pronoun and no object NP is drawn.
  int verb_phrase(ClauseKind kind, int depth, Frame frame, bool passive, const NounPhrase& subject,
                  int subject_word, const Gap* object_gap) {
    const Verb& v = draw_verb(frame);
    Tense tense = rng_.chance(c_.p_past) ? Tense::Past : Tense::Present;
    bool adverb = rng_.chance(c_.p_adverb);
    // Before the verb never in a passive ("the cat quickly was chased" is not
    // English), always with a complement clause (after it, the adverb would
    // seem to belong to the complement).
    bool adverb_first = adverb && !passive && (frame == kClausalFrame || rng_.chance(c_.p_adverb_first));
    int adverb_word = adverb_first ? adverb_phrase() : -1;

    open("VP");
    int verb;
    if (passive) {
      int aux = word(be(tense, subject.plural), be_tag(tense, subject.plural));
      open("VP");
      verb = word(v.participle, "VBN");
      attach(aux, verb, "aux:pass");
    } else {
      verb = word(tense == Tense::Past ? v.past : subject.plural ? v.base : v.third,
                  tense == Tense::Past ? "VBD" : subject.plural ? "VBP" : "VBZ");
    }
    attach(subject_word, verb, passive ? "nsubj:pass" : "nsubj");

    Clause clause{verb, kind, tense, passive, std::nullopt, std::nullopt};
    NounKind object_kind = frame == kThingFrame ? NounKind::Thing : NounKind::Animate;
    // An animate patient differs from an animate agent (no "the dog chased the dog").
    std::vector<int> not_agent = object_kind == NounKind::Animate ? subject.nouns : std::vector<int>{};
    if (passive) {
      clause.patient = subject.span;
      if (rng_.chance(c_.p_by_agent)) clause.agent = by_agent(verb, depth, not_agent);
    } else {
      clause.agent = subject.span;
      if (object_gap) {
        attach(object_gap->word, verb, "obj");
        clause.patient = object_gap->np->span;
      } else if (is_transitive(frame)) {
        NounPhrase object = noun_phrase(object_kind, depth, not_agent);
        attach(object.head, verb, "obj");
        clause.patient = object.span;
      }
    }
    if (frame != kClausalFrame && depth < c_.max_depth && rng_.chance(c_.p_vp_pp))
      attach(prepositional_phrase(depth + 1), verb, "obl");
    if (frame == kClausalFrame) embedded_clause(verb, "that", "ccomp", ClauseKind::Complement, depth);
    if (adverb && !adverb_first) adverb_word = adverb_phrase();
    if (adverb) attach(adverb_word, verb, "advmod");
    bool top = kind == ClauseKind::Main || kind == ClauseKind::Coordinate;
    if (top && depth < c_.max_depth && rng_.chance(c_.p_adverbial))
      embedded_clause(verb, pick(rng_, kSubordinators), "advcl", ClauseKind::Adverbial, depth);
    if (passive) close();
    close();
    s_.clauses.push_back(clause);
    return verb;
  }

  static const char* be(Tense t, bool plural) {
    return t == Tense::Past ? (plural ? "were" : "was") : (plural ? "are" : "is");
  }
  static const char* be_tag(Tense t, bool plural) {
    return t == Tense::Past ? "VBD" : (plural ? "VBP" : "VBZ");
  }

  // "by NP" in a passive; returns the agent's span.
  Span by_agent(int verb, int depth, const std::vector<int>& exclude) {
    open("PP");
    int by = word("by", "IN");
    NounPhrase agent = noun_phrase(NounKind::Animate, depth, exclude);
    attach(by, agent.head, "case");
    attach(agent.head, verb, "obl:agent");
    close();
    return agent.span;
  }

  // SBAR -> IN S for complements ("that") and adverbial clauses ("because").
  void embedded_clause(int verb, const char* marker, const char* relation, ClauseKind kind, int depth) {
    open("SBAR");
    int mark = word(marker, "IN");
    open("S");
    int inner = clause(kind, depth + 1);
    close();
    close();
    attach(mark, inner, "mark");
    attach(inner, verb, relation);
  }

  int adverb_phrase() {
    open("ADVP");
    int w = word(lex_.adverbs[draw(g_.adverbs_)], "RB");
    close();
    return w;
  }

  // ---- noun phrases ----

  NounPhrase noun_phrase(NounKind kind, int depth, const std::vector<int>& exclude) {
    if (depth < c_.max_depth && rng_.chance(c_.p_np_coordinate)) return coordinated(kind, depth, exclude);
    return simple_np(kind, depth, exclude);
  }

  // "the dog and the cat": headed by the first conjunct, plural.
  NounPhrase coordinated(NounKind kind, int depth, const std::vector<int>& exclude) {
    open("NP");
    NounPhrase first = simple_np(kind, depth + 1, exclude);
    std::vector<int> both = exclude;
    both.insert(both.end(), first.nouns.begin(), first.nouns.end());
    int cc = word("and", "CC");
    NounPhrase second = simple_np(kind, depth + 1, both);
    attach(cc, second.head, "cc");
    attach(second.head, first.head, "conj");
    first.span = close();
    first.plural = true;
    first.nouns.insert(first.nouns.end(), second.nouns.begin(), second.nouns.end());
    return first;
  }

  // A base NP, perhaps followed by a relative clause or a PP.
  NounPhrase simple_np(NounKind kind, int depth, const std::vector<int>& exclude) {
    bool embed = depth < c_.max_depth;
    bool relative = embed && rng_.chance(c_.p_relative);
    bool pp = embed && !relative && rng_.chance(c_.p_np_pp);
    if (relative || pp) open("NP");
    NounPhrase np = base_np(kind, exclude);
    if (relative) relative_clause(np, kind, depth + 1);
    if (pp) attach(prepositional_phrase(depth + 1), np.head, "nmod");
    if (relative || pp) np.span = close();
    return np;
  }

  // A noun's own adjective (Config::p_collocation): fixed by the lexicon,
  // nouns spread evenly over the adjectives by a multiplicative hash.
  size_t collocate(int noun) const {
    return (static_cast<uint64_t>(noun) * 2654435761u) % lex_.adjectives.size();
  }

  // DT|CD [ADJP|JJ]* N.
  NounPhrase base_np(NounKind kind, const std::vector<int>& exclude) {
    int noun = draw_noun(kind, exclude);
    bool plural = rng_.chance(c_.p_plural);
    std::vector<const std::string*> adjectives;
    while (adjectives.size() < 2 && rng_.chance(c_.p_adjective)) {
      const std::string* a = &lex_.adjectives[draw(g_.adjectives_)];
      if (adjectives.empty() || *adjectives[0] != *a) adjectives.push_back(a);
    }
    if (!adjectives.empty() && c_.p_collocation > 0 && rng_.chance(c_.p_collocation)) {
      const std::string* own = &lex_.adjectives[collocate(noun)];
      if (adjectives.size() == 2 && *adjectives[0] == *own) std::swap(adjectives[0], adjectives[1]);
      else adjectives.back() = own;  // the one next to the noun
    }
    const char* degree = !adjectives.empty() && rng_.chance(c_.p_degree) ? pick(rng_, kDegreeAdverbs) : nullptr;
    const std::string& noun_word = plural ? lex_.nouns[noun].plural : lex_.nouns[noun].singular;
    // The determiner, which agrees in number and, as "a"/"an", in sound with the next word.
    const std::string& next = degree ? std::string(degree) : adjectives.empty() ? noun_word : *adjectives[0];
    std::string determiner = "the";
    bool numeral = false;
    if (!rng_.chance(c_.p_definite)) {
      if (!plural)
        determiner = pick(rng_, kSingularDeterminers);
      else if ((numeral = rng_.chance(c_.p_numeral)))
        determiner = pick(rng_, kNumerals);
      else
        determiner = pick(rng_, kPluralDeterminers);
      if (determiner == "a" && takes_an(next)) determiner = "an";
    }

    NounPhrase np;
    open("NP");
    int det = word(determiner, numeral ? "CD" : "DT");
    std::vector<int> adjective_words;
    for (size_t i = 0; i < adjectives.size(); ++i) {
      if (i == 0 && degree) {
        open("ADJP");
        int d = word(degree, "RB");
        adjective_words.push_back(word(*adjectives[i], "JJ"));
        attach(d, adjective_words.back(), "advmod");
        close();
      } else {
        adjective_words.push_back(word(*adjectives[i], "JJ"));
      }
    }
    np.head = word(noun_word, plural ? "NNS" : "NN");
    attach(det, np.head, numeral ? "nummod" : "det");
    for (int a : adjective_words) attach(a, np.head, "amod");
    np.span = close();
    np.plural = plural;
    np.nouns = {noun};
    return np;
  }

  // "that chased the cat" (subject gap), "that the cat chased" (object gap),
  // "that was chased by the cat" (passive subject gap) after `antecedent`,
  // whose span is the gap's role in the relative clause.
  void relative_clause(const NounPhrase& antecedent, NounKind kind, int depth) {
    bool animate = kind == NounKind::Animate;
    bool object_gap = animate ? rng_.chance(c_.p_object_relative) : !rng_.chance(c_.p_passive);
    const char* pronoun = rng_.chance(c_.p_that) ? "that" : animate ? "who" : "which";
    open("SBAR");
    open("WHNP");
    int rel = word(pronoun, std::string(pronoun) == "who" ? "WP" : "WDT");
    close();
    open("S");
    int verb;
    Gap gap{rel, &antecedent};
    if (object_gap) {
      NounPhrase subject = noun_phrase(NounKind::Animate, depth, animate ? antecedent.nouns : std::vector<int>{});
      verb = verb_phrase(ClauseKind::Relative, depth, animate ? kAnimateFrame : kThingFrame, false, subject,
                         subject.head, &gap);
    } else {
      // A passive's subject is its patient, so an animate antecedent is the
      // subject of a passive only with an animate-object verb.
      Frame frame = animate ? draw_frame(depth) : kThingFrame;
      bool passive = !animate || (frame == kAnimateFrame && rng_.chance(c_.p_passive));
      verb = verb_phrase(ClauseKind::Relative, depth, frame, passive, antecedent, rel, nullptr);
    }
    close();
    close();
    attach(verb, antecedent.head, "acl:relcl");
  }

  // PP -> IN NP; returns the NP's head, which the caller attaches (obl or nmod).
  int prepositional_phrase(int depth) {
    open("PP");
    std::string preposition = pick(rng_, kPrepositions);
    int p = word(preposition, "IN");
    bool animate = animate_object_ok(preposition) && rng_.chance(0.3);
    NounPhrase object = simple_np(animate ? NounKind::Animate : NounKind::Thing, depth, {});
    attach(p, object.head, "case");
    close();
    return object.head;
  }

  const Grammar& g_;
  const Config& c_;
  const Lexicon& lex_;
  CounterRng rng_;
  std::vector<int> cast_animate_, cast_things_;
  Sentence s_;
  std::vector<int> open_;  // phrases opened and not yet closed
};

namespace {

// Zipf-like weights by frequency rank: 1 / (rank + shift).
void add_weights(std::vector<int> items, double shift, std::vector<int>& out_items,
                 std::vector<double>& cumulative) {
  double total = 0;
  for (size_t r = 0; r < items.size(); ++r) {
    total += 1.0 / (static_cast<double>(r) + shift);
    cumulative.push_back(total);
  }
  out_items = std::move(items);
}

std::vector<int> iota(size_t n) {
  std::vector<int> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int>(i);
  return v;
}

}  // namespace

Grammar::Grammar(Config config, uint64_t seed, const Lexicon& lexicon)
    : config_(config), seed_(seed), lexicon_(lexicon) {
  validate(config_);
  std::vector<int> animate, things, by_class[4];
  for (size_t i = 0; i < lexicon_.nouns.size(); ++i)
    (lexicon_.nouns[i].kind == NounKind::Animate ? animate : things).push_back(static_cast<int>(i));
  for (size_t i = 0; i < lexicon_.verbs.size(); ++i)
    for (int f = 0; f < 4; ++f)
      if (lexicon_.verbs[i].classes & kFrameClass[f]) by_class[f].push_back(static_cast<int>(i));

  const Config& c = config_;
  auto need = [](bool needed, size_t have, const char* what) {
    ORDO_CHECK(!needed || have > 0, "synthetic grammar: the lexicon has no ", what,
               " but the config asks for them");
  };
  ORDO_CHECK(animate.size() >= 2, "synthetic grammar: the lexicon needs at least two animate nouns "
             "(an agent and a different patient), it has ", animate.size());
  need(c.w_transitive_thing > 0 || c.p_vp_pp > 0 || c.p_np_pp > 0, things.size(), "thing nouns");
  need(c.p_adjective > 0, lexicon_.adjectives.size(), "adjectives");
  need(c.p_adverb > 0, lexicon_.adverbs.size(), "adverbs");
  const double weights[] = {c.w_intransitive, c.w_transitive_animate, c.w_transitive_thing, c.w_clausal};
  const char* names[] = {"intransitive verbs", "verbs with animate objects", "verbs with thing objects",
                         "verbs with clausal complements"};
  for (int f = 0; f < 4; ++f) need(weights[f] > 0, by_class[f].size(), names[f]);
  // Object relatives use a transitive verb of the antecedent's kind whatever the weights.
  need(c.p_relative > 0 && c.p_object_relative > 0, by_class[kAnimateFrame].size(), names[kAnimateFrame]);
  need(c.p_relative > 0 && !things.empty(), by_class[kThingFrame].size(), names[kThingFrame]);

  add_weights(animate, c.zipf_shift, animate_.items, animate_.cumulative);
  add_weights(things, c.zipf_shift, things_.items, things_.cumulative);
  add_weights(iota(lexicon_.adjectives.size()), c.zipf_shift, adjectives_.items, adjectives_.cumulative);
  add_weights(iota(lexicon_.adverbs.size()), c.zipf_shift, adverbs_.items, adverbs_.cumulative);
  for (int f = 0; f < 4; ++f) add_weights(by_class[f], c.zipf_shift, verbs_[f].items, verbs_[f].cumulative);
}

Document Grammar::next_document() { return document(next_++); }

Document Grammar::document(uint64_t index) const { return Writer(*this, index).document(); }

}  // namespace ordo::synth
