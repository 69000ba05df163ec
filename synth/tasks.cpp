#include "synth/tasks.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "base/counter_rng.h"
#include "base/error.h"
#include "base/json.h"
#include "base/output.h"

namespace ordo::synth {

namespace {

// The draws of each part of the task set, apart so that one task's changes
// leave the others' files alone.
enum Stream : uint64_t { kSplit = 1, kRoles, kShuffle, kSquad, kProbes, kShuffleRandom, kOverlap };

enum class Split { train, dev, test };
const char* split_name(Split s) { return s == Split::train ? "train" : s == Split::dev ? "dev" : "test"; }

std::string joined(const std::vector<std::string>& words, int begin, int end) {
  std::string s;
  for (int i = begin; i < end; ++i) s += (i > begin ? " " : "") + words[i];
  return s;
}
std::string joined(const std::vector<std::string>& words) { return joined(words, 0, static_cast<int>(words.size())); }

// Python's len(): code points, which SQuAD's answer_start counts.
int64_t code_points(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// A main clause with both roles, neither inside the other and their words
// different (else the swap changes nothing).
const Clause* main_with_roles(const Sentence& s) {
  if (s.clauses.empty()) return nullptr;
  const Clause& c = s.clauses[0];
  if (c.kind != ClauseKind::Main || !c.agent || !c.patient) return nullptr;
  const Span a = *c.agent, p = *c.patient;
  if (!(a.end <= p.start || p.end <= a.start)) return nullptr;
  if (joined(s.words, a.start, a.end) == joined(s.words, p.start, p.end)) return nullptr;
  return &c;
}

// ---- GLUE-layout files ------------------------------------------------------------------

struct TsvFile {
  std::string header;
  std::vector<std::string> rows;
  std::string text() const {
    std::string s = header + "\n";
    for (const std::string& r : rows) s += r + "\n";
    return s;
  }
};

// RTE's layout: index sentence1 sentence2 label (test: without the label).
struct RteSplit {
  TsvFile file;
  bool test = false;
  explicit RteSplit(bool is_test) : test(is_test) {
    file.header = test ? "index\tsentence1\tsentence2" : "index\tsentence1\tsentence2\tlabel";
  }
  void add(const std::string& a, const std::string& b, bool entailed) {
    std::string row = std::to_string(file.rows.size()) + "\t" + a + "\t" + b;
    if (!test) row += entailed ? "\tentailment" : "\tnot_entailment";
    file.rows.push_back(row);
  }
};

// SST-2's layout: sentence label (test: index sentence).
struct Sst2Split {
  TsvFile file;
  bool test = false;
  explicit Sst2Split(bool is_test) : test(is_test) { file.header = test ? "index\tsentence" : "sentence\tlabel"; }
  void add(const std::string& sentence, int label) {
    file.rows.push_back(test ? std::to_string(file.rows.size()) + "\t" + sentence
                             : sentence + "\t" + std::to_string(label));
  }
};

// MRPC's layout: Quality #1 ID #2 ID #1 String #2 String (test: index in
// place of Quality, no label).
struct MrpcSplit {
  TsvFile file;
  bool test = false;
  explicit MrpcSplit(bool is_test) : test(is_test) {
    file.header = std::string(test ? "index" : "Quality") + "\t#1 ID\t#2 ID\t#1 String\t#2 String";
  }
  void add(const std::string& a, const std::string& b, bool equivalent) {
    const std::string n = std::to_string(file.rows.size());
    const std::string first = test ? n : std::string(equivalent ? "1" : "0");
    file.rows.push_back(first + "\t" + n + "a\t" + n + "b\t" + a + "\t" + b);
  }
};

// ---- order-insensitive classification: sentiment and overlap ---------------------------------
//
// GLUE's classification tasks are mostly solvable from the words alone; the
// tasks above are built to need word order. These two are built not to: each
// label is a function of the sentence's (or the pair's) bag of words, so a
// model that ignores order can reach 100%, as on much of SST-2 and MRPC.

// The polar words: the 100 most frequent modifiers of the documents (words
// the grammar tags as adjectives, JJ, or adverbs, RB, and never as anything
// else, so that being one is a property of the word; ties by the word).
// Only frequent words carry polarity, so that a classifier trained on a few
// thousand sentences has seen nearly every one it is asked about.
std::set<std::string> polar_words(const std::vector<Document>& documents) {
  std::map<std::string, int64_t> modifier;
  std::set<std::string> other;
  for (const Document& doc : documents)
    for (const Sentence& s : doc.sentences)
      for (size_t i = 0; i < s.words.size(); ++i) {
        if (s.tags[i] == "JJ" || s.tags[i] == "RB") ++modifier[s.words[i]];
        else other.insert(s.words[i]);
      }
  std::vector<std::pair<std::string, int64_t>> ranked;
  for (const auto& [word, count] : modifier)
    if (!other.count(word)) ranked.emplace_back(word, count);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::set<std::string> polar;
  for (size_t k = 0; k < std::min<size_t>(100, ranked.size()); ++k) polar.insert(ranked[k].first);
  return polar;
}

// A modifier's fixed polarity, +1 or -1: the low bit of its FNV-1a hash, so
// that it depends on the word alone (not on the lexicon's order or a seed).
int polarity(const std::string& word) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : word) h = (h ^ c) * 1099511628211ull;
  return (h & 1) ? 1 : -1;
}

// The sentiment task's score: the sum of the polarities of the sentence's
// polar words, each occurrence counted. 0: no label (left out).
int sentiment_score(const std::vector<std::string>& words, const std::set<std::string>& modifiers) {
  int score = 0;
  for (const std::string& w : words)
    if (modifiers.count(w)) score += polarity(w);
  return score;
}

bool is_noun(const std::string& tag) { return tag == "NN" || tag == "NNS"; }

// The overlap task's second sentence: the first with each polar word
// dropped at random (both labels alike), and, when not `equivalent`, one noun
// replaced by another of the same number that the sentence does not hold.
// "" when the sentence has no noun to replace.
std::string overlap_pair(const Sentence& s, bool equivalent, const std::set<std::string>& modifiers,
                         const std::map<std::string, std::vector<std::string>>& nouns_by_tag, CounterRng& rng) {
  std::vector<int> noun_positions;
  for (size_t i = 0; i < s.words.size(); ++i)
    if (is_noun(s.tags[i])) noun_positions.push_back(static_cast<int>(i));
  if (noun_positions.empty()) return "";
  std::vector<std::string> words = s.words;
  if (!equivalent) {
    const int at = noun_positions[rng.next_u32() % noun_positions.size()];
    const std::vector<std::string>& pool = nouns_by_tag.at(s.tags[static_cast<size_t>(at)]);
    const std::set<std::string> held(s.words.begin(), s.words.end());
    std::vector<const std::string*> candidates;
    for (const std::string& n : pool)
      if (!held.count(n)) candidates.push_back(&n);
    if (candidates.empty()) return "";
    words[static_cast<size_t>(at)] = *candidates[rng.next_u32() % candidates.size()];
  }
  std::vector<std::string> kept;
  for (const std::string& w : words)
    if (!modifiers.count(w) || !rng.chance(0.5)) kept.push_back(w);
  return joined(kept);
}

// ---- roles and the word-swap probes --------------------------------------------------------

// The hypothesis of the roles task: the main clause from its first role or
// verb to its last, with the roles exchanged when `swap`.
std::string role_hypothesis(const Sentence& s, const Clause& c, bool swap) {
  const int begin = std::min({c.agent->start, c.patient->start, c.verb});
  const int end = std::max({c.agent->end, c.patient->end, c.verb + 1});
  std::vector<std::string> words = s.words;
  if (swap) words = swap_spans(words, *c.agent, *c.patient);
  // The swapped spans may differ in length: the stretch keeps its bounds,
  // which still hold both roles and the verb.
  return joined(words, begin, end);
}

// The premise with the words of one phrase of exactly `length` words
// shuffled into a different order; "" when the sentence has none.
std::string shuffle_phrase(const Sentence& s, int length, CounterRng& rng) {
  static const std::set<std::string> kinds{"NP", "VP", "PP", "ADJP", "ADVP"};
  std::vector<Span> candidates;
  for (const Constituent& c : s.tree) {
    if (!kinds.count(c.label) || c.span.end - c.span.start != length) continue;
    const std::set<std::string> distinct(s.words.begin() + c.span.start, s.words.begin() + c.span.end);
    if (distinct.size() > 1) candidates.push_back(c.span);
  }
  if (candidates.empty()) return "";
  const Span span = candidates[rng.next_u32() % candidates.size()];
  std::vector<std::string> words = s.words;
  std::vector<std::string> inside(words.begin() + span.start, words.begin() + span.end);
  const std::vector<std::string> before = inside;
  while (inside == before) shuffle(inside, rng);  // some order differs: the phrase has two distinct words
  std::copy(inside.begin(), inside.end(), words.begin() + span.start);
  return joined(words);
}

// Whether the sentence has a phrase the word-swap probes shuffle (NP, VP, PP,
// ADJP, ADVP of 2..6 words, two of them distinct): App. B.2's subset, "every
// premise sentence has at least one phrase with length from 2 to 6".
bool has_swappable_phrase(const Sentence& s) {
  static const std::set<std::string> kinds{"NP", "VP", "PP", "ADJP", "ADVP"};
  for (const Constituent& c : s.tree) {
    const int length = c.span.end - c.span.start;
    if (!kinds.count(c.label) || length < 2 || length > 6) continue;
    if (std::set<std::string>(s.words.begin() + c.span.start, s.words.begin() + c.span.end).size() > 1) return true;
  }
  return false;
}

// The premise with all its words in a random order other than the given one
// (the Random column of Table 2: the random swaps of prior work, label kept
// as they assume); "" when its words are all the same.
std::string shuffle_all(const Sentence& s, CounterRng& rng) {
  if (std::set<std::string>(s.words.begin(), s.words.end()).size() < 2) return "";
  std::vector<std::string> words = s.words;
  while (words == s.words) shuffle(words, rng);
  return joined(words);
}

// ---- SQuAD -------------------------------------------------------------------------------------

struct SquadBuilder {
  json::Value data = json::Value::array();
  int64_t questions = 0;

