// The property indicators of a position-wise attention matrix.
//
// A is the L x L matrix of identical word probing (Wang et al. 2021, §4.2,
// Eq. 8): A_ij is the (softmax) attention from query position i to key
// position j, averaged over heads and words; rows are queries, columns keys.
// Every function here is a pure function of A, written from the equation it
// cites, with the reading EQUATIONS.md ("Probing and the indicators") fixes where the paper's text
// is ambiguous. Indices below are 1-based as in the papers (the code is
// 0-based). The equations are defined for entries >= 0; the functions
// compute them for any finite values (`ordo metrics` refuses negatives), and
// throw ordo::Error for a matrix that is not square.
//
// Rounding: a probe averages f32 attention, whose rounding would otherwise
// read as structure in the scale-free indicators (a model without positions
// gives an inner matrix equal to ~1e-8 relative). Each states which rule it uses:
//   AIV and symmetry: the matrix-level floor, rounding_floor (differences
//     within 1e-6 times the matrix's largest |entry| are nothing);
//   OPR: the catalog's pair rule, s_a and s_b tie when
//     |s_a - s_b| <= 1e-5 max(|s_a|, |s_b|) (a tie is never an order violation).
//
// Each function states what it returns at its edges (L = 1 or 2, zero rows,
// ties, a zero denominator); tests/probe/test_indicators.cpp checks them.
#pragma once

#include <cstdint>
#include <vector>

#include "base/json.h"
#include "probe/probe_matrix.h"

