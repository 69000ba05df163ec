// GLUE examples -> model inputs, as BERT's run_classifier.py
// (convert_single_example) builds them:
//   one sentence: [CLS] a [SEP], a cut to max_seq_length - 2 tokens;
//   a pair:       [CLS] a [SEP] b [SEP], segment 0 up to the first [SEP] and 1
//                 after; while the two are longer than max_seq_length - 3 in all,
//                 the last token of the longer one goes (of b on a tie:
//                 _truncate_seq_pair).
// with the specials of the model's tokenizer (text/subword.h): RoBERTa's
// <s> a </s> </s> b </s> in one segment (4 specials), GPT-2's a b (none).
// Not padded: batching pads.
#pragma once

#include <cstdint>
#include <vector>

#include "downstream/glue.h"
#include "text/subword.h"

namespace ordo::downstream {

struct ClassificationFeature {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> token_type_ids;
  int label = -1;    // the class id (labelled classification sets)
  double score = 0;  // the gold score (labelled STS-B)
};

ClassificationFeature encode_glue_example(const GlueExample& example, const GlueTask& task,
                                          const text::SubwordTokenizer& tokenizer, int max_seq_length);
std::vector<ClassificationFeature> make_glue_features(const GlueSet& set, const text::SubwordTokenizer& tokenizer,
                                                      int max_seq_length);

}  // namespace ordo::downstream
