// A fresh model whose absolute position table starts as another model's
// (Wang & Chen 2020, section 5.1, Table 3: "five settings of the initialized
// position embeddings ... random, BERT, RoBERTa, GPT-2, and sinusoid, and
// other weights are initialized randomly"): `ordo finetune --from-scratch
// --init-positions-from CHECKPOINT|RUN`.
//
// The source's table is P[p] for positions p = 0, 1, ... as the source adds
// it at the input (its input_embedding): a learned table's rows as stored —
// RoBERTa's from row pad_token_id + 1 = 2 on, as nn/hf_layout.h reads it,
// GPT-2's wpe from row 0 — and a sinusoid's values as computed (with its
// amplitude). Row p goes to row p of the fresh model's learned table (its
// own position_offset added). The copy is then trained with the rest, as the
// paper's classifiers train it (its code leaves the table trainable).
#pragma once

#include <cstdint>
#include <string>

#include "nn/bert_config.h"
#include "nn/module.h"
#include "tensor/tensor.h"

namespace ordo::train {

// Whether `source`'s table can fill `fresh`'s for sequences of
// `max_seq_length` tokens; an error naming what does not fit, under `where`:
// a source with nothing added at the input (a relative-only variant, none),
// a fresh model without a learned absolute table (model.pe), another width
// (model.hidden_size), fewer rows than max_seq_length.
void check_position_copy(const nn::BertConfig& source, const nn::BertConfig& fresh, int64_t max_seq_length,
                         const std::string& where);

struct PositionTable {
  std::string source;  // the checkpoint read
  Tensor rows;         // [n, width] f32 on the CPU: P[0], ..., P[n - 1]
  // What is copied from where, for the run's header: "rows 0..63 of the
  // position table of RUN (ape_sin, as computed)", and the fresh rows that keep their start.
  std::string description;
};

// The first min(fresh rows, source rows) rows of `checkpoint`'s table (a
// checkpoint folder; HF BERT, RoBERTa and GPT-2 too), checked against
// `fresh` first (check_position_copy).
PositionTable read_position_table(const std::string& checkpoint, const nn::BertConfig& fresh, int64_t max_seq_length);

// Copies `table` into rows offset .. offset + n - 1 of `model`'s learned
// absolute table (its parameter bert.embeddings.position_embeddings.weight);
// the rows beyond keep their initialisation.
void copy_position_table(nn::Module& model, const nn::BertConfig& config, const PositionTable& table);

}  // namespace ordo::train
