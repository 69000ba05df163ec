#include "downstream/classification.h"

#include "base/error.h"

namespace ordo::downstream {

ClassificationFeature encode_glue_example(const GlueExample& example, const GlueTask& task,
                                          const text::SubwordTokenizer& tokenizer, int max_seq_length) {
  const text::SequenceLayout l = tokenizer.layout();
  const int cls = l.cls >= 0 ? 1 : 0, sep = l.sep >= 0 ? 1 : 0;
  const int specials = task.pair ? cls + sep * (l.pair_separators + 1) : cls + sep;
  ORDO_CHECK(max_seq_length >= specials + (task.pair ? 2 : 1), "max_seq_length ", max_seq_length,
             " is too short for ", task.display, " (", specials, " special tokens need room, plus a token of each text)");
  std::vector<int32_t> a = tokenizer.encode(example.text_a), b;
  const size_t room = static_cast<size_t>(max_seq_length - specials);
  if (task.pair) {
    b = tokenizer.encode(example.text_b);
    while (a.size() + b.size() > room) (a.size() > b.size() ? a : b).pop_back();
  } else if (a.size() > room) {
    a.resize(room);
  }
  ClassificationFeature f;
  if (cls) f.input_ids.push_back(l.cls);
  f.input_ids.insert(f.input_ids.end(), a.begin(), a.end());
  if (sep) f.input_ids.push_back(l.sep);
  if (task.pair && sep) f.input_ids.insert(f.input_ids.end(), static_cast<size_t>(l.pair_separators - 1), l.sep);
  f.token_type_ids.assign(f.input_ids.size(), 0);
  if (task.pair) {
    f.input_ids.insert(f.input_ids.end(), b.begin(), b.end());
    if (sep) f.input_ids.push_back(l.sep);
    f.token_type_ids.resize(f.input_ids.size(), l.second_segment);
  }
  f.label = example.label;
  f.score = example.score;
  return f;
}

std::vector<ClassificationFeature> make_glue_features(const GlueSet& set, const text::SubwordTokenizer& tokenizer,
                                                      int max_seq_length) {
  std::vector<ClassificationFeature> out;
  out.reserve(set.examples.size());
  for (const GlueExample& e : set.examples) out.push_back(encode_glue_example(e, *set.task, tokenizer, max_seq_length));
  return out;
}

}  // namespace ordo::downstream
