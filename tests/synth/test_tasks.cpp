// The synthetic tasks (synth/tasks.h) read back by the readers a user points
// at GLUE and SQuAD, and checked against their construction: the roles task's
// two hypotheses hold the same words (a bag-of-words model is at chance), its
// entailed hypotheses are word for word in the premise, SQuAD answers sit at
// their offsets, and the probes' labels say what was done to the sentence.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "downstream/glue.h"
#include "downstream/senteval.h"
#include "downstream/squad.h"
#include "synth/tasks.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

std::vector<synth::Document> documents(int n) {
  synth::Grammar grammar(synth::Config{}, 7);
  std::vector<synth::Document> docs;
  for (int i = 0; i < n; ++i) docs.push_back(grammar.next_document());
  return docs;
}

std::vector<std::string> sorted_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  std::sort(words.begin(), words.end());
  return words;
}

struct Written {
  test::TempDir dir{"tasks"};
  explicit Written(const std::vector<synth::Document>& docs, uint64_t seed = 1) {
    synth::TaskOptions o;
    o.seed = seed;
    synth::write_tasks(docs, o, dir / "tasks", /*overwrite=*/false, {});
  }
  std::string operator/(const std::string& name) const { return dir / ("tasks/" + name); }
};

}  // namespace

TEST_CASE("synthetic tasks: every file reads back through the GLUE and SQuAD readers", "[synth][tasks]") {
  Written w(documents(200));
  const auto& rte = downstream::glue_task("rte");
  for (const char* file : {"train", "dev", "dev_shuffle_3", "dev_shuffle_4", "dev_shuffle_5", "dev_shuffle_6",
                           "dev_shuffle_sr", "dev_shuffle_random", "dev_swap_original", "dev_sr_original"}) {
    downstream::GlueSet set = downstream::read_glue(rte, w / ("roles/" + std::string(file) + ".tsv"));
    CHECK(set.labelled);
    CHECK(!set.examples.empty());
  }
  CHECK(!downstream::read_glue(rte, w / "roles/test.tsv").labelled);
  for (const char* probe : {"bigram_shift", "tense", "subject_number", "object_number"}) {
    INFO(probe);
    downstream::GlueSet train = downstream::read_glue(downstream::glue_task("sst2"), w / (std::string(probe) + "/train.tsv"));
    CHECK(train.examples.size() > 100);
    int ones = 0;
    for (const auto& e : train.examples) ones += e.label;
    // Both classes present in fair numbers (the grammar's draws, not a constant label).
    CHECK(ones > static_cast<int>(train.examples.size()) / 10);
    CHECK(ones < static_cast<int>(train.examples.size()) * 9 / 10);
  }
  for (const char* file : {"squad/train-v1.1.json", "squad/dev-v1.1.json", "squad2/train-v2.0.json",
                           "squad2/dev-v2.0.json"})
    CHECK(!downstream::read_squad(w / file).questions.empty());
}