  // One context (sentences joined by a space) and its questions.
  void add_context(const std::vector<const Sentence*>& sentences, const std::string& id_prefix, bool version_2,
                   const std::vector<std::string>& foreign_patients, CounterRng& rng) {
    std::string context;
    std::vector<int64_t> sentence_start;  // code points
    for (const Sentence* s : sentences) {
      if (!context.empty()) context += " ";
      sentence_start.push_back(code_points(context));
      context += joined(s->words);
    }
    json::Value qas = json::Value::array();
    for (size_t k = 0; k < sentences.size(); ++k) {
      const Sentence& s = *sentences[k];
      for (const Clause& c : s.clauses) {
        if (c.passive || !c.agent || !c.patient) continue;
        const Span a = *c.agent, p = *c.patient;
        if (!(a.end <= c.verb && c.verb < p.start)) continue;  // agent verb ... patient, as an active clause reads
        const std::string agent = joined(s.words, a.start, a.end), patient = joined(s.words, p.start, p.end);
        if (agent == patient) continue;
        auto offset = [&](int word) {
          return sentence_start[k] + (word == 0 ? 0 : code_points(joined(s.words, 0, word)) + 1);
        };
        qas.push_back(question(id_prefix, "who " + s.words[c.verb] + " " + patient + " ?", agent, offset(a.start)));
        qas.push_back(question(id_prefix, agent + " " + s.words[c.verb] + " whom ?", patient, offset(p.start)));
        if (version_2 && !foreign_patients.empty() && rng.chance(0.5)) {
          const std::string& other = foreign_patients[rng.next_u32() % foreign_patients.size()];
          if (context.find(other) == std::string::npos)
            qas.push_back(question(id_prefix, "who " + s.words[c.verb] + " " + other + " ?", "", -1));
        }
      }
    }
    if (qas.size() == 0) return;
    json::Value paragraph = json::Value::object();
    paragraph["context"] = context;
    paragraph["qas"] = qas;
    json::Value article = json::Value::object();
    article["title"] = id_prefix;
    article["paragraphs"] = json::Value::array();
    article["paragraphs"].push_back(paragraph);
    data.push_back(article);
  }

