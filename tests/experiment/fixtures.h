// Hand-made experiment results for the report's tests (test_paper_table.cpp,
// test_findings.cpp): a fine-tuned task's seeds and a plan with one task; and
// a report section's verdict by its key.
#pragma once

#include <string>
#include <vector>

#include "base/json.h"
#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/tables.h"
#include "tests/helpers.h"

namespace ordo::test {

// A task whose finished seeds scored `accuracies` (fractions) on its main dev set, at their best epoch.
inline experiment::TaskResults accuracy_task(const std::vector<double>& accuracies) {
  experiment::TaskResults t;
  t.select_epoch = "best";
  t.runs = json::Value::array();
  for (double a : accuracies) {
    json::Value line = json::Value::object(), dev = json::Value::object(), sets = json::Value::object();
    dev["accuracy"] = a;
    sets["dev"] = dev;
    line["best"] = sets;
    line["best_score"] = a;
    t.runs.push_back(line);
  }
  t.present = !accuracies.empty();
  return t;
}

// A plan fine-tuning "rte" on its roles stand-in, compared with `baseline` ("": none).
inline experiment::Plan plan_with_rte(const std::string& baseline = "") {
  experiment::Plan plan;
  plan.folder = "f";
  plan.out = "o";
  experiment::FinetuneTask rte;
  rte.name = "rte";
  rte.task = "rte";
  rte.stand_in = "roles";
  plan.finetune.push_back(rte);
  plan.baseline = baseline;
  return plan;
}

// The section's verdict of `key`; a test failure where it has none.
inline const experiment::SectionVerdict& section_verdict(const experiment::ReportSection& s, const std::string& key) {
  for (const auto& v : s.verdicts)
    if (v.key == key) return v;
  FAIL("no verdict " << key);
  return s.verdicts.front();
}

}  // namespace ordo::test