TEST_CASE("synthetic tasks: roles hypotheses hold the premise's role words either way, entailed ones are in it",
          "[synth][tasks]") {
  Written w(documents(200));
  downstream::GlueSet train = downstream::read_glue(downstream::glue_task("rte"), w / "roles/train.tsv");
  int entailed = 0;
  for (const auto& e : train.examples) {
    // The same words whether entailed or swapped: only their order tells.
    const std::vector<std::string> premise = sorted_words(e.text_a), hypothesis = sorted_words(e.text_b);
    CHECK(std::includes(premise.begin(), premise.end(), hypothesis.begin(), hypothesis.end()));
    const bool inside = e.text_a.find(e.text_b) != std::string::npos;
    if (e.label == 0) {  // entailment: word for word a stretch of the premise
      ++entailed;
      CHECK(inside);
    }
  }
  const double share = static_cast<double>(entailed) / train.examples.size();
  CHECK(share > 0.4);
  CHECK(share < 0.6);
  // Shuffle-SR: premises with roles exchanged against entailed hypotheses: not entailed.
  for (const auto& e : downstream::read_glue(downstream::glue_task("rte"), w / "roles/dev_shuffle_sr.tsv").examples) {
    CHECK(e.label == 1);
    CHECK(e.text_a.find(e.text_b) == std::string::npos);  // the roles no longer read as the hypothesis has them
  }
  // Shuffle-x: the premise keeps its words, in another order.
  downstream::GlueSet dev = downstream::read_glue(downstream::glue_task("rte"), w / "roles/dev.tsv");
  std::map<std::string, std::string> original_by_hypothesis;
  for (const auto& e : dev.examples) original_by_hypothesis[e.text_b] = e.text_a;
  for (const auto& e : downstream::read_glue(downstream::glue_task("rte"), w / "roles/dev_shuffle_3.tsv").examples) {
    auto it = original_by_hypothesis.find(e.text_b);
    REQUIRE(it != original_by_hypothesis.end());
    CHECK(sorted_words(it->second) == sorted_words(e.text_a));
    CHECK(it->second != e.text_a);
  }
  // Table 2's originals are dev pairs as they stand: Shuffle-SR's the entailed ones, one per swapped pair.
  std::set<std::pair<std::string, std::string>> dev_pairs;
  for (const auto& e : dev.examples) dev_pairs.insert({e.text_a, e.text_b});
  const auto sr_original = downstream::read_glue(downstream::glue_task("rte"), w / "roles/dev_sr_original.tsv").examples;
  const auto sr = downstream::read_glue(downstream::glue_task("rte"), w / "roles/dev_shuffle_sr.tsv").examples;
  CHECK(sr_original.size() == sr.size());
  for (size_t k = 0; k < sr.size() && k < sr_original.size(); ++k) {
    CHECK(sr_original[k].label == 0);  // entailment
    CHECK(sr_original[k].text_b == sr[k].text_b);
    CHECK(dev_pairs.count({sr_original[k].text_a, sr_original[k].text_b}) == 1);
  }
  // Random: every word of an original premise in another order, the label kept.
  const auto swap_original = downstream::read_glue(downstream::glue_task("rte"), w / "roles/dev_swap_original.tsv").examples;
  const auto random = downstream::read_glue(downstream::glue_task("rte"), w / "roles/dev_shuffle_random.tsv").examples;
  REQUIRE(!random.empty());
  CHECK(random.size() <= swap_original.size());
  std::map<std::string, const downstream::GlueExample*> swap_by_hypothesis;
  for (const auto& e : swap_original) {
    CHECK(dev_pairs.count({e.text_a, e.text_b}) == 1);
    swap_by_hypothesis[e.text_b] = &e;
  }
  // A whole-sentence shuffle mostly changes the first word (a phrase shuffle rarely does).
  auto first_word = [](const std::string& text) { return text.substr(0, text.find(' ')); };
  int moved_far = 0;
  for (const auto& e : random) {
    auto it = swap_by_hypothesis.find(e.text_b);
    REQUIRE(it != swap_by_hypothesis.end());
    CHECK(sorted_words(it->second->text_a) == sorted_words(e.text_a));
    CHECK(it->second->text_a != e.text_a);
    CHECK(it->second->label == e.label);
    moved_far += first_word(it->second->text_a) != first_word(e.text_a);
  }
  CHECK(moved_far > static_cast<int>(random.size()) / 2);
}

TEST_CASE("synthetic tasks: SQuAD answers are where answer_start says, v2.0 adds unanswerable questions",
          "[synth][tasks]") {
  Written w(documents(200));
  for (const char* file : {"squad/dev-v1.1.json", "squad2/train-v2.0.json"}) {
    downstream::SquadDataset d = downstream::read_squad(w / file);
    int impossible = 0;
    for (const auto& q : d.questions) {
      const auto& p = d.paragraphs[q.paragraph];
      if (q.answers.empty()) {
        ++impossible;
        continue;
      }
      for (const auto& a : q.answers) {
        // ASCII words: code points are bytes.
        CHECK(p.context.substr(a.start, a.text.size()) == a.text);
        int64_t begin = 0, end = 0;
        CHECK(downstream::squad_answer_span(p, a, begin, end));  // run_squad's check keeps it
      }
    }
    CHECK((impossible > 0) == (std::string(file).find("v2.0") != std::string::npos));
  }
}

namespace {

// What the bracketed tree says, read off its text on its own: the depth is
// the deepest nesting of brackets (the root S at 1, a tag's bracket the
// deepest), the top constituents the labels of the brackets opened at depth 2.
struct FromBrackets {
  int depth = 0;
  std::string top;
};

FromBrackets from_brackets(const std::string& tree) {
  FromBrackets r;
  int level = 0;
  for (size_t i = 0; i < tree.size(); ++i) {
    if (tree[i] == ')') --level;
    if (tree[i] != '(') continue;
    r.depth = std::max(r.depth, ++level);
    if (level == 2) r.top += (r.top.empty() ? "" : "_") + tree.substr(i + 1, tree.find(' ', i) - i - 1);
  }
  return r;
}

}  // namespace