  json::Value question(const std::string& prefix, const std::string& text, const std::string& answer, int64_t start) {
    json::Value q = json::Value::object();
    q["id"] = prefix + "_q" + std::to_string(questions++);
    q["question"] = text;
    json::Value answers = json::Value::array();
    if (start >= 0) {
      json::Value a = json::Value::object();
      a["text"] = answer;
      a["answer_start"] = start;
      answers.push_back(a);
    }
    q["answers"] = answers;
    q["is_impossible"] = start < 0;
    return q;
  }

  std::string text(const std::string& version) const {
    json::Value root = json::Value::object();
    root["version"] = version;
    root["data"] = data;
    return json::dump(root) + "\n";
  }
};

// ---- SentEval-style probes ----------------------------------------------------------------------

// The main verb's dependent with `label` (its word's index); -1 when it has none.
int main_dependent(const Sentence& s, const std::string& label) {
  if (s.clauses.empty()) return -1;
  const int verb = s.clauses[0].verb;
  for (size_t i = 0; i < s.arcs.size(); ++i)
    if (s.arcs[i].head == verb && s.arcs[i].label == label) return static_cast<int>(i);
  return -1;
}

// The number (0 singular, 1 plural) of the main verb's dependent with `label`,
// by its tag; -1 when it has none or it is not a common noun.
int dependent_number(const Sentence& s, const std::string& label) {
  const int i = main_dependent(s, label);
  if (i < 0) return -1;
  return s.tags[i] == "NN" ? 0 : s.tags[i] == "NNS" ? 1 : -1;
}

// subject_number's role swap: a sentence whose main clause is active and past
// (its verb says nothing of number: "met", not "meets"/"meet") with a subject
// and an object of different numbers, and the same sentence with the two noun
// phrases exchanged, whose subject is then the other number. Both have the
// same words, so a model that reads the subject by its place changes its
// answer, one that reads a bag of words cannot. Empty when the sentence has no
// such clause.
std::optional<std::pair<std::string, int>> subject_swapped(const Sentence& s) {
  const Clause* c = main_with_roles(s);
  if (!c || c->passive || c->tense != Tense::Past) return std::nullopt;
  const int subject = main_dependent(s, "nsubj"), object = main_dependent(s, "obj");
  const int subject_number = dependent_number(s, "nsubj"), object_number = dependent_number(s, "obj");
  if (subject_number < 0 || object_number < 0 || subject_number == object_number) return std::nullopt;
  const auto inside = [](int i, const Span& span) { return span.start <= i && i < span.end; };
  if (!inside(subject, *c->agent) || !inside(object, *c->patient)) return std::nullopt;
  return std::make_pair(joined(swap_spans(s.words, *c->agent, *c->patient)), object_number);
}

// ---- SentEval's multi-class probes, in SentEval's own file format ---------------------------------

// The sequence of constituents right under the root S, by label (a word
// directly under it by its tag): "NP_VP_.", "S_CC_S_.".
std::string top_constituents(const Sentence& s) {
  std::string sequence;
  const int n = static_cast<int>(s.words.size());
  for (int i = 0; i < n;) {
    std::string item = s.tags[static_cast<size_t>(i)];
    int next = i + 1;
    for (const Constituent& c : s.tree)
      if (c.parent == 0 && c.span.start == i) item = c.label, next = c.span.end;
    sequence += (sequence.empty() ? "" : "_") + item;
    i = next;
  }
  return sequence;
}

// The depth of the bracketed tree, the root S at 1 down to the part-of-speech
// nodes: the most phrases holding one word, plus its tag.
int tree_depth(const Sentence& s) {
  int deepest = 0;
  for (int i = 0; i < static_cast<int>(s.words.size()); ++i) {
    int holding = 0;
    for (const Constituent& c : s.tree) holding += c.span.start <= i && i < c.span.end;
    deepest = std::max(deepest, holding + 1);
  }
  return deepest;
}

// SentEval's probing format: "tr|va|te <TAB> label <TAB> sentence" per line,
// partitions in that order. A label no training sentence has is left out of
// dev and test (a rare tree depth): a classifier has no class for it.
struct SentEvalFile {
  struct Row {
    Split split;
    std::string label, sentence;
  };
  std::vector<Row> rows;
  void add(Split split, const std::string& label, const std::string& sentence) {
    rows.push_back({split, label, sentence});
  }
  std::vector<const Row*> kept() const {
    std::set<std::string> trained;
    for (const Row& r : rows)
      if (r.split == Split::train) trained.insert(r.label);
    std::vector<const Row*> k;
    for (Split split : {Split::train, Split::dev, Split::test})
      for (const Row& r : rows)
        if (r.split == split && trained.count(r.label)) k.push_back(&r);
    return k;
  }
  std::string text() const {
    std::string s;
    for (const Row* r : kept())
      s += std::string(r->split == Split::train ? "tr" : r->split == Split::dev ? "va" : "te") + "\t" + r->label +
           "\t" + r->sentence + "\n";
    return s;
  }
  // "6 classes, 17808 sentences, the most frequent class 28.8%" for the README.
  std::string summary() const {
    std::map<std::string, int64_t> counts;
    const std::vector<const Row*> k = kept();
    int64_t most = 0;
    for (const Row* r : k) most = std::max(most, ++counts[r->label]);
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%",
                  k.empty() ? 0.0 : 100.0 * static_cast<double>(most) / static_cast<double>(k.size()));
    return std::to_string(counts.size()) + " classes, " + std::to_string(k.size()) +
           " sentences, the most frequent class " + share;
  }
};

