// The synthetic language on disk: corpus.txt, annotations.jsonl, meta.json.
//
// annotations.jsonl has one JSON object per line, per sentence, in corpus order:
//   {"doc": 0, "sent": 0,                      document index, sentence index within it
//    "words": [...], "tags": [...],            tokens as in corpus.txt; Penn POS tags
//    "heads": [...], "deprels": [...],         per word: head index (-1 = root), UD label
//    "tree": "(S (NP ...) ...)",               Penn Treebank brackets
//    "constituents": [["S", 0, 9], ...],       the same phrases as [label, start, end), preorder
//    "clauses": [{"verb": 2, "kind": "main", "tense": "past", "voice": "active",
//                 "agent": [0, 2], "patient": [3, 5]}]}   spans [start, end) or null
#include <cstdlib>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "base/file_io.h"
#include "base/output.h"
#include "synth/synth.h"

namespace ordo::synth {

namespace {

json::Value span_json(const std::optional<Span>& s) {
  if (!s) return json::Value();
  json::Value v = json::Value::array();
  v.push_back(s->start);
  v.push_back(s->end);
  return v;
}

// Reading: every access names the key it was reading when it fails.
const json::Value& member(const json::Value& object, const char* key) {
  ORDO_CHECK(object.is_object(), "expected a JSON object, got ", json::type_name(object.type()));
  const json::Value* v = object.find(key);
  ORDO_CHECK(v, "missing key '", key, "'");
  return *v;
}

template <class Read>
auto read_as(const json::Value& v, const char* key, Read read) {
  try {
    return read(v);
  } catch (const Error& e) {
    throw Error(std::string("'") + key + "': " + e.what());
  }
}

int as_index(const json::Value& v) {
  int64_t n = v.as_int();
  ORDO_CHECK(n >= -1 && n <= 1000000, "index ", n, " is out of range");
  return static_cast<int>(n);
}

std::vector<std::string> strings(const json::Value& object, const char* key) {
  return read_as(member(object, key), key, [](const json::Value& a) {
    std::vector<std::string> out;
    for (const json::Value& s : a.as_array()) out.push_back(s.as_string());
    return out;
  });
}

std::optional<Span> read_span(const json::Value& object, const char* key) {
  return read_as(member(object, key), key, [](const json::Value& v) -> std::optional<Span> {
    if (v.is_null()) return std::nullopt;
    ORDO_CHECK(v.is_array() && v.size() == 2, "expected null or [start, end]");
    return Span{as_index(v[0]), as_index(v[1])};
  });
}

template <class Enum, size_t N>
Enum read_enum(const json::Value& object, const char* key, const Enum (&values)[N]) {
  const std::string& text = read_as(member(object, key), key, [](const json::Value& v) -> const std::string& {
    return v.as_string();
  });
  std::string known;
  for (Enum e : values) {
    if (text == name(e)) return e;
    known += std::string(known.empty() ? "" : ", ") + name(e);
  }
  throw Error(std::string("'") + key + "': unknown value '" + text + "' (expected one of " + known + ")");
}

constexpr ClauseKind kKinds[] = {ClauseKind::Main, ClauseKind::Coordinate, ClauseKind::Relative,
                                 ClauseKind::Complement, ClauseKind::Adverbial};
constexpr Tense kTenses[] = {Tense::Past, Tense::Present};

Clause read_clause(const json::Value& v) {
  Clause c;
  c.verb = read_as(member(v, "verb"), "verb", as_index);
  c.kind = read_enum(v, "kind", kKinds);
  c.tense = read_enum(v, "tense", kTenses);
  const std::string& voice = read_as(member(v, "voice"), "voice",
                                     [](const json::Value& x) -> const std::string& { return x.as_string(); });
  ORDO_CHECK(voice == "active" || voice == "passive", "'voice': expected 'active' or 'passive', got '", voice, "'");
  c.passive = voice == "passive";
  c.agent = read_span(v, "agent");
  c.patient = read_span(v, "patient");
  return c;
}

// Phrases in preorder from [label, start, end]: a phrase's parent is the
// nearest earlier phrase that contains it.
std::vector<Constituent> read_constituents(const json::Value& v) {
  std::vector<Constituent> tree;
  std::vector<int> path;  // the current phrase and its ancestors
  for (const json::Value& c : v.as_array()) {
    ORDO_CHECK(c.is_array() && c.size() == 3, "expected [label, start, end] for each phrase");
    Constituent k{c[0].as_string(), {as_index(c[1]), as_index(c[2])}, -1};
    while (!path.empty() && !(tree[path.back()].span.start <= k.span.start &&
                              k.span.end <= tree[path.back()].span.end))
      path.pop_back();
    k.parent = path.empty() ? -1 : path.back();
    ORDO_CHECK(tree.empty() || k.parent >= 0, "phrase ", tree.size(), " (", k.label,
               ") lies outside the root");
    path.push_back(static_cast<int>(tree.size()));
    tree.push_back(k);
  }
  return tree;
}

// Lengths of the arcs (|head - dependent|, root excluded) by value.
void count_lengths(const Sentence& s, std::map<int, int64_t>& lengths) {
  for (size_t i = 0; i < s.arcs.size(); ++i)
    if (s.arcs[i].head >= 0) ++lengths[std::abs(s.arcs[i].head - static_cast<int>(i))];
}

json::Value length_histogram(const std::map<int, int64_t>& lengths) {
  constexpr int kLast = 10;  // lengths from 10 on share one bin
  json::Value h = json::Value::object();
  for (int len = 1; len < kLast; ++len) h[std::to_string(len)] = lengths.count(len) ? lengths.at(len) : 0;
  int64_t tail = 0;
  for (const auto& [len, n] : lengths)
    if (len >= kLast) tail += n;
  h[std::to_string(kLast) + "+"] = tail;
  return h;
}

json::Value meta(int64_t want, uint64_t seed, const Config& config, const Grammar& grammar,
                 const Counts& counts, const std::map<int, int64_t>& lengths) {
  const Lexicon& lex = grammar.lexicon();
  int64_t animate = 0;
  for (const Noun& n : lex.nouns) animate += n.kind == NounKind::Animate;
  json::Value m = json::Value::object();
  m["generator"] = "ordo data synth";
  m["grammar_version"] = kGrammarVersion;
  m["seed"] = static_cast<int64_t>(seed);
  m["sentences_requested"] = want;
  m["documents"] = counts.documents;
  m["sentences"] = counts.sentences;
  m["words"] = counts.words;
  m["files"]["corpus"] = "corpus.txt";
  m["files"]["annotations"] = "annotations.jsonl";
  m["text"] = "lower case; tokens separated by single spaces; the final '.' is a token; one sentence "
              "a line, a blank line between documents";
  m["lexicon"]["source"] = "WordNet 3.0 via scripts/gen_lexicon.py";
  m["lexicon"]["animate_nouns"] = animate;
  m["lexicon"]["thing_nouns"] = static_cast<int64_t>(lex.nouns.size()) - animate;
  m["lexicon"]["verbs"] = lex.verbs.size();
  m["lexicon"]["adjectives"] = lex.adjectives.size();
  m["lexicon"]["adverbs"] = lex.adverbs.size();
  m["config"] = to_json(config);
  m["dependency_lengths"] = length_histogram(lengths);
  return m;
}

}  // namespace

std::string to_json_line(const Sentence& s, int64_t doc, int64_t index) {
  json::Value v = json::Value::object();
  v["doc"] = doc;
  v["sent"] = index;
  json::Value words = json::Value::array(), tags = json::Value::array();
  json::Value heads = json::Value::array(), deprels = json::Value::array();
  for (size_t i = 0; i < s.words.size(); ++i) {
    words.push_back(s.words[i]);
    tags.push_back(s.tags[i]);
    heads.push_back(s.arcs[i].head);
    deprels.push_back(s.arcs[i].label);
  }
  v["words"] = std::move(words);
  v["tags"] = std::move(tags);
  v["heads"] = std::move(heads);
  v["deprels"] = std::move(deprels);
  v["tree"] = bracketed(s);
  json::Value phrases = json::Value::array();
  for (const Constituent& c : s.tree) {
    json::Value p = json::Value::array();
    p.push_back(c.label);
    p.push_back(c.span.start);
    p.push_back(c.span.end);
    phrases.push_back(std::move(p));
  }
  v["constituents"] = std::move(phrases);
  json::Value clauses = json::Value::array();
  for (const Clause& c : s.clauses) {
    json::Value k = json::Value::object();
    k["verb"] = c.verb;
    k["kind"] = name(c.kind);
    k["tense"] = name(c.tense);
    k["voice"] = c.passive ? "passive" : "active";
    k["agent"] = span_json(c.agent);
    k["patient"] = span_json(c.patient);
    clauses.push_back(std::move(k));
  }
  v["clauses"] = std::move(clauses);
  return json::dump(v);
}

Sentence from_json_line(const std::string& line, int64_t* doc, int64_t* index) {
  json::Value v = json::parse(line);
  ORDO_CHECK(v.is_object(), "expected a JSON object, got ", json::type_name(v.type()));
  Sentence s;
  s.words = strings(v, "words");
  s.tags = strings(v, "tags");
  std::vector<std::string> labels = strings(v, "deprels");
  std::vector<int> heads = read_as(member(v, "heads"), "heads", [](const json::Value& a) {
    std::vector<int> out;
    for (const json::Value& h : a.as_array()) out.push_back(as_index(h));
    return out;
  });
  ORDO_CHECK(heads.size() == labels.size(), "there are ", heads.size(), " heads and ", labels.size(), " deprels");
  for (size_t i = 0; i < heads.size(); ++i) s.arcs.push_back({heads[i], labels[i]});
  s.tree = read_as(member(v, "constituents"), "constituents", read_constituents);
  s.clauses = read_as(member(v, "clauses"), "clauses", [](const json::Value& a) {
    std::vector<Clause> out;
    for (const json::Value& c : a.as_array()) out.push_back(read_clause(c));
    return out;
  });
  check(s);
  const std::string& tree = read_as(member(v, "tree"), "tree",
                                    [](const json::Value& t) -> const std::string& { return t.as_string(); });
  ORDO_CHECK(tree == bracketed(s), "'tree' does not match the words, tags and constituents: it is \"", tree,
             "\", they give \"", bracketed(s), "\"");
  int64_t d = read_as(member(v, "doc"), "doc", [](const json::Value& x) { return x.as_int(); });
  int64_t k = read_as(member(v, "sent"), "sent", [](const json::Value& x) { return x.as_int(); });
  if (doc) *doc = d;
  if (index) *index = k;
  return s;
}

std::vector<Document> read_annotations(const std::string& path) {
  std::string text = read_file(path);
  std::vector<Document> docs;
  size_t line_number = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    try {
      ORDO_CHECK(!line.empty(), "empty line (expected one JSON object per sentence)");
      int64_t doc = 0, index = 0;
      Sentence s = from_json_line(line, &doc, &index);
      // Documents in order from 0, sentences in order from 0 within each.
      int64_t last_doc = static_cast<int64_t>(docs.size()) - 1;
      int64_t next_sent = docs.empty() ? 0 : static_cast<int64_t>(docs.back().sentences.size());
      bool same = !docs.empty() && doc == last_doc && index == next_sent;
      bool next = doc == last_doc + 1 && index == 0;
      ORDO_CHECK(same || next, "doc ", doc, ", sent ", index, " is out of order: expected ",
                 docs.empty() ? "" : "doc " + std::to_string(last_doc) + ", sent " +
                                         std::to_string(next_sent) + " or ",
                 "doc ", last_doc + 1, ", sent 0");
      if (next) docs.emplace_back();
      docs.back().sentences.push_back(std::move(s));
    } catch (const Error& e) {
      throw Error(path + ":" + std::to_string(line_number) + ": " + e.what());
    }
  }
  ORDO_CHECK(!docs.empty(), path, ": no sentences");
  return docs;
}

