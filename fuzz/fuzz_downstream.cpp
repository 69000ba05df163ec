// libFuzzer target for the downstream readers: a GLUE TSV file of one of the
// tasks (the first byte picks the task), then the same bytes as a SentEval
// probing file and as a SQuAD JSON file. Every example accepted must carry a
// label of its task (labelled classification files; SentEval's sets a class of
// the training labels) and every SQuAD question a paragraph that exists.
#include <cstdlib>

#include "base/error.h"
#include "downstream/glue.h"
#include "downstream/senteval.h"
#include "downstream/squad.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo;
  if (size == 0) return 0;
  const auto& tasks = downstream::glue_tasks();
  const downstream::GlueTask& task = tasks[data[0] % tasks.size()];
  const std::string& tsv = fuzz::scratch_file(data + 1, size - 1, "dev.tsv");
  try {
    downstream::GlueSet set = downstream::read_glue(task, tsv, {data[0] >= 128});
    for (const auto& e : set.examples)
      if (set.labelled && !task.regression() && (e.label < 0 || e.label >= static_cast<int>(task.labels.size())))
        std::abort();
  } catch (const Error&) {
  }
  const std::string& probing = fuzz::scratch_file(data + 1, size - 1, "probing.txt");
  try {
    downstream::SentEvalData d = downstream::read_senteval(probing);
    for (const auto* set : {&d.train, &d.dev, &d.test})
      for (const auto& e : set->examples)
        if (set->task != d.task.get() || e.label < 0 || e.label >= static_cast<int>(d.task->labels.size())) std::abort();
  } catch (const Error&) {
  }
  const std::string& json = fuzz::scratch_file(data + 1, size - 1, "squad.json");
  try {
    downstream::SquadDataset d = downstream::read_squad(json);
    for (const auto& q : d.questions)
      if (q.paragraph < 0 || q.paragraph >= static_cast<int>(d.paragraphs.size())) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