// sentence_length, word_content, tree_depth and top_constituents as Conneau
// et al. 2018 (§3) define them, on the synthetic sentences:
//   sentence_length   words (with the final punctuation) in 6 equal-width bins,
//                     5-8 ... 25-28 (labels 0..5); other lengths left out;
//   word_content      the 100 words ranked 101-200 by frequency in the
//                     documents (SentEval: 1,000 of ranks 2k-3k; the
//                     language's lexicon is smaller); sentences holding
//                     exactly one of them, labelled with it;
//   tree_depth        the bracketed tree's depth (tree_depth above);
//   top_constituents  the sequence under the root; the 19 most frequent, the
//                     rest "OTHER".
// Unlike SentEval's, the classes are not balanced and depth is not
// decorrelated from length: the README gives each task's most frequent class.
std::map<std::string, SentEvalFile> senteval_probes(const std::vector<Document>& documents,
                                                    const std::vector<Split>& split) {
  std::map<std::string, int64_t> frequency, top_frequency;
  for (const Document& doc : documents)
    for (const Sentence& s : doc.sentences) {
      for (const std::string& w : s.words) ++frequency[w];
      ++top_frequency[top_constituents(s)];
    }
  auto ranked = [](const std::map<std::string, int64_t>& counts) {  // by count, ties by the string
    std::vector<std::pair<std::string, int64_t>> r(counts.begin(), counts.end());
    std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    return r;
  };
  std::set<std::string> content_words, top_classes;
  const auto words = ranked(frequency), tops = ranked(top_frequency);
  for (size_t k = 100; k < std::min<size_t>(200, words.size()); ++k) content_words.insert(words[k].first);
  for (size_t k = 0; k < std::min<size_t>(19, tops.size()); ++k) top_classes.insert(tops[k].first);

  std::map<std::string, SentEvalFile> files;
  for (size_t d = 0; d < documents.size(); ++d)
    for (const Sentence& s : documents[d].sentences) {
      const std::string sentence = joined(s.words);
      const int n = static_cast<int>(s.words.size());
      if (n >= 5 && n <= 28) files["sentence_length"].add(split[d], std::to_string((n - 5) / 4), sentence);
      std::set<std::string> found;
      int occurrences = 0;
      for (const std::string& w : s.words)
        if (content_words.count(w)) found.insert(w), ++occurrences;
      if (occurrences == 1) files["word_content"].add(split[d], *found.begin(), sentence);
      files["tree_depth"].add(split[d], std::to_string(tree_depth(s)), sentence);
      const std::string top = top_constituents(s);
      files["top_constituents"].add(split[d], top_classes.count(top) ? top : "OTHER", sentence);
    }
  return files;
}