Counts write_synthetic(const std::string& dir, int64_t sentences, uint64_t seed, const Config& config,
                       bool overwrite) {
  ORDO_CHECK(sentences >= 1, "the number of sentences must be at least 1, got ", sentences);
  Grammar grammar(config, seed);  // checks the config before anything is written
  check_output(dir, OutputKind::folder, overwrite, {});

  std::string corpus, annotations;
  Counts counts;
  std::map<int, int64_t> lengths;
  while (counts.sentences < sentences) {
    Document d = grammar.next_document();
    if (counts.documents > 0) corpus += '\n';
    for (size_t i = 0; i < d.sentences.size() && counts.sentences < sentences; ++i) {
      const Sentence& s = d.sentences[i];
      for (size_t w = 0; w < s.words.size(); ++w) {
        if (w) corpus += ' ';
        corpus += s.words[w];
      }
      corpus += '\n';
      annotations += to_json_line(s, counts.documents, static_cast<int64_t>(i));
      annotations += '\n';
      count_lengths(s, lengths);
      counts.words += static_cast<int64_t>(s.words.size());
      ++counts.sentences;
    }
    ++counts.documents;
  }
  // Built beside dir and swapped in whole (base/output.h); meta.json last: its presence says the other two are complete.
  write_folder(dir, {{"annotations.jsonl", annotations},
                     {"corpus.txt", corpus},
                     {"meta.json", json::dump(meta(sentences, seed, config, grammar, counts, lengths), 2) + "\n"}});
  return counts;
}

}  // namespace ordo::synth
