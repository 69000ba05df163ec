#include "downstream/senteval.h"

#include <map>
#include <set>

#include "base/error.h"
#include "downstream/tsv.h"

namespace ordo::downstream {

namespace {

// Python's str.rstrip(): trailing whitespace off (SentEval strips each line).
std::string rstripped(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\f' || s.back() == '\v')) s.pop_back();
  return s;
}

std::string stem(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  return name.substr(0, name.rfind('.'));
}

}  // namespace

SentEvalData read_senteval(const std::string& path) {
  struct Row {
    std::string label, sentence;
    int line;
  };
  std::map<std::string, std::vector<Row>> partitions{{"tr", {}}, {"va", {}}, {"te", {}}};
  for (const TsvRow& row : read_tsv(path)) {
    const std::string where = path + ":" + std::to_string(row.line);
    ORDO_CHECK(row.fields.size() >= 3, where, ": a SentEval line has 3 tab-separated fields or more (partition, label, ",
               "..., sentence); this one has ", row.fields.size());
    auto partition = partitions.find(row.fields[0]);
    ORDO_CHECK(partition != partitions.end(), where, ": partition '", row.fields[0], "' is none of tr, va, te");
    Row r{row.fields[1], rstripped(row.fields.back()), row.line};
    ORDO_CHECK(!r.label.empty(), where, ": empty label");
    ORDO_CHECK(!r.sentence.empty(), where, ": empty sentence");
    partition->second.push_back(std::move(r));
  }
  ORDO_CHECK(!partitions["tr"].empty(), path, ": no training example (partition tr)");
  ORDO_CHECK(!partitions["va"].empty(), path, ": no validation example (partition va)");

  auto task = std::make_shared<GlueTask>();
  task->name = "senteval";
  task->display = stem(path);
  task->metrics = {GlueMetric::accuracy};
  std::set<std::string> labels;  // sorted as np.unique sorts strings
  for (const Row& r : partitions["tr"]) labels.insert(r.label);
  task->labels.assign(labels.begin(), labels.end());
  ORDO_CHECK(task->labels.size() >= 2, path, ": the training partition has ", task->labels.size(),
             " class; a classification needs 2 or more");

  SentEvalData data;
  data.task = task;
  auto fill = [&](GlueSet& set, const std::vector<Row>& rows) {
    set.task = task.get();
    set.path = path;
    set.labelled = true;
    for (const Row& r : rows) {
      GlueExample e;
      e.id = std::to_string(set.examples.size());
      e.text_a = r.sentence;
      e.label = task->label_index(r.label);
      e.line = r.line;
      ORDO_CHECK(e.label >= 0, path, ":", r.line, ": label '", r.label, "' is not one of the training partition's (",
                 task->label_list(), ")");
      set.examples.push_back(std::move(e));
    }
  };
  fill(data.train, partitions["tr"]);
  fill(data.dev, partitions["va"]);
  fill(data.test, partitions["te"]);
  return data;
}

}  // namespace ordo::downstream