const char* kReadme =
    "# The synthetic language's tasks (ordo data tasks)\n\n"
    "Made from the annotations of a synthetic corpus; each folder is in a real format and is read by the\n"
    "same code as the real data set (`ordo finetune --task NAME --data FOLDER`). Splits are by document.\n\n"
    "| folder | format (`--task`) | what a model must know to solve it | word order |\n"
    "| --- | --- | --- | --- |\n"
    "| roles/ | RTE (`rte`) | who did what to whom: the hypothesis holds the same words entailed or with agent and "
    "patient exchanged, so without word order it is at chance. dev_shuffle_3..6.tsv (a phrase of that length "
    "shuffled, label kept), dev_shuffle_random.tsv (every word of the premise shuffled, label kept) and "
    "dev_shuffle_sr.tsv (premise roles exchanged, label not_entailment) are the word-swap probes of the "
    "locality/symmetry paper (Table 2), evaluated beside dev.tsv; their originals, unchanged: dev_swap_original.tsv "
    "(the premises with a phrase of 2..6 words, those Shuffle-x and Random draw from) and dev_sr_original.tsv (the "
    "entailed pairs Shuffle-SR swaps) | needed: tests claims about word order, not claims about GLUE's mostly "
    "order-insensitive classification |\n"
    "| squad/ | SQuAD v1.1 (`squad`) | which noun phrase is the agent and which the patient of a verb, to point at it "
    "| needed |\n"
    "| squad2/ | SQuAD v2.0 (`squad2`) | the same, and that a question about a phrase absent from the context has no "
    "answer | needed |\n"
    "| bigram_shift/ | SST-2 (`sst2`) | whether two adjacent words were inverted (local order) | needed |\n"
    "| tense/ | SST-2 (`sst2`) | the main verb's tense (0 past, 1 present): a word's form | partly (which verb is "
    "the main one) |\n"
    "| subject_number/ | SST-2 (`sst2`) | the main clause's subject singular (0) or plural (1): which noun is the "
    "subject. dev_roles_original.tsv (dev sentences whose main clause is an active past, with a subject and an "
    "object of different numbers) and dev_roles_swapped.tsv (the same, the two noun phrases exchanged and the "
    "label the new subject's) are a role swap on a task models learn: the fraction of answers it changes (0 for "
    "a bag of words) | needed: tests whether a model reads roles by their place |\n"
    "| object_number/ | SST-2 (`sst2`) | the main clause's object singular (0) or plural (1): which noun is the "
    "object | needed |\n"
    "| sentiment/ | SST-2 (`sst2`) | the sign of the sum of the sentence's polar words' fixed polarities (each of the "
    "100 most frequent adjectives and adverbs is +1 or -1; sentences summing to 0 left out) | not needed: a bag of words solves it; stands in for GLUE's "
    "order-insensitive single-sentence classification (\"APE at least as good as RPE on classification\") |\n"
    "| overlap/ | MRPC (`mrpc`) | whether the second sentence holds the first's nouns (1) or one noun replaced (0); "
    "polar words are dropped at random either way | not needed: the two bags of words solve it; stands in for GLUE's "
    "order-insensitive pair classification |\n"
    "| sentence_length/ | SentEval (`senteval`) | the sentence's length in 6 bins of 4 words, 5-28 | not needed |\n"
    "| word_content/ | SentEval (`senteval`) | which of 100 mid-frequency words the sentence holds | not needed |\n"
    "| tree_depth/ | SentEval (`senteval`) | the depth of the sentence's constituency tree | needed |\n"
    "| top_constituents/ | SentEval (`senteval`) | the constituents right under the root, as NP_VP_. (19 sequences "
    "and OTHER) | needed |\n\n"
    "The SentEval files are in SentEval's probing format (partition tr/va/te, label, sentence); their classes are "
    "not balanced as SentEval's are, and tree depth is not decorrelated from length:\n\n";

}  // namespace

