// A fine-tuning task's data: its files found in --data (find_task_files)
// and the classification tasks' examples read from them (GLUE's TSV files,
// a SentEval probing file); SQuAD's files are read by its task.
#include <algorithm>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "base/file_io.h"
#include "base/strings.h"
#include "downstream/senteval.h"
#include "downstream/tsv.h"
#include "train/finetune_parts.h"

namespace ordo::train {

using namespace finetuning;

bool finetuning::is_squad(const std::string& task) { return task == "squad" || task == "squad2"; }

namespace {

// The one of `names` present in `folder`, or "" when none is; two present
// are refused rather than one picked silently (SQuAD's train-v1.1.json beside a train.json).
std::string the_one_present(const std::string& folder, const std::vector<std::string>& names) {
  std::vector<std::string> present;
  for (const std::string& n : names)
    if (file_exists(folder + "/" + n)) present.push_back(n);
  ORDO_CHECK(present.size() <= 1, "--data ", folder, " holds both ", present[0], " and ", present[1],
             ": ordo would have to pick one; keep only the one to fine-tune on (or give a folder holding one)");
  return present.empty() ? "" : folder + "/" + present[0];
}

}  // namespace

TaskFiles find_task_files(const std::string& task, const std::string& folder) {
  const auto& names = finetune_task_names();
  ORDO_CHECK(std::find(names.begin(), names.end(), task) != names.end(), "unknown task '", task,
             "': fine-tuning knows ", downstream::join_fields(names, ", "));
  TaskFiles f;
  if (task == "senteval") {  // one file holds the three partitions: the file, or the folder's only .txt
    if (file_exists(folder) && !directory_exists(folder)) return f.train = folder, f;
    ORDO_CHECK(directory_exists(folder), "--data ", folder, ": neither a SentEval .txt file nor a folder");
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(folder))
      if (entry.path().extension() == ".txt") found.push_back(entry.path().string());
    std::sort(found.begin(), found.end());
    ORDO_CHECK(found.size() == 1, "--data ", folder, ": the senteval task reads one SentEval .txt file; the folder has ",
               found.size(), found.empty() ? "" : " (" + downstream::join_fields(found, ", ") + ")");
    f.train = found[0];
    return f;
  }
  ORDO_CHECK(directory_exists(folder), "--data ", folder, ": not a directory");
  std::vector<std::string> train_names{"train.tsv"}, dev_names{"dev.tsv"};
  if (task == "squad") train_names = {"train-v1.1.json", "train.json"}, dev_names = {"dev-v1.1.json", "dev.json"};
  if (task == "squad2") train_names = {"train-v2.0.json", "train.json"}, dev_names = {"dev-v2.0.json", "dev.json"};
  if (task == "mnli") dev_names = {"dev_matched.tsv"};
  f.train = the_one_present(folder, train_names);
  const std::string dev = the_one_present(folder, dev_names);
  ORDO_CHECK(!f.train.empty() && !dev.empty(), "--data ", folder, ": the ", task, " task needs its training file (",
             joined(train_names, " or "), ") and its dev file (", joined(dev_names, " or "), "); ",
             f.train.empty() ? "the training file" : "the dev file", " is missing");
  f.dev.push_back(dev);
  if (!is_squad(task)) {
    // Further dev sets beside the main one, evaluated too (MNLI's mismatched
    // set; probes such as ordo data tasks' dev_shuffle_3.tsv), in name order.
    std::vector<std::string> more;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("dev_", 0) == 0 && name.size() > 8 && name.substr(name.size() - 4) == ".tsv" &&
          folder + "/" + name != dev)
        more.push_back(folder + "/" + name);
    }
    std::sort(more.begin(), more.end());
    f.dev.insert(f.dev.end(), more.begin(), more.end());
  }
  if (!is_squad(task)) {
    const std::vector<std::string> tests =
        task == "mnli" ? std::vector<std::string>{"test_matched.tsv", "test_mismatched.tsv"}
                       : std::vector<std::string>{"test.tsv"};
    for (const std::string& t : tests)
      if (file_exists(folder + "/" + t)) f.test.push_back(folder + "/" + t);
  }
  return f;
}

std::string finetuning::dev_key(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  return name.substr(0, name.rfind('.'));  // "dev", "dev_matched", "dev_mismatched"
}

ClassificationData finetuning::read_glue_data(const downstream::GlueTask& task, const TaskFiles& files) {
  auto labelled = [&](const std::string& path) {
    downstream::GlueSet set = downstream::read_glue(task, path);
    ORDO_CHECK(set.labelled, path, ": ", task.display, " training and dev files carry labels; this one has none");
    ORDO_CHECK(!set.examples.empty(), path, ": no examples");
    return set;
  };
  ClassificationData data;
  data.task = std::shared_ptr<const downstream::GlueTask>(std::shared_ptr<void>(), &task);  // a static task
  data.train = labelled(files.train);
  for (const std::string& path : files.dev) data.evaluated.emplace_back(dev_key(path), labelled(path));
  for (const std::string& path : files.test) {
    data.test.push_back(downstream::read_glue(task, path));
    ORDO_CHECK(!data.test.back().labelled, path, ": a test file is GLUE's unlabelled one (index and text)");
  }
  return data;
}

ClassificationData finetuning::read_senteval_data(const std::string& path) {
  downstream::SentEvalData file = downstream::read_senteval(path);
  ClassificationData data;
  data.task = file.task;
  data.train = std::move(file.train);
  data.evaluated.emplace_back("dev", std::move(file.dev));
  if (!file.test.examples.empty()) data.evaluated.emplace_back("test", std::move(file.test));
  return data;
}

}  // namespace ordo::train
