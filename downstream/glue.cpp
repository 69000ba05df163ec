#include "downstream/glue.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "base/error.h"
#include "base/file_io.h"
#include "downstream/tsv.h"

namespace ordo::downstream {

const char* metric_key(GlueMetric m) {
  switch (m) {
    case GlueMetric::accuracy: return "accuracy";
    case GlueMetric::f1: return "f1";
    case GlueMetric::mcc: return "mcc";
    case GlueMetric::pearson: return "pearson";
    case GlueMetric::spearman: return "spearman";
  }
  return "?";
}

int GlueTask::label_index(const std::string& label) const {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == label) return static_cast<int>(i);
  return -1;
}

std::string GlueTask::label_list() const { return join_fields(labels, ", "); }

const std::vector<GlueTask>& glue_tasks() {
  using M = GlueMetric;
  const std::vector<std::string> binary{"0", "1"}, nli{"contradiction", "entailment", "neutral"},
      entail{"entailment", "not_entailment"};
  static const std::vector<GlueTask> tasks{
      {"cola", "CoLA", binary, false, {M::mcc}},
      {"sst2", "SST-2", binary, false, {M::accuracy}},
      {"mrpc", "MRPC", binary, true, {M::accuracy, M::f1}},
      {"stsb", "STS-B", {}, true, {M::pearson, M::spearman}},
      {"qqp", "QQP", binary, true, {M::accuracy, M::f1}},
      {"mnli", "MNLI", nli, true, {M::accuracy}},
      {"qnli", "QNLI", entail, true, {M::accuracy}},
      {"rte", "RTE", entail, true, {M::accuracy}},
      {"wnli", "WNLI", binary, true, {M::accuracy}},
      {"ax", "AX", nli, true, {}},  // GLUE's diagnostic set: test only, scored by the GLUE server
  };
  return tasks;
}

const GlueTask& glue_task(const std::string& name) {
  std::string names;
  for (const GlueTask& t : glue_tasks()) {
    if (t.name == name) return t;
    names += (names.empty() ? "" : " ") + t.name;
  }
  throw Error("unknown GLUE task '" + name + "' (the tasks: " + names + ")");
}

namespace {

// One way a task's file can be laid out. Column indices are 0-based; -1: absent.
struct Layout {
  const char* split;                // "train/dev" or "test", for messages
  std::vector<std::string> header;  // empty: no header row (CoLA's train/dev)
  size_t columns = 0;               // without a header: the fixed column count
  bool gold_last = false;           // MNLI train/dev: the header's last entry ends a row of any
                                    // width >= header.size(), after label1..labelN
  int id = -1, a = -1, b = -1, label = -1;  // label -2: the last column
};

std::vector<Layout> layouts_of(const std::string& task) {
  const std::vector<std::string> mnli_head{"index",          "promptID",       "pairID",
                                           "genre",          "sentence1_binary_parse",
                                           "sentence2_binary_parse",          "sentence1_parse",
                                           "sentence2_parse", "sentence1",     "sentence2"};
  std::vector<std::string> mnli_labelled = mnli_head;
  mnli_labelled.push_back("gold_label");
  const std::vector<std::string> stsb_test{"index",   "genre",   "filename",  "year",     "old_index",
                                           "source1", "source2", "sentence1", "sentence2"};
  std::vector<std::string> stsb = stsb_test;
  stsb.push_back("score");
  if (task == "cola") return {{"train/dev", {}, 4, false, -1, 3, -1, 1}, {"test", {"index", "sentence"}, 0, false, 0, 1}};
  if (task == "sst2")
    return {{"train/dev", {"sentence", "label"}, 0, false, -1, 0, -1, 1}, {"test", {"index", "sentence"}, 0, false, 0, 1}};
  if (task == "mrpc")
    return {{"train/dev", {"Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"}, 0, false, -1, 3, 4, 0},
            {"test", {"index", "#1 ID", "#2 ID", "#1 String", "#2 String"}, 0, false, 0, 3, 4}};
  if (task == "stsb") return {{"train/dev", stsb, 0, false, 0, 7, 8, 9}, {"test", stsb_test, 0, false, 0, 7, 8}};
  if (task == "qqp")
    return {{"train/dev", {"id", "qid1", "qid2", "question1", "question2", "is_duplicate"}, 0, false, 0, 3, 4, 5},
            {"test", {"id", "question1", "question2"}, 0, false, 0, 1, 2}};
  if (task == "mnli")
    return {{"train/dev", mnli_labelled, 0, true, 0, 8, 9, -2}, {"test", mnli_head, 0, false, 0, 8, 9}};
  if (task == "qnli")
    return {{"train/dev", {"index", "question", "sentence", "label"}, 0, false, 0, 1, 2, 3},
            {"test", {"index", "question", "sentence"}, 0, false, 0, 1, 2}};
  if (task == "rte" || task == "wnli")
    return {{"train/dev", {"index", "sentence1", "sentence2", "label"}, 0, false, 0, 1, 2, 3},
            {"test", {"index", "sentence1", "sentence2"}, 0, false, 0, 1, 2}};
  if (task == "ax") return {{"test", {"index", "sentence1", "sentence2"}, 0, false, 0, 1, 2}};
  throw Error("internal error: no GLUE layout for task '" + task + "'");
}

std::string describe(const Layout& layout) {
  if (layout.header.empty())
    return std::to_string(layout.columns) + " columns and no header (" + layout.split + ")";
  std::string h = join_fields(layout.header);
  if (layout.gold_last) {
    const size_t n = layout.header.size();
    h = join_fields(std::vector<std::string>(layout.header.begin(), layout.header.end() - 1)) +
        "\\tlabel1..\\t" + layout.header[n - 1];
  }
  return "'" + h + "' (" + layout.split + ")";
}

bool header_matches(const Layout& layout, const std::vector<std::string>& fields) {
  if (layout.header.empty()) return false;
  if (!layout.gold_last) return fields == layout.header;
  const size_t n = layout.header.size();
  return fields.size() >= n && std::equal(layout.header.begin(), layout.header.end() - 1, fields.begin()) &&
         fields.back() == layout.header.back();
}

MnliSet mnli_set_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.find("mismatched") != std::string::npos) return MnliSet::mismatched;
  if (name.find("matched") != std::string::npos) return MnliSet::matched;
  return MnliSet::none;
}