TEST_CASE("synthetic tasks: SentEval's multi-class probes read back, labelled as their sentences say",
          "[synth][tasks][senteval]") {
  const auto docs = documents(300);
  Written w(docs);
  std::map<std::string, std::set<std::string>> depths, tops;  // a sentence's text may recur with another tree
  for (const auto& doc : docs)
    for (const auto& s : doc.sentences) {
      const FromBrackets b = from_brackets(synth::bracketed(s));
      std::string text;
      for (const auto& word : s.words) text += (text.empty() ? "" : " ") + word;
      depths[text].insert(std::to_string(b.depth));
      tops[text].insert(b.top);
    }
  auto read = [&](const std::string& name) {
    downstream::SentEvalData d = downstream::read_senteval(w / (name + "/" + name + ".txt"));
    CHECK(d.train.examples.size() > d.dev.examples.size());
    CHECK(!d.dev.examples.empty());
    CHECK(!d.test.examples.empty());
    return d;
  };
  auto each = [](const downstream::SentEvalData& d, const std::function<void(const std::string&, const std::string&)>& f) {
    for (const auto* set : {&d.train, &d.dev, &d.test})
      for (const auto& e : set->examples) f(e.text_a, d.task->labels[static_cast<size_t>(e.label)]);
  };

  // Length: 6 bins of 4 words from 5 to 28 (Conneau et al.'s equal-width bins).
  const auto length = read("sentence_length");
  CHECK(length.task->labels == std::vector<std::string>{"0", "1", "2", "3", "4", "5"});
  each(length, [](const std::string& text, const std::string& label) {
    const int words = static_cast<int>(sorted_words(text).size());
    const int edges[] = {5, 9, 13, 17, 21, 25, 29};
    int bin = -1;
    for (int k = 0; k < 6; ++k)
      if (edges[k] <= words && words < edges[k + 1]) bin = k;
    CHECK(label == std::to_string(bin));
  });
  const auto depth = read("tree_depth");
  CHECK(depth.task->labels.size() >= 5);
  each(depth, [&](const std::string& text, const std::string& label) { CHECK(depths.at(text).count(label) == 1); });
  const auto top = read("top_constituents");
  CHECK(top.task->labels.size() >= 2);
  CHECK(top.task->labels.size() <= 20);
  each(top, [&](const std::string& text, const std::string& label) {
    CHECK((label == "OTHER" || tops.at(text).count(label) == 1));
  });
  // Word content: the label is a word the sentence holds, and it holds no other of the classes.
  const auto content = read("word_content");
  CHECK(content.task->labels.size() > 20);
  CHECK(content.task->labels.size() <= 100);
  const std::set<std::string> classes(content.task->labels.begin(), content.task->labels.end());
  each(content, [&](const std::string& text, const std::string& label) {
    int held = 0;
    for (const auto& word : sorted_words(text)) held += classes.count(word);
    CHECK(held == 1);
    CHECK(classes.count(label) == 1);
    const auto words = sorted_words(text);
    CHECK(std::count(words.begin(), words.end(), label) == 1);
  });
}

TEST_CASE("synthetic tasks: deterministic per seed, split by document", "[synth][tasks]") {
  const auto docs = documents(120);
  synth::TaskOptions o;
  const auto a = synth::make_tasks(docs, o), b = synth::make_tasks(docs, o);
  CHECK(a == b);
  o.seed = 2;
  CHECK(synth::make_tasks(docs, o) != a);
  // No sentence of a dev premise is a training premise (documents do not repeat sentences often;
  // a collision would need the same sentence drawn in two documents).
  Written w(docs);
  const auto& rte = downstream::glue_task("rte");
  std::set<std::string> train;
  for (const auto& e : downstream::read_glue(rte, w / "roles/train.tsv").examples) train.insert(e.text_a);
  int shared = 0, dev = 0;
  for (const auto& e : downstream::read_glue(rte, w / "roles/dev.tsv").examples) shared += train.count(e.text_a), ++dev;
  CHECK(dev > 0);
  CHECK(shared * 20 < dev);
}

