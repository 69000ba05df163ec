// Wang & Chen 2020's analyses of position tables across models, in one table
// and one figure grid: the paper's Tables 1-2 and Figures 1-3 for any set of
// tables — real models' (`ordo analyze --models FOLDER`: BERT, RoBERTa, GPT-2
// checkpoints) or ordo's own runs (the wang_chen2020 experiment).
//
//   Table 1  absolute position regression: linear least squares from P_x to
//            x, 5-fold cross-validation, mean absolute error (§4.1.1)
//   Table 2  relative order: logistic regression on [P_i ; P_j] for i > j,
//            error rate (§4.1.2)
//   Fig. 1/3 position-wise cosine similarity of each table (§4.2.1, §4.3.2)
//   Fig. 2   cumulative share of the top-k singular values (§4.2.2)
//
// Every table is cut to the same first `positions` rows (the paper trims
// GPT-2's 1,024 to BERT's 512), and the fixed sinusoid of the first table's
// width (the paper's "pre-defined" row) and a Gaussian table (chance) are
// added as controls. The estimators are probe/analysis_position.h's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/matrix.h"

namespace ordo::probe {

struct NamedTable {
  std::string name;   // a row of the tables, a panel of the figures ("bert-base-uncased", a run's name)
  std::string kind;   // "encoder (MLM)", "decoder (causal LM)", ... (the table's Type column)
  Matrix table;       // rows are positions 0, 1, ...; at least `positions` of them
};

struct WangChenOptions {
  int64_t positions = 512;  // rows used of every table (at most the shortest's)
  uint64_t seed = 1;        // folds, the pairs drawn, the Gaussian control
  bool controls = true;     // add the fixed sinusoid and a Gaussian table
};

// One table's numbers.
struct WangChenRow {
  std::string name, kind;
  int64_t positions = 0, dim = 0;
  double mae = 0, baseline_mae = 0;  // Table 1 (baseline: predicting the training rows' mean)
  double order_error = 0;            // Table 2
  int64_t order_test_pairs = 0;
  std::vector<double> share;         // Fig. 2: share[k-1] of the top k singular values
  int64_t components_90 = 0;         // the smallest k with share >= 0.9
  std::vector<double> cosine_by_offset;  // Figs. 1/3 in numbers: cosine_by_offset(table)
};

// The mean cosine similarity of two positions d apart, over every pair
// (P_i, P_{i+d}): element d - 1 for d = 1 .. rows - 1. A local table falls
// from near 1 toward 0 with d; a periodic one (the sinusoid's: (2/D) sum_k
// cos(w_k d), whatever i) falls and rises again.
std::vector<double> cosine_by_offset(const Matrix& table);
// The numbers alone: one row per table, in order, then the controls
// ("sinusoid", "random") when asked.
std::vector<WangChenRow> wang_chen_rows(const std::vector<NamedTable>& tables, const WangChenOptions& options);

// Computes everything and renders the files (nothing is written):
//   wang_chen.json   per table: name, kind, positions, dim, mae, baseline_mae,
//                    order_error, components_90 (k reaching 90 % of the
//                    singular values' sum), share (the curve),
//                    cosine_by_offset (Figs. 1/3's profile)
//   wang_chen.md, wang_chen.csv   Tables 1-2 side by side
//   wang_chen_cosine.svg          Figures 1 and 3: one cosine map per table
//   wang_chen_informativeness.svg Figure 2: one curve per table
// Errors: no table, a table with fewer rows than 2, tables of different widths
// are fine (each is analysed in its own width).
struct WangChenReport {
  std::vector<WangChenRow> rows;
  json::Value summary;
  std::vector<std::pair<std::string, std::string>> files;  // (name, bytes)
  int64_t positions = 0;  // the rows used
};
WangChenReport wang_chen_tables(const std::vector<NamedTable>& tables, const WangChenOptions& options);

}  // namespace ordo::probe