std::vector<std::pair<std::string, std::string>> make_tasks(const std::vector<Document>& documents,
                                                            const TaskOptions& o) {
  ORDO_CHECK(o.dev_fraction > 0 && o.test_fraction >= 0 && o.dev_fraction + o.test_fraction < 1,
             "task splits: dev_fraction ", o.dev_fraction, " and test_fraction ", o.test_fraction,
             " must be positive and leave documents to train on");
  ORDO_CHECK(documents.size() >= 3, "the annotations hold ", documents.size(),
             " documents; the tasks' train/dev/test splits need at least 3");
  // Each document's split, drawn from its own counter.
  std::vector<Split> split(documents.size());
  for (size_t d = 0; d < documents.size(); ++d) {
    CounterRng rng(o.seed, kSplit, d);
    const double u = rng.uniform();
    split[d] = u < o.dev_fraction ? Split::dev : u < o.dev_fraction + o.test_fraction ? Split::test : Split::train;
  }
  std::vector<std::pair<std::string, std::string>> files;

  // roles and its probes
  {
    std::map<Split, RteSplit> roles{{Split::train, RteSplit(false)}, {Split::dev, RteSplit(false)},
                                    {Split::test, RteSplit(true)}};
    std::map<int, RteSplit> shuffled;
    for (int x = 3; x <= 6; ++x) shuffled.emplace(x, RteSplit(false));
    RteSplit shuffle_sr(false), sr_original(false), swap_original(false), shuffle_random(false);
    for (size_t d = 0; d < documents.size(); ++d) {
      CounterRng rng(o.seed, kRoles, d);
      CounterRng shuffle_rng(o.seed, kShuffle, d);
      CounterRng random_rng(o.seed, kShuffleRandom, d);
      for (const Sentence& s : documents[d].sentences) {
        const Clause* c = main_with_roles(s);
        if (!c) continue;
        const bool entailed = rng.chance(0.5);
        const std::string premise = joined(s.words), hypothesis = role_hypothesis(s, *c, !entailed);
        roles.at(split[d]).add(premise, hypothesis, entailed);
        if (split[d] != Split::dev) continue;
        for (int x = 3; x <= 6; ++x) {
          const std::string shuffled_premise = shuffle_phrase(s, x, shuffle_rng);
          if (!shuffled_premise.empty()) shuffled.at(x).add(shuffled_premise, hypothesis, entailed);
        }
        if (has_swappable_phrase(s)) {
          swap_original.add(premise, hypothesis, entailed);
          const std::string random_premise = shuffle_all(s, random_rng);
          if (!random_premise.empty()) shuffle_random.add(random_premise, hypothesis, entailed);
        }
        if (!entailed) continue;
        shuffle_sr.add(joined(swap_spans(s.words, *c->agent, *c->patient)), hypothesis, false);
        sr_original.add(premise, hypothesis, true);
      }
    }
    for (const auto& [which, file] : roles)
      files.emplace_back(std::string("roles/") + split_name(which) + ".tsv", file.file.text());
    for (const auto& [x, file] : shuffled)
      files.emplace_back("roles/dev_shuffle_" + std::to_string(x) + ".tsv", file.file.text());
    files.emplace_back("roles/dev_shuffle_sr.tsv", shuffle_sr.file.text());
    files.emplace_back("roles/dev_shuffle_random.tsv", shuffle_random.file.text());
    files.emplace_back("roles/dev_swap_original.tsv", swap_original.file.text());
    files.emplace_back("roles/dev_sr_original.tsv", sr_original.file.text());
  }

  // SQuAD v1.1 and v2.0: the same contexts and questions; v2.0 adds the unanswerable ones.
  {
    std::vector<std::string> patients;  // the pool of the unanswerable questions' phrases
    for (const Document& doc : documents)
      for (const Sentence& s : doc.sentences)
        for (const Clause& c : s.clauses)
          if (c.patient) patients.push_back(joined(s.words, c.patient->start, c.patient->end));
    for (const bool version_2 : {false, true}) {
      std::map<Split, SquadBuilder> squad;
      for (size_t d = 0; d < documents.size(); ++d) {
        if (split[d] == Split::test) continue;  // SQuAD ships no test file
        CounterRng rng(o.seed, kSquad, d);
        const auto& sentences = documents[d].sentences;
        for (size_t first = 0; first < sentences.size(); first += 3) {
          std::vector<const Sentence*> context;
          for (size_t k = first; k < std::min(sentences.size(), first + 3); ++k) context.push_back(&sentences[k]);
          squad[split[d]].add_context(context, "d" + std::to_string(d) + "_s" + std::to_string(first), version_2,
                                      patients, rng);
        }
      }
      const std::string folder = version_2 ? "squad2/" : "squad/", version = version_2 ? "v2.0" : "1.1";
      const std::string suffix = version_2 ? "-v2.0.json" : "-v1.1.json";
      files.emplace_back(folder + "train" + suffix, squad[Split::train].text(version));
      files.emplace_back(folder + "dev" + suffix, squad[Split::dev].text(version));
    }
  }

  // SentEval-style probes
  {
    const char* names[] = {"bigram_shift", "tense", "subject_number", "object_number"};
    std::map<std::string, std::map<Split, Sst2Split>> probes;
    for (const char* n : names)
      probes[n] = {{Split::train, Sst2Split(false)}, {Split::dev, Sst2Split(false)}, {Split::test, Sst2Split(true)}};
    Sst2Split roles_original(false), roles_swapped(false);  // subject_number's role swap, row for row
    for (size_t d = 0; d < documents.size(); ++d) {
      CounterRng rng(o.seed, kProbes, d);
      for (const Sentence& s : documents[d].sentences) {
        const int n = static_cast<int>(s.words.size());
        if (n >= 4) {  // two adjacent words before the final punctuation, inverted or not
          const bool shift = rng.chance(0.5);
          std::vector<std::string> words = s.words;
          const int i = static_cast<int>(rng.next_u32() % static_cast<uint32_t>(n - 2));
          if (shift && words[i] != words[i + 1]) std::swap(words[i], words[i + 1]);
          probes["bigram_shift"].at(split[d]).add(joined(words), shift && s.words[i] != s.words[i + 1]);
        }
        if (!s.clauses.empty()) probes["tense"].at(split[d]).add(joined(s.words), s.clauses[0].tense == Tense::Present);
        const int subject = dependent_number(s, "nsubj"), object = dependent_number(s, "obj");
        if (subject >= 0) probes["subject_number"].at(split[d]).add(joined(s.words), subject);
        if (object >= 0) probes["object_number"].at(split[d]).add(joined(s.words), object);
        if (split[d] != Split::dev) continue;
        if (const auto swapped = subject_swapped(s)) {
          roles_original.add(joined(s.words), subject);
          roles_swapped.add(swapped->first, swapped->second);
        }
      }
    }
    for (const auto& [name, splits] : probes)
      for (const auto& [which, file] : splits)
        files.emplace_back(name + "/" + split_name(which) + ".tsv", file.file.text());
    files.emplace_back("subject_number/dev_roles_original.tsv", roles_original.file.text());
    files.emplace_back("subject_number/dev_roles_swapped.tsv", roles_swapped.file.text());
  }
  // The order-insensitive classification tasks
  {
    const std::set<std::string> modifiers = polar_words(documents);
    std::map<std::string, std::set<std::string>> noun_sets;  // by tag, sorted: the draws do not depend on hashing
    for (const Document& doc : documents)
      for (const Sentence& s : doc.sentences)
        for (size_t i = 0; i < s.words.size(); ++i)
          if (is_noun(s.tags[i])) noun_sets[s.tags[i]].insert(s.words[i]);
    std::map<std::string, std::vector<std::string>> nouns_by_tag;
    for (const auto& [tag, nouns] : noun_sets) nouns_by_tag[tag].assign(nouns.begin(), nouns.end());
    std::map<Split, Sst2Split> sentiment{{Split::train, Sst2Split(false)}, {Split::dev, Sst2Split(false)},
                                         {Split::test, Sst2Split(true)}};
    std::map<Split, MrpcSplit> overlap{{Split::train, MrpcSplit(false)}, {Split::dev, MrpcSplit(false)},
                                       {Split::test, MrpcSplit(true)}};
    for (size_t d = 0; d < documents.size(); ++d) {
      CounterRng rng(o.seed, kOverlap, d);
      for (const Sentence& s : documents[d].sentences) {
        const int score = sentiment_score(s.words, modifiers);
        if (score != 0) sentiment.at(split[d]).add(joined(s.words), score > 0);
        const bool equivalent = rng.chance(0.5);
        const std::string second = overlap_pair(s, equivalent, modifiers, nouns_by_tag, rng);
        if (!second.empty()) overlap.at(split[d]).add(joined(s.words), second, equivalent);
      }
    }
    for (const auto& [which, file] : sentiment)
      files.emplace_back(std::string("sentiment/") + split_name(which) + ".tsv", file.file.text());
    for (const auto& [which, file] : overlap)
      files.emplace_back(std::string("overlap/") + split_name(which) + ".tsv", file.file.text());
  }
  std::string readme = kReadme;
  for (const auto& [name, file] : senteval_probes(documents, split)) {
    files.emplace_back(name + "/" + name + ".txt", file.text());
    readme += "- " + name + ": " + file.summary() + "\n";
  }
  files.emplace_back("README.md", readme);
  return files;
}

const std::vector<TaskFolder>& task_folders() {
  static const std::vector<TaskFolder> folders = {
      {"roles", "rte"},           {"squad", "squad"},           {"squad2", "squad2"},
      {"bigram_shift", "sst2"},   {"tense", "sst2"},            {"subject_number", "sst2"},
      {"object_number", "sst2"},  {"sentence_length", "senteval"}, {"word_content", "senteval"},
      {"tree_depth", "senteval"}, {"top_constituents", "senteval"}, {"sentiment", "sst2"},
      {"overlap", "mrpc"}};
  return folders;
}

void write_tasks(const std::vector<Document>& documents, const TaskOptions& options, const std::string& out,
                 bool overwrite, const std::vector<InputPath>& inputs) {
  check_output(out, OutputKind::folder, overwrite, inputs);
  write_folder(out, make_tasks(documents, options));
}

}  // namespace ordo::synth