// A finite number, the whole field (Python's float() less its leading and trailing spaces).
bool parse_number(const std::string& field, double& out) {
  if (field.empty()) return false;
  char* end = nullptr;
  out = std::strtod(field.c_str(), &end);
  return end == field.c_str() + field.size() && std::isfinite(out);
}

std::string shortest(double x) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
}

}  // namespace

GlueSet read_glue(const GlueTask& task, const std::string& path, const GlueReadOptions& options) {
  const std::vector<TsvRow> rows = read_tsv(path);
  ORDO_CHECK(!rows.empty(), path, ": empty file (a GLUE ", task.display, " file was expected)");
  const std::vector<Layout> layouts = layouts_of(task.name);
  const Layout* layout = nullptr;
  for (const Layout& l : layouts)
    if (header_matches(l, rows[0].fields)) layout = &l;
  if (!layout && layouts[0].header.empty()) layout = &layouts[0];  // CoLA train/dev: no header
  if (!layout) {
    std::string expected;
    for (const Layout& l : layouts) expected += (expected.empty() ? "" : " or ") + describe(l);
    throw Error(path + ":1: not a GLUE " + task.display + " file: its header is '" + join_fields(rows[0].fields) +
                "'; " + task.display + "'s files have " + expected);
  }
  GlueSet set;
  set.task = &task;
  set.path = path;
  set.labelled = layout->label != -1;
  if (task.name == "mnli") set.mnli = mnli_set_of(path);
  const size_t width = layout->header.empty() ? layout->columns : rows[0].fields.size();
  for (size_t r = layout->header.empty() ? 0 : 1; r < rows.size(); ++r) {
    const TsvRow& row = rows[r];
    if (row.fields.size() != width && options.skip_malformed_rows) {
      set.skipped_lines.push_back(row.line);
      continue;
    }
    ORDO_CHECK(row.fields.size() == width, path, ":", row.line, ": ", row.fields.size(), " column",
               row.fields.size() == 1 ? "" : "s", ", but ", task.display, "'s ", layout->split, " layout has ", width,
               " (", describe(*layout), ")");
    GlueExample e;
    e.line = row.line;
    e.id = layout->id >= 0 ? row.fields[layout->id] : std::to_string(set.examples.size());
    e.text_a = row.fields[layout->a];
    if (layout->b >= 0) e.text_b = row.fields[layout->b];
    if (set.labelled) {
      const std::string& label = row.fields[layout->label == -2 ? width - 1 : static_cast<size_t>(layout->label)];
      if (task.regression()) {
        ORDO_CHECK(parse_number(label, e.score), path, ":", row.line, ": the score '", label, "' is not a finite number");
      } else {
        e.label = task.label_index(label);
        ORDO_CHECK(e.label >= 0, path, ":", row.line, ": label '", label, "' is not one of ", task.display,
                   "'s labels (", task.label_list(), ")");
      }
    }
    set.examples.push_back(std::move(e));
  }
  ORDO_CHECK(!set.examples.empty(), path, ": no examples after the header");
  return set;
}