namespace ordo::probe {

// AIV's and symmetry's rounding floor (the rule above): entries closer than
// 1e-6 times the largest |entry| count as equal.
double rounding_floor(const Matrix& a);

// AIV, Average In-group Variance, for translation invariance (Wang et al.
// 2021, App. B):
//     tau(r) = {A_ij : j - i = r},   r = -(L-1) .. L-1
//     AIV(A) = [ sum_r var(tau(r)) |tau(r)| / sum_r |tau(r)| ] / var(A)
// var is the population variance (divided by the count, as EQUATIONS.md reads
// it); sum_r |tau(r)| = L^2. 0 means every diagonal is constant (perfectly
// translation invariant); a matrix with no structure along its diagonals
// gives about 1.
// Edges: var(A) = 0 (a constant matrix, L = 1 included): 0 — every group is
// constant, so the matrix is translation invariant; an empty matrix: 0.
double translation_invariance(const Matrix& a);

// AIV of A without the special tokens' rows and columns (Wang et al. 2021,
// Table 2 "w/o [CLS]"): the first and last rows and columns ([CLS] and
// [SEP]) dropped first, nothing renormalised. L <= 2 leaves an empty
// matrix: 0.
double translation_invariance_no_special(const Matrix& a);

// OPR, Ordered Pair Ratio, for monotonicity (Wang et al. 2021, App. B).
// For each query i the forward sequence S_i+ = (A_ii, A_i,i+1, ..., A_iL)
// and the backward one S_i- = (A_ii, A_i,i-1, ..., A_i1), the element at
// position a of a sequence being offset a from the diagonal:
//     OPR(S) = sum_{a != b} [ (s_a - s_b)(a - b) > 0 ] / (|S|^2 - |S|)
//     OPR(A) = sum_S OPR(S) |S| / sum_S |S|     over the sequences with |S| >= 2
// i.e. the share of pairs of a sequence that increase with distance, a mean
// weighted by length. 0: attention decreases strictly with distance; 0.5: in
// random order; 1: increases.
// first_k >= 0: each sequence truncated to its first first_k + 1 elements
// (offsets 0..k; Table 2's "first 20 offsets" is first_k = 20). first_k < 0:
// all offsets.
// Ties (the pair rule above): [x > 0] is the paper's sign(x) = 1 only for
// x > 0, so a tied pair counts as not increasing — a constant sequence (uniform attention) scores
// 0, the same as a strictly decreasing one. Edges: no sequence of length >= 2
// (L = 1, or first_k = 0): 0.
double monotonicity(const Matrix& a, int64_t first_k = -1);

// SD, Symmetrical Discrepancy (Wang et al. 2021, App. B):
//     SD(A) = sum_{i<j} |A_ij - A_ji| / (L(L-1)/2)
// 0: A is symmetric. Scale-aware (the companion of symmetry() below).
// Edges: L = 1 (no pair): 0.
double symmetric_discrepancy(const Matrix& a);

// DB_l, Direction Balance (Wang et al. 2021, App. B), in the orientation
// EQUATIONS.md fixes: attention to preceding tokens over attention to succeeding
// ones, within l offsets,
//     DB_l(A) = sum_{j<i, i-j<=l} A_ij / sum_{j>i, j-i<=l} A_ij
// (the lower triangle over the upper, as the paper's prose says and its GPT
// row, DB = inf under a causal mask (Table 7), confirms; the inequality
// printed in its App. B formula is the other way round and is not followed).
// > 1: more attention to preceding tokens. A zero denominator gives +inf,
// 0/0 included (nothing attended ahead within l: a causal matrix, a diagonal
// matrix, L = 1) — the rule read literally. offset_range >= 1
// (Table 2 uses 20).
double direction_balance(const Matrix& a, int64_t offset_range = 20);

// OPR over the first k offsets and DB_l for every range at once (Wang et
// al. 2021, Fig. 5: the correlation of each with the tasks' scores against
// the range): element r - 1 is monotonicity(a, r) (resp. direction_balance(a,
// r)) for r = 1 .. L - 1, each equal to the single-range function's value.
// OPR is computed incrementally (each sequence's ordered pairs counted as it
// grows by one offset), O(L^3) for all ranges rather than O(L^4).
std::vector<double> monotonicity_by_range(const Matrix& a);
std::vector<double> direction_balance_by_range(const Matrix& a);

// Whether every row is uniform within f32 rounding: its spread (max - min)
// at most 1e-5 of its largest |entry| (the OPR tie rule's tolerance; f32
// carries 6e-8, a probe's average of a few hundred of them a few times
// that). Uniform attention is what a model without positions gives identical
// words; there AIV and OPR are 0 because every pair ties, so they describe no
// band, and a reading must say "uniform" first (SPEC, the indicators). An
// empty matrix is not uniform.
bool uniform_rows(const Matrix& a);

// Locality (the locality/symmetry paper, Eq. 7), the mean over rows of
//     Locality(A_i) = sum_j A_ij / 2^|i-j|
// with A taken as given (softmax rows sum to 1, so each row's value is in
// [0, 1]). The paper's examples, L = 5: row (1,0,0,0,0) at i = 1 gives 1,
// row (0,0,0,0,1) at i = 1 gives 1/16. Edges: a zero row gives 0.
double locality(const Matrix& a);

// Symmetry (the locality/symmetry paper, Eq. 8), in the reading EQUATIONS.md
// fixes: the printed formula mirrors j <-> n-j+1 and its normalisation is
// unclear; ordo follows the authors' published implementation, which
// matches the prose ("how symmetrically the weights scatter around the
// current position"). For each row i with m = min(i-1, L-i) > 0:
//     e_d = |A_{i,i-d} - A_{i,i+d}|,   d = 1..m
//     ê_d = (e_d - min_d e_d) / (max_d e_d - min_d e_d)   (all 0 when max = min)
//     Symmetry(A) = 1 - mean of ê_d pooled over all (i, d)
// 1: perfectly symmetric around the diagonal.
// The min-max scaling makes it blind to scale: within a row only the ranks
// of the differences matter, so a row with one pair scores 0 difference
// however asymmetric it is, and any row whose differences are not all equal
// contributes a 0 and a 1 — a tiny asymmetry and a huge one look alike.
// Wang et al.'s SD (symmetric_discrepancy) is the scale-aware companion.
// Edges: no row with a pair (L <= 2): 1.
double symmetry(const Matrix& a);

// All of them for one matrix: what `ordo metrics` prints and `ordo probe`
// writes.
struct Indicators {
  double translation_invariance = 0;             // AIV
  double translation_invariance_no_special = 0;  // AIV without [CLS]/[SEP] rows and columns
  double monotonicity = 0;                       // OPR, all offsets
  double monotonicity_first_k = 0;               // OPR, offsets 0..k
  double symmetry_sd = 0;                        // SD
  double direction_balance = 0;                  // DB_l (+inf possible)
  double locality = 0;
  double symmetry = 0;
};
Indicators compute_indicators(const Matrix& a, int64_t first_k = 20, int64_t offset_range = 20);

// A JSON object with exactly the keys above in that order; +inf is written
// as the string "inf" (JSON has no infinity; base/json_numbers.h).
json::Value indicators_json(const Indicators& ind);

}  // namespace ordo::probe
