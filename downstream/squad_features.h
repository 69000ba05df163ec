// SQuAD questions -> model inputs, as Google's run_squad.py (and HuggingFace's
// squad_convert_examples_to_features after it) builds them, with the answer
// located through the tokenizer's character offsets instead of re-tokenizing
// whitespace words:
//
//   question tokens, cut to max_query_length;
//   the context tokenized once (text::SubwordTokenizer::encode_with_offsets);
//   windows over the context tokens of max_tokens = max_seq_length - |question| - 3
//   tokens, starting at 0 and each doc_stride tokens further (min(length,
//   doc_stride)) until one reaches the end;
//   per window: [CLS] question [SEP] window [SEP], segment 0 up to the first
//   [SEP], 1 after it; for each window token whether this window is its "max
//   context" one (the window where min(left, right) context + 0.01 * window
//   length is largest, the first such on ties: _check_is_max_context).
//   Training targets: the answer's token span (first token whose characters
//   end after the answer begins, last token whose characters begin before it
//   ends) shifted into the window; 0 and 0 (the [CLS] position) when the
//   answer is not wholly inside the window or the question is unanswerable.
//   Training uses the first gold answer; an answer that fails run_squad's
//   check (squad_answer_span) skips its question: counted, and the ids listed
//   in the stats, never silently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "downstream/squad.h"
#include "text/subword.h"

namespace ordo::downstream {

struct SquadWindowOptions {
  int max_seq_length = 384;  // BERT's SQuAD settings
  int doc_stride = 128;
  int max_query_length = 64;
};

struct SquadFeature {
  int question = 0;  // index into SquadDataset::questions
  int window = 0;    // 0, 1, ... within its question
  std::vector<int32_t> input_ids;       // [CLS] question [SEP] context window [SEP], not padded
  std::vector<int32_t> token_type_ids;  // 0 up to and with the first [SEP], then 1
  int context_offset = 0;               // position of the window's first token in input_ids
  int context_start = 0;                // index of that token among the context's tokens
  std::vector<text::CharSpan> context_spans;  // per window token: its code points in the context
  std::vector<uint8_t> max_context;           // per window token: 1 when this is its max-context window
  int start_position = 0, end_position = 0;   // training targets in input_ids (0: [CLS], no answer here)
  int context_length() const { return static_cast<int>(context_spans.size()); }
};

struct SquadFeatureStats {
  int questions = 0;        // questions turned into features
  int features = 0;         // windows in all
  int out_of_window = 0;    // training windows whose target became [CLS] because the answer lies outside
  std::vector<std::string> skipped;  // training questions whose answer failed the check (their ids)
  // One line for the log: "skipped 2 training questions whose answer text is not at its
  // answer_start (run_squad's 'Could not find answer'): a, b"; "" when none was.
  std::string skipped_report() const;
};

// The windows of every question, in question order (training: those not
// skipped). ordo::Error for options that leave a question's context no room
// (max_seq_length - its query tokens - 3 < 1).
std::vector<SquadFeature> make_squad_features(const SquadDataset& data, const text::SubwordTokenizer& tokenizer,
                                              const SquadWindowOptions& options, bool training,
                                              SquadFeatureStats* stats = nullptr);

}  // namespace ordo::downstream
