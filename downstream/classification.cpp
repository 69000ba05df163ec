#include "downstream/classification.h"

#include "base/error.h"

namespace ordo::downstream {

ClassificationFeature encode_glue_example(const GlueExample& example, const GlueTask& task,
                                          const text::Tokenizer& tokenizer, int max_seq_length) {
  ORDO_CHECK(max_seq_length >= (task.pair ? 5 : 3), "max_seq_length ", max_seq_length, " is too short for ",
             task.display, " ([CLS] and [SEP]", task.pair ? " twice" : "", " need room, plus a token of each text)");
  std::vector<int32_t> a = tokenizer.encode(example.text_a), b;
  if (task.pair) {
    b = tokenizer.encode(example.text_b);
    while (a.size() + b.size() > static_cast<size_t>(max_seq_length - 3)) (a.size() > b.size() ? a : b).pop_back();
  } else if (a.size() > static_cast<size_t>(max_seq_length - 2)) {
    a.resize(static_cast<size_t>(max_seq_length - 2));
  }
  const text::SpecialIds& special = tokenizer.vocab().special();
  ClassificationFeature f;
  f.input_ids.push_back(special.cls);
  f.input_ids.insert(f.input_ids.end(), a.begin(), a.end());
  f.input_ids.push_back(special.sep);
  f.token_type_ids.assign(f.input_ids.size(), 0);
  if (task.pair) {
    f.input_ids.insert(f.input_ids.end(), b.begin(), b.end());
    f.input_ids.push_back(special.sep);
    f.token_type_ids.resize(f.input_ids.size(), 1);
  }
  f.label = example.label;
  f.score = example.score;
  return f;
}

std::vector<ClassificationFeature> make_glue_features(const GlueSet& set, const text::Tokenizer& tokenizer,
                                                      int max_seq_length) {
  std::vector<ClassificationFeature> out;
  out.reserve(set.examples.size());
  for (const GlueExample& e : set.examples) out.push_back(encode_glue_example(e, *set.task, tokenizer, max_seq_length));
  return out;
}

}  // namespace ordo::downstream
