// The synthetic language: its lexicon, its grammar and the consistency of
// every annotation it writes. Files and the command line: test_synth_io.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <regex>
#include <set>

#include "base/error.h"
#include "synth/synth.h"

using namespace ordo::synth;

namespace {

std::vector<Sentence> sample(int n, uint64_t seed, const Config& config = Config(),
                             const Lexicon& lexicon = default_lexicon()) {
  Grammar grammar(config, seed, lexicon);
  std::vector<Sentence> out;
  while (static_cast<int>(out.size()) < n)
    for (Sentence& s : grammar.next_document().sentences) out.push_back(std::move(s));
  out.resize(n);
  return out;
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::vector<int> dependents(const Sentence& s, int head, const std::string& label) {
  std::vector<int> out;
  for (size_t i = 0; i < s.arcs.size(); ++i)
    if (s.arcs[i].head == head && s.arcs[i].label == label) out.push_back(static_cast<int>(i));
  return out;
}

// Which verb a form belongs to; the lexicon generator keeps forms unambiguous.
std::map<std::string, const Verb*> verb_forms(const Lexicon& lex) {
  std::map<std::string, const Verb*> forms;
  for (const Verb& v : lex.verbs)
    for (const std::string* f : {&v.base, &v.third, &v.past, &v.participle}) forms[*f] = &v;
  return forms;
}

// The referent of a verb's subject: its nsubj, or for a relative pronoun the
// noun the relative clause modifies.
int subject_referent(const Sentence& s, int verb, bool& relative) {
  std::vector<int> subjects = dependents(s, verb, "nsubj");
  for (int w : dependents(s, verb, "nsubj:pass")) subjects.push_back(w);
  REQUIRE(subjects.size() == 1);
  int w = subjects[0];
  relative = s.tags[w] == "WDT" || s.tags[w] == "WP";
  if (relative) {
    REQUIRE(s.arcs[verb].label == "acl:relcl");
    return s.arcs[verb].head;
  }
  return w;
}

// A coordinated subject is plural; a relative clause on one conjunct
// ("the dog that runs and the cats") agrees with that conjunct alone.
bool plural_subject(const Sentence& s, int head, bool relative) {
  return s.tags[head] == "NNS" || (!relative && !dependents(s, head, "conj").empty());
}

Config forced() {
  // Every optional construction off: a test switches on the one it derives.
  Config c;
  c.min_sentences = c.max_sentences = 1;
  c.p_coordinate = c.p_adverbial = c.p_passive = c.p_adverb = c.p_vp_pp = 0;
  c.p_plural = c.p_numeral = c.p_adjective = c.p_degree = c.p_np_pp = c.p_relative = 0;
  c.p_np_coordinate = c.p_object_relative = 0;
  c.p_definite = c.p_that = c.p_past = 1;
  c.w_intransitive = c.w_transitive_thing = c.w_clausal = 0;
  c.w_transitive_animate = 1;
  c.max_depth = 1;
  return c;
}

Lexicon tiny() {
  Lexicon lex;
  lex.nouns = {{"dog", "dogs", NounKind::Animate}, {"cat", "cats", NounKind::Animate}};
  lex.verbs = {{"chase", "chases", "chased", "chased", kTransitiveAnimate}};
  return lex;
}

std::vector<std::string> heads_and_labels(const Sentence& s) {
  std::vector<std::string> out;
  for (const Arc& a : s.arcs) out.push_back(std::to_string(a.head) + ":" + a.label);
  return out;
}

}  // namespace

TEST_CASE("the lexicon has thousands of clean words and the irregular forms English has", "[synth]") {
  const Lexicon& lex = default_lexicon();
  size_t animate = std::count_if(lex.nouns.begin(), lex.nouns.end(),
                                 [](const Noun& n) { return n.kind == NounKind::Animate; });
  CHECK(animate >= 400);
  CHECK(lex.nouns.size() - animate >= 400);
  CHECK(lex.verbs.size() >= 800);
  CHECK(lex.adjectives.size() >= 400);
  CHECK(lex.adverbs.size() >= 100);

  std::regex plain("[a-z]{2,}");
  std::set<std::string> nouns;
  for (const Noun& n : lex.nouns) {
    CHECK(std::regex_match(n.singular, plain));
    CHECK(std::regex_match(n.plural, plain));
    CHECK(nouns.insert(n.singular).second);
  }
  for (const Verb& v : lex.verbs)
    for (const std::string* f : {&v.base, &v.third, &v.past, &v.participle}) CHECK(std::regex_match(*f, plain));
  for (const auto& list : {lex.adjectives, lex.adverbs})
    for (const std::string& w : list) CHECK(std::regex_match(w, plain));

  auto noun = [&](const std::string& s) {
    for (const Noun& n : lex.nouns)
      if (n.singular == s) return n;
    FAIL("no noun " << s);
    return Noun{};
  };
  CHECK(noun("child").plural == "children");
  CHECK(noun("mouse").plural == "mice");
  CHECK(noun("woman").plural == "women");
  CHECK(noun("wolf").plural == "wolves");
  CHECK(noun("person").plural == "people");
  CHECK(noun("sheep").plural == "sheep");
  CHECK(noun("box").plural == "boxes");
  CHECK(noun("baby").plural == "babies");
  CHECK(noun("dog").kind == NounKind::Animate);
  CHECK(noun("box").kind == NounKind::Thing);

  auto forms = verb_forms(lex);
  auto verb = [&](const std::string& base) {
    REQUIRE(forms.count(base));
    const Verb& v = *forms.at(base);
    return v.third + " " + v.past + " " + v.participle;
  };
  CHECK(verb("run") == "runs ran run");
  CHECK(verb("go") == "goes went gone");
  CHECK(verb("see") == "sees saw seen");
  CHECK(verb("eat") == "eats ate eaten");
  CHECK(verb("chase") == "chases chased chased");
  CHECK(verb("stop") == "stops stopped stopped");
  CHECK(verb("carry") == "carries carried carried");
  CHECK(verb("catch") == "catches caught caught");
  CHECK((forms.at("chase")->classes & kTransitiveAnimate) != 0);
  CHECK((forms.at("sleep")->classes & kIntransitive) != 0);
  CHECK((forms.at("say")->classes & kClausal) != 0);
}

TEST_CASE("a and an follow the sound of the next word", "[synth]") {
  for (const char* w : {"apple", "elephant", "hour", "honest", "umbrella", "old", "heir"}) CHECK(takes_an(w));
  for (const char* w : {"dog", "unit", "user", "european", "one", "house", "utensil"}) CHECK_FALSE(takes_an(w));
}

TEST_CASE("hand-worked: subject relatives on both arguments", "[synth]") {
  // S -> NP(NP SBAR) VP(V NP(NP SBAR)) . with two nouns: the agent and the
  // patient of every clause differ, so the first noun fixes the rest.
  Config c = forced();
  c.p_relative = 1;
  Sentence s = sample(1, 7, c, tiny())[0];
  bool dog_first = s.words[1] == "dog";
  std::string x = dog_first ? "dog" : "cat", y = dog_first ? "cat" : "dog";
  CHECK(join(s.words) == "the " + x + " that chased the " + y + " chased the " + y + " that chased the " + x + " .");
  CHECK(join(s.tags) == "DT NN WDT VBD DT NN VBD DT NN WDT VBD DT NN .");
  CHECK(bracketed(s) == "(S (NP (NP (DT the) (NN " + x + ")) (SBAR (WHNP (WDT that)) (S (VP (VBD chased) "
                        "(NP (DT the) (NN " + y + "))))))"
                        " (VP (VBD chased) (NP (NP (DT the) (NN " + y + ")) (SBAR (WHNP (WDT that)) (S (VP "
                        "(VBD chased) (NP (DT the) (NN " + x + "))))))) (. .))");
  CHECK(heads_and_labels(s) == std::vector<std::string>{
                                   "1:det", "6:nsubj", "3:nsubj", "1:acl:relcl", "5:det", "3:obj", "-1:root",
                                   "8:det", "6:obj", "10:nsubj", "8:acl:relcl", "12:det", "10:obj", "6:punct"});
  REQUIRE(s.clauses.size() == 3);
  // "x that chased y": the antecedent is the relative clause's agent.
  CHECK(s.clauses[0].verb == 3);
  CHECK(s.clauses[0].kind == ClauseKind::Relative);
  CHECK(s.clauses[0].agent == Span{0, 2});
  CHECK(s.clauses[0].patient == Span{4, 6});
  CHECK(s.clauses[1].verb == 6);
  CHECK(s.clauses[1].kind == ClauseKind::Main);
  CHECK(s.clauses[1].agent == Span{0, 6});
  CHECK(s.clauses[1].patient == Span{7, 13});
  CHECK(s.clauses[2].verb == 10);
  CHECK(s.clauses[2].agent == Span{7, 9});
  CHECK(s.clauses[2].patient == Span{11, 13});
  for (const Clause& k : s.clauses) CHECK_FALSE(k.passive);
}

TEST_CASE("hand-worked: an object relative puts the antecedent in the patient role", "[synth]") {
  Config c = forced();
  c.w_transitive_animate = 0;
  c.w_intransitive = 1;
  c.p_relative = c.p_object_relative = 1;
  Lexicon lex = tiny();
  lex.verbs.push_back({"sleep", "sleeps", "slept", "slept", kIntransitive});
  Sentence s = sample(1, 3, c, lex)[0];
  bool dog_first = s.words[1] == "dog";
  std::string x = dog_first ? "dog" : "cat", y = dog_first ? "cat" : "dog";
  CHECK(join(s.words) == "the " + x + " that the " + y + " chased slept .");
  CHECK(bracketed(s) == "(S (NP (NP (DT the) (NN " + x + ")) (SBAR (WHNP (WDT that)) (S (NP (DT the) (NN " + y +
                            ")) (VP (VBD chased))))) (VP (VBD slept)) (. .))");
  CHECK(heads_and_labels(s) ==
        std::vector<std::string>{"1:det", "6:nsubj", "5:obj", "4:det", "5:nsubj", "1:acl:relcl", "-1:root", "6:punct"});
  REQUIRE(s.clauses.size() == 2);
  CHECK(s.clauses[0].agent == Span{3, 5});    // "the y" chased ...
  CHECK(s.clauses[0].patient == Span{0, 2});  // ... "the x"
  CHECK(s.clauses[1].agent == Span{0, 6});
  CHECK_FALSE(s.clauses[1].patient);
}

TEST_CASE("hand-worked: a passive names the semantic roles, not the positions", "[synth]") {
  Config c = forced();
  c.p_passive = c.p_by_agent = 1;
  c.p_past = 0;
  Sentence s = sample(1, 11, c, tiny())[0];
  bool dog_first = s.words[1] == "dog";
  std::string x = dog_first ? "dog" : "cat", y = dog_first ? "cat" : "dog";
  CHECK(join(s.words) == "the " + x + " is chased by the " + y + " .");
  CHECK(bracketed(s) == "(S (NP (DT the) (NN " + x + ")) (VP (VBZ is) (VP (VBN chased) (PP (IN by) (NP (DT the) (NN " +
                            y + "))))) (. .))");
  CHECK(heads_and_labels(s) == std::vector<std::string>{"1:det", "3:nsubj:pass", "3:aux:pass", "-1:root", "6:case",
                                                        "6:det", "3:obl:agent", "3:punct"});
  REQUIRE(s.clauses.size() == 1);
  CHECK(s.clauses[0].passive);
  CHECK(s.clauses[0].tense == Tense::Present);
  CHECK(s.clauses[0].agent == Span{5, 7});
  CHECK(s.clauses[0].patient == Span{0, 2});
}

TEST_CASE("hand-worked: coordinated subjects are plural and clauses coordinate", "[synth]") {
  Config c = forced();
  c.p_np_coordinate = c.p_coordinate = 1;
  c.w_transitive_animate = 0;
  c.w_intransitive = 1;
  c.p_past = 0;
  Lexicon lex = tiny();
  lex.verbs = {{"sleep", "sleeps", "slept", "slept", kIntransitive}};
  Sentence s = sample(1, 5, c, lex)[0];
  // "the x and the y sleep and|but the x' and the y' sleep ."
  REQUIRE(s.words.size() == 14);
  CHECK(join(s.tags) == "DT NN CC DT NN VBP CC DT NN CC DT NN VBP .");
  CHECK(s.words[1] != s.words[4]);
  CHECK(s.words[8] != s.words[11]);
  CHECK((s.words[6] == "and" || s.words[6] == "but"));
  auto np = [&](int a, int b) {
    return "(NP (NP (DT the) (NN " + s.words[a] + ")) (CC and) (NP (DT the) (NN " + s.words[b] + ")))";
  };
  CHECK(bracketed(s) == "(S (S " + np(1, 4) + " (VP (VBP sleep))) (CC " + s.words[6] + ") (S " + np(8, 11) +
                            " (VP (VBP sleep))) (. .))");
  CHECK(heads_and_labels(s) == std::vector<std::string>{"1:det", "5:nsubj", "4:cc", "4:det", "1:conj", "-1:root",
                                                        "12:cc", "8:det", "12:nsubj", "11:cc", "11:det", "8:conj",
                                                        "5:conj", "5:punct"});
  REQUIRE(s.clauses.size() == 2);
  CHECK(s.clauses[0].kind == ClauseKind::Main);
  CHECK(s.clauses[0].agent == Span{0, 5});
  CHECK(s.clauses[1].kind == ClauseKind::Coordinate);
  CHECK(s.clauses[1].agent == Span{7, 12});
}

TEST_CASE("the same seed gives the same documents, another seed others", "[synth]") {
  Grammar a(Config(), 42), b(Config(), 42), c(Config(), 43);
  std::vector<Document> docs;
  for (int i = 0; i < 20; ++i) {
    docs.push_back(a.next_document());
    Document other = b.next_document();
    REQUIRE(docs.back().sentences == other.sentences);
  }
  int differ = 0;
  for (int i = 0; i < 20; ++i) differ += !(c.next_document().sentences == docs[i].sentences);
  CHECK(differ == 20);
  // Random access: document i on its own is the i-th in turn.
  CHECK(a.document(13).sentences == docs[13].sentences);
  CHECK(Grammar(Config(), 42).document(0).sentences == docs[0].sentences);
}

// The share of consecutive sentences in a document that have a noun in common.
double shared_noun_rate(const Config& config) {
  Grammar g(config, 5);
  int shared = 0, pairs = 0;
  for (int d = 0; d < 200; ++d) {
    Document doc = g.next_document();
    REQUIRE(static_cast<int>(doc.sentences.size()) >= config.min_sentences);
    REQUIRE(static_cast<int>(doc.sentences.size()) <= config.max_sentences);
    for (size_t i = 1; i < doc.sentences.size(); ++i) {
      const Sentence &a = doc.sentences[i - 1], &b = doc.sentences[i];
      std::set<std::string> nouns;
      for (size_t w = 0; w < a.words.size(); ++w)
        if (a.tags[w].rfind("NN", 0) == 0) nouns.insert(a.words[w]);
      bool any = false;
      for (size_t w = 0; w < b.words.size(); ++w) any |= b.tags[w].rfind("NN", 0) == 0 && nouns.count(b.words[w]);
      shared += any;
      ++pairs;
    }
  }
  return static_cast<double>(shared) / pairs;
}

TEST_CASE("documents have a few sentences and recurring nouns", "[synth]") {
  // Without the cast, a shared noun comes from frequent words alone.
  Config no_cast;
  no_cast.p_cast = 0;
  double with = shared_noun_rate(Config()), without = shared_noun_rate(no_cast);
  INFO("consecutive sentences sharing a noun: " << with << " with the cast, " << without << " without");
  CHECK(with > 2 * without);
  CHECK(with > 0.4);
}

TEST_CASE("every annotation is consistent on a 2000-sentence sample", "[synth]") {
  for (const Sentence& s : sample(2000, 1)) {
    INFO(bracketed(s));
    REQUIRE_NOTHROW(check(s));
    int n = static_cast<int>(s.words.size());
    REQUIRE(n <= Config().max_words);
    REQUIRE(s.words.back() == ".");

    // Phrases nest or are disjoint (no crossing brackets), and the root covers the sentence.
    REQUIRE(s.tree[0].span == Span{0, n});
    for (const Constituent& a : s.tree)
      for (const Constituent& b : s.tree) {
        bool disjoint = a.span.end <= b.span.start || b.span.end <= a.span.start;
        bool nested = (a.span.start <= b.span.start && b.span.end <= a.span.end) ||
                      (b.span.start <= a.span.start && a.span.end <= b.span.end);
        REQUIRE((disjoint || nested));
      }

    // One head per word, one root, and every word reaches the root: a tree.
    REQUIRE(std::count_if(s.arcs.begin(), s.arcs.end(), [](const Arc& a) { return a.head == -1; }) == 1);
    for (int i = 0; i < n; ++i) {
      int w = i, steps = 0;
      while (w != -1 && steps++ <= n) w = s.arcs[w].head;
      REQUIRE(w == -1);
    }
    // Projective: the words between a head and its dependent descend from the head.
    auto descends = [&](int w, int head) {
      for (; w != -1; w = s.arcs[w].head)
        if (w == head) return true;
      return false;
    };
    for (int d = 0; d < n; ++d) {
      int h = s.arcs[d].head;
      if (h < 0) continue;
      for (int w = std::min(h, d) + 1; w < std::max(h, d); ++w) REQUIRE(descends(w, h));
    }
    // The tree and the arcs agree: each phrase has exactly one word whose head lies outside it.
    for (const Constituent& c : s.tree) {
      int heads = 0;
      for (int w = c.span.start; w < c.span.end; ++w)
        heads += s.arcs[w].head < c.span.start || s.arcs[w].head >= c.span.end;
      INFO(c.label << " [" << c.span.start << ", " << c.span.end << ")");
      REQUIRE(heads == 1);
    }

    // Clauses: a verb each, roles are NPs, and a transitive clause's roles do not overlap.
    for (const Clause& k : s.clauses) {
      REQUIRE(s.tags[k.verb].rfind("VB", 0) == 0);
      for (const auto& role : {k.agent, k.patient}) {
        if (!role) continue;
        REQUIRE(std::any_of(s.tree.begin(), s.tree.end(),
                            [&](const Constituent& c) { return c.label == "NP" && c.span == *role; }));
      }
      if (k.agent && k.patient)
        REQUIRE((k.agent->end <= k.patient->start || k.patient->end <= k.agent->start));
    }
  }
}

TEST_CASE("subjects agree with their verbs, determiners with their nouns", "[synth]") {
  const Lexicon& lex = default_lexicon();
  auto forms = verb_forms(lex);
  int present = 0, past = 0, passives = 0, relative_subjects = 0;
  for (const Sentence& s : sample(2000, 2)) {
    INFO(bracketed(s));
    for (const Clause& k : s.clauses) {
      const std::string& word = s.words[k.verb];
      REQUIRE(forms.count(word));
      const Verb& v = *forms.at(word);
      bool relative = false;
      int subject = subject_referent(s, k.verb, relative);
      relative_subjects += relative;
      bool plural = plural_subject(s, subject, relative);
      if (k.passive) {
        ++passives;
        CHECK(word == v.participle);
        std::vector<int> aux = dependents(s, k.verb, "aux:pass");
        REQUIRE(aux.size() == 1);
        const char* be = k.tense == Tense::Past ? (plural ? "were" : "was") : (plural ? "are" : "is");
        CHECK(s.words[aux[0]] == be);
      } else if (k.tense == Tense::Present) {
        ++present;
        CHECK(word == (plural ? v.base : v.third));
        CHECK(s.tags[k.verb] == (plural ? "VBP" : "VBZ"));
      } else {
        ++past;
        CHECK(word == v.past);
        CHECK(s.tags[k.verb] == "VBD");
      }
    }
    for (size_t d = 0; d < s.words.size(); ++d) {
      if (s.arcs[d].label != "det" && s.arcs[d].label != "nummod") continue;
      const std::string& det = s.words[d];
      bool plural_noun = s.tags[s.arcs[d].head] == "NNS";
      if (det == "a" || det == "an" || det == "every" || det == "each" || det == "this")
        CHECK_FALSE(plural_noun);
      if (det == "these" || det == "those" || det == "some" || det == "many" || s.tags[d] == "CD")
        CHECK(plural_noun);
      if (det == "a" || det == "an") CHECK((det == "an") == takes_an(s.words[d + 1]));
    }
  }
  // Each kind of agreement was exercised, relative pronouns as subjects included.
  CHECK(present > 500);
  CHECK(past > 500);
  CHECK(passives > 50);
  CHECK(relative_subjects > 50);
}

TEST_CASE("swapping agent and patient keeps the words and changes the sentence", "[synth]") {
  int swapped = 0;
  for (const Sentence& s : sample(1000, 3)) {
    for (const Clause& k : s.clauses) {
      if (!k.agent || !k.patient) continue;
      std::vector<std::string> words = swap_spans(s.words, *k.agent, *k.patient);
      CHECK(words != s.words);
      std::vector<std::string> a = words, b = s.words;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      CHECK(a == b);
      ++swapped;
    }
  }
  CHECK(swapped > 500);
  CHECK(swap_spans({"a", "b", "c", "d", "e"}, {3, 5}, {0, 1}) == std::vector<std::string>{"d", "e", "b", "c", "a"});
  CHECK_THROWS_AS(swap_spans({"a", "b", "c"}, {0, 2}, {1, 3}), ordo::Error);
}

TEST_CASE("dependency lengths mix short and long arcs", "[synth]") {
  std::map<int, int> lengths;
  std::map<std::string, std::vector<int>> by_label;
  int arcs = 0;
  for (const Sentence& s : sample(2000, 4)) {
    for (size_t d = 0; d < s.arcs.size(); ++d) {
      if (s.arcs[d].head < 0) continue;
      int len = std::abs(s.arcs[d].head - static_cast<int>(d));
      ++lengths[len];
      by_label[s.arcs[d].label].push_back(len);
      ++arcs;
    }
  }
  int shorter = lengths[1] + lengths[2], longer = 0;
  for (const auto& [len, n] : lengths) longer += len >= 5 ? n : 0;
  INFO("arcs " << arcs << ", length 1-2: " << shorter << ", length >= 5: " << longer);
  CHECK(shorter > arcs * 2 / 5);
  CHECK(longer > arcs / 10);
  auto mean = [&](const std::string& label) {
    const auto& v = by_label[label];
    REQUIRE(!v.empty());
    double sum = 0;
    for (int x : v) sum += x;
    return sum / v.size();
  };
  // As in natural text: determiners and adjectives sit next to their nouns;
  // subjects reach across relative clauses, clauses across clauses.
  CHECK(mean("det") < 2);
  CHECK(mean("amod") < 2);
  CHECK(mean("nsubj") > mean("det"));
  CHECK(mean("conj") > 4);
  CHECK(mean("punct") > 5);
  CHECK(*std::max_element(by_label["nsubj"].begin(), by_label["nsubj"].end()) >= 10);
}

TEST_CASE("bad configs and lexicons are refused with the field named", "[synth]") {
  Config c;
  c.p_passive = 1.5;
  CHECK_THROWS_WITH(Grammar(c, 1), Catch::Matchers::Contains("p_passive"));
  c = Config();
  c.min_sentences = 5;
  c.max_sentences = 2;
  CHECK_THROWS_WITH(validate(c), Catch::Matchers::Contains("min_sentences"));
  c = Config();
  c.w_intransitive = c.w_transitive_animate = c.w_transitive_thing = 0;
  CHECK_THROWS_WITH(validate(c), Catch::Matchers::Contains("w_intransitive"));
  c = Config();
  CHECK_THROWS_WITH(set_field(c, "p_pasive", "0.2"), Catch::Matchers::Contains("unknown") &&
                                                         Catch::Matchers::Contains("p_passive"));
  CHECK_THROWS_WITH(set_field(c, "p_passive", "lots"), Catch::Matchers::Contains("p_passive"));
  CHECK_THROWS_WITH(set_field(c, "max_depth", "2.5"), Catch::Matchers::Contains("max_depth"));
  set_field(c, "p_passive", "0.25");
  set_field(c, "max_depth", "3");
  CHECK(c.p_passive == 0.25);
  CHECK(c.max_depth == 3);
  CHECK(to_json(c)["p_passive"].as_number() == 0.25);

  // The tiny lexicon has no thing nouns: a config that needs them is refused.
  CHECK_THROWS_WITH(Grammar(Config(), 1, tiny()), Catch::Matchers::Contains("thing nouns"));
  Lexicon one = tiny();
  one.nouns.pop_back();
  CHECK_THROWS_WITH(Grammar(forced(), 1, one), Catch::Matchers::Contains("two animate nouns"));
  c = forced();
  c.max_words = 5;  // "the dog chased the cat ." has six words
  CHECK_THROWS_WITH(Grammar(c, 1, tiny()).next_document(), Catch::Matchers::Contains("max_words"));
}

TEST_CASE("check names what is inconsistent", "[synth]") {
  Sentence good = sample(1, 9)[0];
  REQUIRE_NOTHROW(check(good));
  Sentence s = good;
  s.arcs[0].head = static_cast<int>(s.words.size());
  CHECK_THROWS_WITH(check(s), Catch::Matchers::Contains("word 0 has head"));
  s = good;
  s.arcs[0] = {-1, "root"};
  CHECK_THROWS_WITH(check(s), Catch::Matchers::Contains("roots"));
  s = good;
  s.tree[0].span.end -= 1;
  CHECK_THROWS_WITH(check(s), Catch::Matchers::Contains("does not span"));
  s = good;
  s.tags.pop_back();
  CHECK_THROWS_WITH(check(s), Catch::Matchers::Contains("tags"));
  s = good;
  REQUIRE(!s.clauses.empty());
  s.clauses[0].agent = Span{0, static_cast<int>(s.words.size()) - 1};  // not an NP
  CHECK_THROWS_WITH(check(s), Catch::Matchers::Contains("not an NP"));
}

TEST_CASE("collocations: with p_collocation 1 a noun is always next to the same adjective, with 0 not",
          "[synth]") {
  // noun (each form) -> the adjectives seen right before it, over 200 documents
  auto adjectives_before = [](double p_collocation, int* pairs) {
    Config c;
    c.p_adjective = 0.6;
    c.p_collocation = p_collocation;
    Grammar g(c, 3);
    std::map<std::string, std::set<std::string>> before;
    for (int d = 0; d < 200; ++d)
      for (const Sentence& s : g.next_document().sentences)
        for (size_t i = 1; i < s.words.size(); ++i)
          if ((s.tags[i] == "NN" || s.tags[i] == "NNS") && s.tags[i - 1] == "JJ") {
            before[s.words[i]].insert(s.words[i - 1]);
            ++*pairs;
          }
    return before;
  };
  int pairs = 0;
  for (const auto& [noun, adjectives] : adjectives_before(1, &pairs)) {
    INFO(noun);
    CHECK(adjectives.size() == 1);
  }
  CHECK(pairs > 500);
  size_t most = 0;
  for (const auto& [noun, adjectives] : adjectives_before(0, &pairs)) most = std::max(most, adjectives.size());
  CHECK(most >= 5);  // without the option the adjective is drawn freely
}
