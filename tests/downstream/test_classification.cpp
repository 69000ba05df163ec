// GLUE examples -> [CLS] a [SEP] (b [SEP]) with BERT's truncation, worked by hand.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "text/tokenizer.h"
#include "downstream/classification.h"

using namespace ordo;
using namespace ordo::downstream;
using Catch::Matchers::Contains;

namespace {

text::Tokenizer tokenizer() {
  // ids: [PAD] 0 [UNK] 1 [CLS] 2 [SEP] 3 [MASK] 4 a 5 b 6 c 7 d 8 e 9 f 10 g 11
  return text::Tokenizer(text::Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d",
                                                   "e", "f", "g"}));
}

GlueExample example(const std::string& a, const std::string& b) {
  GlueExample e;
  e.text_a = a;
  e.text_b = b;
  e.label = 1;
  return e;
}

}  // namespace

TEST_CASE("a sentence pair becomes CLS a SEP b SEP with segments 0 then 1", "[downstream][classification]") {
  const auto tok = tokenizer();
  const ClassificationFeature f = encode_glue_example(example("a b", "c"), glue_task("rte"), tok, 128);
  CHECK(f.input_ids == std::vector<int32_t>{2, 5, 6, 3, 7, 3});
  CHECK(f.token_type_ids == std::vector<int32_t>{0, 0, 0, 0, 1, 1});
  CHECK(f.label == 1);
}

TEST_CASE("pairs lose the last token of the longer text, b on a tie (_truncate_seq_pair)",
          "[downstream][classification]") {
  const auto tok = tokenizer();
  // Room 9 - 3 = 6 tokens: a = a b c d e (5), b = f g (2): 7 -> a loses e -> a b c d | f g.
  CHECK(encode_glue_example(example("a b c d e", "f g"), glue_task("rte"), tok, 9).input_ids ==
        std::vector<int32_t>{2, 5, 6, 7, 8, 3, 10, 11, 3});
  // Room 7 - 3 = 4: a = a b c (3), b = d e f (3): 6 -> tie, b loses f -> 5, a longer, loses c -> a b | d e.
  CHECK(encode_glue_example(example("a b c", "d e f"), glue_task("rte"), tok, 7).input_ids ==
        std::vector<int32_t>{2, 5, 6, 3, 8, 9, 3});
  // One sentence: max_seq_length - 2 tokens of it.
  const ClassificationFeature single = encode_glue_example(example("a b c d e", ""), glue_task("sst2"), tok, 5);
  CHECK(single.input_ids == std::vector<int32_t>{2, 5, 6, 7, 3});
  CHECK(single.token_type_ids == std::vector<int32_t>{0, 0, 0, 0, 0});
  CHECK_THROWS_WITH(encode_glue_example(example("a", "b"), glue_task("rte"), tok, 4), Contains("too short for RTE"));
}

TEST_CASE("make_glue_features carries the labels and scores of a set", "[downstream][classification]") {
  const auto tok = tokenizer();
  GlueSet set;
  set.task = &glue_task("stsb");
  GlueExample e = example("a", "b");
  e.label = -1;
  e.score = 3.25;
  set.examples = {e, e};
  const auto features = make_glue_features(set, tok, 16);
  REQUIRE(features.size() == 2);
  CHECK(features[1].score == 3.25);
  CHECK(features[1].input_ids == std::vector<int32_t>{2, 5, 3, 6, 3});
}