TEST_CASE("synthetic tasks: too few documents and an existing output are refused", "[synth][tasks][errors]") {
  CHECK_THROWS_WITH(synth::make_tasks(documents(2), {}), Catch::Matchers::Contains("at least 3"));
  Written w(documents(10));
  synth::TaskOptions o;
  CHECK_THROWS_WITH(synth::write_tasks(documents(10), o, w.dir / "tasks", false, {}),
                    Catch::Matchers::Contains("--overwrite"));
}

TEST_CASE("synthetic tasks: task_folders names exactly the folders make_tasks writes", "[synth][tasks]") {
  std::set<std::string> written, listed;
  for (const auto& [path, text] : synth::make_tasks(documents(30), {}))
    if (path.find('/') != std::string::npos) written.insert(path.substr(0, path.find('/')));
  for (const synth::TaskFolder& f : synth::task_folders()) listed.insert(f.folder);
  CHECK(listed == written);
}

namespace {

// A bag-of-words baseline, written for these tests: logistic regression on
// sparse word features (feature -> value), trained by plain gradient steps.
// It sees no order at all, so what it solves a bag of words solves.
using Features = std::map<std::string, double>;

struct BagOfWords {
  std::map<std::string, double> weight;
  double bias = 0;
  double logit(const Features& x) const {
    double z = bias;
    for (const auto& [f, v] : x) {
      const auto it = weight.find(f);
      if (it != weight.end()) z += it->second * v;
    }
    return z;
  }
  void train(const std::vector<std::pair<Features, int>>& examples, int epochs = 30, double rate = 0.5) {
    for (int e = 0; e < epochs; ++e)
      for (const auto& [x, y] : examples) {
        const double p = 1 / (1 + std::exp(-logit(x)));
        const double g = p - y;
        bias -= rate * g;
        for (const auto& [f, v] : x) weight[f] -= rate * g * v;
      }
  }
  double accuracy(const std::vector<std::pair<Features, int>>& examples) const {
    int right = 0;
    for (const auto& [x, y] : examples) right += (logit(x) > 0) == (y == 1);
    return static_cast<double>(right) / static_cast<double>(examples.size());
  }
};

std::multiset<std::string> bag(const std::string& text) {
  const std::vector<std::string> words = sorted_words(text);
  return {words.begin(), words.end()};
}

// One sentence: each word's count.
Features counts(const std::string& text) {
  Features x;
  for (const std::string& w : sorted_words(text)) x[w] += 1;
  return x;
}

// A pair: the lexical overlap of the two bags, as MRPC's word-overlap
// baselines measure it: how many words the second adds to the first, and how
// many of the first it drops.
Features difference(const std::string& a, const std::string& b) {
  const std::multiset<std::string> first = bag(a), second = bag(b);
  std::vector<std::string> added, dropped;
  std::set_difference(second.begin(), second.end(), first.begin(), first.end(), std::back_inserter(added));
  std::set_difference(first.begin(), first.end(), second.begin(), second.end(), std::back_inserter(dropped));
  return {{"added", static_cast<double>(added.size())}, {"dropped", static_cast<double>(dropped.size())}};
}

std::vector<std::pair<Features, int>> featured(const downstream::GlueSet& set, Features (*single)(const std::string&),
                                               Features (*pair)(const std::string&, const std::string&)) {
  std::vector<std::pair<Features, int>> out;
  for (const auto& e : set.examples) out.emplace_back(pair ? pair(e.text_a, e.text_b) : single(e.text_a), e.label);
  return out;
}

double label_share(const downstream::GlueSet& set) {
  int ones = 0;
  for (const auto& e : set.examples) ones += e.label == 1;
  return static_cast<double>(ones) / static_cast<double>(set.examples.size());
}

}  // namespace

TEST_CASE("synthetic tasks: a bag of words solves sentiment and overlap, and is at chance on roles",
          "[synth][tasks]") {
  Written w(documents(800));
  struct Case {
    const char* folder;
    const char* task;
    bool pair;
  };
  for (const Case& c : {Case{"sentiment", "sst2", false}, Case{"overlap", "mrpc", true}, Case{"roles", "rte", true}}) {
    INFO(c.folder);
    const auto& task = downstream::glue_task(c.task);
    const auto train = downstream::read_glue(task, w / (std::string(c.folder) + "/train.tsv"));
    const auto dev = downstream::read_glue(task, w / (std::string(c.folder) + "/dev.tsv"));
    REQUIRE(train.examples.size() > 1000);
    REQUIRE(dev.examples.size() > 100);
    // Both labels common: a constant guess is far from what the baseline must reach.
    CHECK(label_share(train) > 0.3);
    CHECK(label_share(train) < 0.7);
    BagOfWords model;
    model.train(featured(train, counts, c.pair ? difference : nullptr));
    const double accuracy = model.accuracy(featured(dev, counts, c.pair ? difference : nullptr));
    if (std::string(c.folder) == "roles")
      CHECK(accuracy < 0.6);  // the same words either way: order is all there is
    else
      CHECK(accuracy > 0.95);
  }
}

