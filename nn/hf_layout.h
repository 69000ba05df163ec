// The checkpoint layouts of the HF families ordo reads and writes.
//
// ordo names every parameter as HF's BERT does (bert.embeddings...,
// bert.encoder.layer.N..., cls.predictions..., classifier..., qa_outputs...;
// Linear weights [out, in]). A RoBERTa or GPT-2 checkpoint is the same model
// with other names (and, for GPT-2, other shapes), so reading one renames
// its tensors into ordo's and writing one renames them back:
//
//   RoBERTa (RobertaForMaskedLM, ...)     ordo
//     roberta.X                           bert.X
//     lm_head.dense / layer_norm / bias   cls.predictions.transform.dense / transform.LayerNorm / bias
//     lm_head.decoder.weight              cls.predictions.decoder.weight (a tied copy, or untied)
//     classifier.dense / out_proj         bert.pooler.dense / classifier (RobertaClassificationHead:
//                                         tanh(W h_<s> + b) then a linear layer, BERT's pooler and classifier)
//   GPT-2 (GPT2LMHeadModel, GPT2Model: names with or without "transformer.")
//     wte, wpe                            bert.embeddings.word_embeddings, position_embeddings
//     h.N.ln_1, h.N.ln_2                  bert.encoder.layer.N.attention_LayerNorm, output_LayerNorm
//     h.N.attn.c_attn [in, 3 out]         attention.self.query/key/value [out, in] (Conv1D's [in, out],
//                                         q k v side by side, split and transposed)
//     h.N.attn.c_proj, mlp.c_fc, mlp.c_proj   attention.output.dense, intermediate.dense, output.dense
//                                         (transposed)
//     ln_f                                bert.encoder.final_LayerNorm
//     lm_head.weight                      cls.predictions.decoder.weight (a tied copy, or untied)
//     score.weight                        classifier.weight (GPT2ForSequenceClassification: no bias)
//     h.N.attn.bias, masked_bias          (causal-mask buffers of older files: dropped)
// Names the table does not list pass through as they are (ordo's own task
// heads under a GPT-2 backbone).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nn/bert_config.h"
#include "tensor/tensor.h"

namespace ordo::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Where one of ordo's tensors came from in a file of another layout, so that
// messages name the file's tensor (a shape that does not fit, say), not ordo's.
struct FileTensor {
  std::string name;  // as the file names it ("transformer.h.0.attn.c_attn.weight")
  Shape shape;       // as the file holds it
  std::string part;  // what of it ordo's tensor is: "" (all of it, as it is), "transposed",
                     // "its query columns, transposed"
};
using FileTensors = std::map<std::string, FileTensor>;  // by ordo's name; only the renamed ones

// A checkpoint's tensors (as its file names them) -> ordo's names and shapes;
// `origins`, when given, gets the file's tensor of each renamed one.
NamedTensors from_hf_layout(const BertConfig& config, NamedTensors tensors, FileTensors* origins = nullptr);
// ordo's parameters -> the names and shapes config.model_type's checkpoints use.
NamedTensors to_hf_layout(const BertConfig& config, NamedTensors tensors);
// The transformers class of the model family for the class BERT's would be
// ("BertForMaskedLM" -> "RobertaForMaskedLM", "GPT2LMHeadModel"); an error
// when the family has none (NSP outside BERT).
std::string hf_architecture(const BertConfig& config, const std::string& bert_architecture);

}  // namespace ordo::nn
