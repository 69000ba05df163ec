// A synthetic sentence's annotations: names, equality, brackets and the
// consistency check every generated or re-read sentence passes.
#include <algorithm>

#include "base/error.h"
#include "synth/synth.h"

namespace ordo::synth {

bool operator==(const Constituent& a, const Constituent& b) {
  return a.label == b.label && a.span == b.span && a.parent == b.parent;
}
bool operator==(const Arc& a, const Arc& b) { return a.head == b.head && a.label == b.label; }
bool operator==(const Clause& a, const Clause& b) {
  return a.verb == b.verb && a.kind == b.kind && a.tense == b.tense && a.passive == b.passive &&
         a.agent == b.agent && a.patient == b.patient;
}
bool operator==(const Sentence& a, const Sentence& b) {
  return a.words == b.words && a.tags == b.tags && a.tree == b.tree && a.arcs == b.arcs &&
         a.clauses == b.clauses;
}

const char* name(ClauseKind kind) {
  switch (kind) {
    case ClauseKind::Main: return "main";
    case ClauseKind::Coordinate: return "coordinate";
    case ClauseKind::Relative: return "relative";
    case ClauseKind::Complement: return "complement";
    case ClauseKind::Adverbial: return "adverbial";
  }
  return "?";
}

const char* name(Tense tense) { return tense == Tense::Past ? "past" : "present"; }

namespace {

void render(const Sentence& s, const std::vector<std::vector<int>>& children, int node,
            std::string& out) {
  out += '(';
  out += s.tree[node].label;
  size_t next_child = 0;
  const auto& kids = children[node];
  for (int w = s.tree[node].span.start; w < s.tree[node].span.end;) {
    out += ' ';
    if (next_child < kids.size() && s.tree[kids[next_child]].span.start == w) {
      int child = kids[next_child++];
      render(s, children, child, out);
      w = s.tree[child].span.end;
    } else {
      out += '(' + s.tags[w] + ' ' + s.words[w] + ')';
      ++w;
    }
  }
  out += ')';
}

void check_words(const Sentence& s) {
  size_t n = s.words.size();
  ORDO_CHECK(n > 0, "a sentence needs at least one word");
  for (size_t i = 0; i < n; ++i) {
    const std::string& w = s.words[i];
    ORDO_CHECK(!w.empty() && w.find_first_of(" \t\n\r") == std::string::npos, "word ", i, " ('", w,
               "') is empty or contains white space");
  }
  ORDO_CHECK(s.tags.size() == n, "there are ", s.tags.size(), " tags for ", n, " words");
  ORDO_CHECK(s.arcs.size() == n, "there are ", s.arcs.size(), " arcs for ", n, " words");
}

void check_arcs(const Sentence& s) {
  int n = static_cast<int>(s.words.size());
  int roots = 0;
  for (int i = 0; i < n; ++i) {
    const Arc& a = s.arcs[i];
    ORDO_CHECK(a.head >= -1 && a.head < n && a.head != i, "word ", i, " has head ", a.head,
               ", expected -1 (the root) or another word in [0, ", n, ")");
    ORDO_CHECK(!a.label.empty(), "word ", i, " has an empty dependency label");
    ORDO_CHECK((a.head == -1) == (a.label == "root"), "word ", i, " has head ", a.head,
               " and label '", a.label, "': the root, and only the root, is labelled 'root'");
    roots += a.head == -1;
  }
  ORDO_CHECK(roots == 1, "the arcs have ", roots, " roots, expected exactly 1");
  // With one root and one head per word, the arcs form a tree unless a head
  // chain loops; a chain longer than n words must loop.
  for (int i = 0; i < n; ++i) {
    int w = i;
    for (int steps = 0; w != -1; ++steps) {
      ORDO_CHECK(steps <= n, "the heads of word ", i, " form a cycle");
      w = s.arcs[w].head;
    }
  }
}

void check_tree(const Sentence& s) {
  int n = static_cast<int>(s.words.size());
  ORDO_CHECK(!s.tree.empty(), "the sentence has no constituency tree");
  const Constituent& root = s.tree[0];
  ORDO_CHECK(root.parent == -1 && root.span.start == 0 && root.span.end == n, "the tree's root ",
             root.label, " [", root.span.start, ", ", root.span.end, ") with parent ", root.parent,
             " does not span the sentence [0, ", n, ")");
  for (size_t i = 0; i < s.tree.size(); ++i) {
    const Constituent& c = s.tree[i];
    ORDO_CHECK(!c.label.empty(), "phrase ", i, " has no label");
    ORDO_CHECK(c.span.start < c.span.end, "phrase ", i, " (", c.label, ") is empty: [",
               c.span.start, ", ", c.span.end, ")");
    if (i == 0) continue;
    int p = c.parent;
    ORDO_CHECK(p >= 0 && static_cast<size_t>(p) < i, "phrase ", i, " (", c.label, ") has parent ",
               p, ", expected an earlier phrase");
    // Preorder: the parent is the previous phrase or one of its ancestors,
    // and that ancestor's child on the way is the previous sibling.
    int sibling = -1;
    for (int a = static_cast<int>(i) - 1; a != p; a = s.tree[a].parent) {
      ORDO_CHECK(a != -1, "phrase ", i, " (", c.label, ") is out of preorder");
      sibling = a;
    }
    const Span& ps = s.tree[p].span;
    ORDO_CHECK(ps.start <= c.span.start && c.span.end <= ps.end, "phrase ", i, " (", c.label, ") [",
               c.span.start, ", ", c.span.end, ") is not inside its parent ", s.tree[p].label,
               " [", ps.start, ", ", ps.end, ")");
    ORDO_CHECK(sibling == -1 || s.tree[sibling].span.end <= c.span.start, "phrase ", i, " (",
               c.label, ") overlaps the phrase before it");
  }
}

bool is_np(const Sentence& s, const Span& span) {
  return std::any_of(s.tree.begin(), s.tree.end(),
                     [&](const Constituent& c) { return c.label == "NP" && c.span == span; });
}

void check_clauses(const Sentence& s) {
  int n = static_cast<int>(s.words.size());
  for (size_t k = 0; k < s.clauses.size(); ++k) {
    const Clause& c = s.clauses[k];
    ORDO_CHECK(c.verb >= 0 && c.verb < n, "clause ", k, " has verb ", c.verb, ", not a word in [0, ",
               n, ")");
    ORDO_CHECK(k == 0 || s.clauses[k - 1].verb < c.verb, "clause ", k,
               " is out of order: clauses are listed by their verbs' positions");
    for (const auto& [role, span] : {std::pair{"agent", c.agent}, std::pair{"patient", c.patient}}) {
      if (!span) continue;
      ORDO_CHECK(is_np(s, *span), "clause ", k, " (verb '", s.words[c.verb], "'): its ", role, " [",
                 span->start, ", ", span->end, ") is not an NP of the tree");
    }
  }
}

}  // namespace

std::string bracketed(const Sentence& s) {
  if (s.tree.empty()) return "";
  std::vector<std::vector<int>> children(s.tree.size());
  for (size_t i = 1; i < s.tree.size(); ++i) children[s.tree[i].parent].push_back(static_cast<int>(i));
  std::string out;
  render(s, children, 0, out);
  return out;
}

void check(const Sentence& s) {
  check_words(s);
  check_arcs(s);
  check_tree(s);
  check_clauses(s);
}

std::vector<std::string> swap_spans(const std::vector<std::string>& words, Span a, Span b) {
  if (b.start < a.start) std::swap(a, b);
  ORDO_CHECK(0 <= a.start && a.start < a.end && a.end <= b.start && b.start < b.end &&
                 b.end <= static_cast<int>(words.size()),
             "swap_spans: spans [", a.start, ", ", a.end, ") and [", b.start, ", ", b.end,
             ") must be non-empty, disjoint and inside the ", words.size(), " words");
  std::vector<std::string> out(words.begin(), words.begin() + a.start);
  out.insert(out.end(), words.begin() + b.start, words.begin() + b.end);
  out.insert(out.end(), words.begin() + a.end, words.begin() + b.start);
  out.insert(out.end(), words.begin() + a.start, words.begin() + a.end);
  out.insert(out.end(), words.begin() + b.end, words.end());
  return out;
}

}  // namespace ordo::synth