TEST_CASE("synthetic tasks: sentiment and overlap labels depend on the bag of words alone", "[synth][tasks]") {
  Written w(documents(200));
  // Two sentiment sentences with the same words have the same label.
  std::map<std::multiset<std::string>, int> sentiment;
  for (const char* split : {"train", "dev"})
    for (const auto& e : downstream::read_glue(downstream::glue_task("sst2"), w / (std::string("sentiment/") + split + ".tsv")).examples) {
      const auto [it, fresh] = sentiment.emplace(bag(e.text_a), e.label);
      CHECK((fresh || it->second == e.label));
    }
  // Overlap: an equivalent pair's second sentence drops only words of the
  // first; a non-equivalent one holds exactly one word the first does not.
  int equivalent = 0, replaced = 0;
  for (const auto& e : downstream::read_glue(downstream::glue_task("mrpc"), w / "overlap/train.tsv").examples) {
    const std::multiset<std::string> first = bag(e.text_a), second = bag(e.text_b);
    std::vector<std::string> added;
    std::set_difference(second.begin(), second.end(), first.begin(), first.end(), std::back_inserter(added));
    if (e.label == 1) {
      CHECK(added.empty());
      ++equivalent;
    } else {
      CHECK(added.size() == 1);
      ++replaced;
    }
  }
  CHECK(equivalent > 100);
  CHECK(replaced > 100);
}

TEST_CASE("synthetic tasks: subject_number's role swap exchanges subject and object of different numbers",
          "[synth][tasks]") {
  const std::vector<synth::Document> docs = documents(800);
  Written w(docs);
  const auto& sst2 = downstream::glue_task("sst2");
  const auto original = downstream::read_glue(sst2, w / "subject_number/dev_roles_original.tsv").examples;
  const auto swapped = downstream::read_glue(sst2, w / "subject_number/dev_roles_swapped.tsv").examples;
  REQUIRE(original.size() == swapped.size());
  REQUIRE(original.size() > 30);  // 42 from these 800 documents' dev split
  std::map<std::string, int> dev_label;
  for (const auto& e : downstream::read_glue(sst2, w / "subject_number/dev.tsv").examples) dev_label[e.text_a] = e.label;
  std::map<std::string, const synth::Sentence*> by_text;
  for (const synth::Document& d : docs)
    for (const synth::Sentence& s : d.sentences) {
      std::string text;
      for (const std::string& word : s.words) text += (text.empty() ? "" : " ") + word;
      by_text[text] = &s;
    }
  for (size_t k = 0; k < original.size(); ++k) {
    INFO(original[k].text_a << " / " << swapped[k].text_a);
    // The original is a dev sentence with its own label; the swap keeps its words and flips the label.
    REQUIRE(dev_label.count(original[k].text_a) == 1);
    CHECK(dev_label[original[k].text_a] == original[k].label);
    CHECK(bag(original[k].text_a) == bag(swapped[k].text_a));
    CHECK(original[k].text_a != swapped[k].text_a);
    CHECK(swapped[k].label == 1 - original[k].label);
    // Its main verb is an active past, whose form says nothing of the subject's number.
    const synth::Sentence* s = by_text.at(original[k].text_a);
    CHECK(s->clauses[0].tense == synth::Tense::Past);
    CHECK_FALSE(s->clauses[0].passive);
  }
  // A bag of words trained on the task gives every pair one answer: its answers never change.
  BagOfWords model;
  model.train(featured(downstream::read_glue(sst2, w / "subject_number/train.tsv"), counts, nullptr));
  const auto before = featured(downstream::read_glue(sst2, w / "subject_number/dev_roles_original.tsv"), counts, nullptr);
  const auto after = featured(downstream::read_glue(sst2, w / "subject_number/dev_roles_swapped.tsv"), counts, nullptr);
  for (size_t k = 0; k < before.size(); ++k) CHECK((model.logit(before[k].first) > 0) == (model.logit(after[k].first) > 0));
}