std::string glue_submission_name(const GlueTask& task, MnliSet mnli) {
  if (task.name == "mnli") {
    ORDO_CHECK(mnli != MnliSet::none, "an MNLI submission is MNLI-m.tsv (matched) or MNLI-mm.tsv (mismatched): "
                                      "say which (the data file's name holds 'matched' or 'mismatched')");
    return mnli == MnliSet::matched ? "MNLI-m.tsv" : "MNLI-mm.tsv";
  }
  return task.display + ".tsv";
}

void write_glue_submission(const std::string& path, const GlueSet& set, const GluePredictions& predictions) {
  const GlueTask& task = *set.task;
  const size_t n = task.regression() ? predictions.scores.size() : predictions.labels.size();
  ORDO_CHECK(n == set.examples.size(), "a ", task.display, " submission for ", set.path, " needs ",
             set.examples.size(), " predictions, got ", n);
  std::string out = "index\tprediction\n";
  for (size_t i = 0; i < n; ++i) {
    std::string value;
    if (task.regression()) {
      ORDO_CHECK(std::isfinite(predictions.scores[i]), "prediction ", i, " for ", set.path, " is not finite");
      value = shortest(predictions.scores[i]);
    } else {
      const int label = predictions.labels[i];
      ORDO_CHECK(label >= 0 && label < static_cast<int>(task.labels.size()), "prediction ", i, " for ", set.path,
                 " is class ", label, "; ", task.display, " has ", task.labels.size(), " (", task.label_list(), ")");
      value = task.labels[static_cast<size_t>(label)];
    }
    out += tsv_line({set.examples[i].id, value}, path);
  }
  write_file_atomic(path, out);
}

GluePredictions read_glue_submission(const std::string& path, const GlueSet& set) {
  const GlueTask& task = *set.task;
  const std::vector<TsvRow> rows = read_tsv(path);
  const std::vector<std::string> header{"index", "prediction"};
  ORDO_CHECK(!rows.empty() && rows[0].fields == header, path, ":1: a GLUE submission starts with the header "
             "'index\\tprediction'", rows.empty() ? std::string(" (the file is empty)")
                                                 : "; found '" + join_fields(rows[0].fields) + "'");
  GluePredictions out;
  const size_t n = set.examples.size();
  for (size_t r = 1; r < rows.size(); ++r) {
    const TsvRow& row = rows[r];
    const size_t k = r - 1;
    ORDO_CHECK(k < n, path, ":", row.line, ": more predictions than the ", n, " examples of ", set.path);
    ORDO_CHECK(row.fields.size() == 2, path, ":", row.line, ": ", row.fields.size(),
               " columns; a submission row is index<TAB>prediction");
    const GlueExample& e = set.examples[k];
    const std::string& index = row.fields[0];
    ORDO_CHECK(index == e.id || index == std::to_string(k), path, ":", row.line, ": index '", index,
               "', but prediction ", k + 1, " is for the example at ", set.path, ":", e.line, " (index ",
               e.id == std::to_string(k) ? e.id : e.id + " or " + std::to_string(k),
               "): one row per example, in the data file's order");
    const std::string& value = row.fields[1];
    if (task.regression()) {
      double score = 0;
      ORDO_CHECK(parse_number(value, score), path, ":", row.line, ": prediction '", value,
                 "' is not a finite number (", task.display, " predicts a similarity score)");
      out.scores.push_back(score);
    } else {
      const int label = task.label_index(value);
      ORDO_CHECK(label >= 0, path, ":", row.line, ": prediction '", value, "' is not one of ", task.display,
                 "'s labels (", task.label_list(), ")");
      out.labels.push_back(label);
    }
  }
  const size_t got = rows.size() - 1;
  ORDO_CHECK(got == n, path, ": ", got, " predictions for the ", n, " examples of ", set.path,
             " (the first without one: index ", got < n ? set.examples[got].id : "", ", ", set.path, ":",
             got < n ? set.examples[got].line : 0, ")");
  return out;
}

}  // namespace ordo::downstream
