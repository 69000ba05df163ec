#!/usr/bin/env python3
"""The PyTorch twin of ordo's rpe_shaw and huang_m4: golden files for
tests/nn/test_relative_golden.cpp.

HuggingFace's BertForPreTraining with position_embedding_type
  "relative_key"        (Shaw et al.'s keys-only relative vectors, one table per
                         layer shared by its heads = ordo's rpe_shaw defaults)
  "relative_key_query"  (Huang et al. 2020, method 4, Eq. 16 = ordo's huang_m4)
is built with bert_twin.py's tiny config, its weights re-drawn as bert_twin.py
does (N(0, 0.2)), run on bert_twin.py's batch, and what it computes is written
under tests/data/twin/:

  <type>/config.json, <type>/model.safetensors
      the weights as HF's save_pretrained writes them (the per-layer
      distance_embedding.weight [2 max_position_embeddings - 1, head_dim];
      HF keeps an absolute position_embeddings table these types never use).
  golden_<type>.safetensors
      the batch, loss, lm_loss, nsp_loss, the logits of every position, the
      NSP logits, hidden_states.0..L, attentions.1..L and the gradient of
      every parameter that receives one ("grad.<name>"; the unused absolute
      table receives none and has no entry).

Precision as bert_twin.py: f32 weights, everything golden computed in float64
and cast to f32 at the end (losses kept in f64).

HF indexes its table by query - key: row (i - j) + max_position_embeddings - 1
(BertSelfAttention.forward), from the token index, not position_ids.

transformers 5 removed relative_key and relative_key_query from BERT: this
script needs a 4.x version (the committed files: see tests/twin/README.md), e.g.
    python3 -m venv --system-site-packages /tmp/hf4
    /tmp/hf4/bin/pip install "transformers<4.50"
    /tmp/hf4/bin/python tests/twin/relative_twin.py
Run from the repository root.
"""
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import BertConfig, BertForPreTraining

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_twin import CONFIG, OUT, f32, make_batch, redraw, scalar  # noqa: E402

TYPES = ("relative_key", "relative_key_query")


def golden_for(kind, ids, segments, mask, labels, nsp_labels):
    config = BertConfig(**CONFIG, position_embedding_type=kind, attn_implementation="eager")
    model = BertForPreTraining(config)
    redraw(model)
    model.eval()
    model.save_pretrained(os.path.join(OUT, kind), safe_serialization=True)

    model = model.double()
    ce = torch.nn.CrossEntropyLoss()
    out = model(input_ids=ids, token_type_ids=segments, attention_mask=mask, labels=labels,
                next_sentence_label=nsp_labels, output_hidden_states=True, output_attentions=True)
    lm_loss = ce(out.prediction_logits.reshape(-1, CONFIG["vocab_size"]), labels.reshape(-1))
    nsp_loss = ce(out.seq_relationship_logits, nsp_labels)
    assert torch.allclose(out.loss, lm_loss + nsp_loss, rtol=1e-14, atol=0)
    out.loss.backward()

    golden = {"input_ids": ids, "segment_ids": segments, "attention_mask": mask, "labels": labels,
              "nsp_labels": nsp_labels, "loss": scalar(out.loss), "lm_loss": scalar(lm_loss),
              "nsp_loss": scalar(nsp_loss), "logits": f32(out.prediction_logits),
              "nsp_logits": f32(out.seq_relationship_logits)}
    for i, h in enumerate(out.hidden_states):
        golden[f"hidden_states.{i}"] = f32(h)
    for i, a in enumerate(out.attentions):
        golden[f"attentions.{i + 1}"] = f32(a)
    unused = []
    for name, p in model.named_parameters():
        if p.grad is None:
            unused.append(name)
        else:
            golden[f"grad.{name}"] = f32(p.grad)
    # The only parameter without a gradient is the absolute table relative types skip.
    assert unused == ["bert.embeddings.position_embeddings.weight"], unused
    save_file({k: v.contiguous() for k, v in golden.items()}, os.path.join(OUT, f"golden_{kind}.safetensors"),
              # One metadata key: safetensors writes several in a hash map's order, not byte-stable.
              metadata={"made_by": f"tests/twin/relative_twin.py ({kind}), torch {torch.__version__}, "
                                   f"transformers {transformers.__version__}"})
    return golden


def main():
    if not os.path.isdir("tests"):
        sys.exit("run from the repository root: python3 tests/twin/relative_twin.py")
    major = int(transformers.__version__.split(".")[0])
    if major >= 5:
        sys.exit(f"transformers {transformers.__version__} has no relative_key in BERT: use a 4.x version "
                 "(see the docstring)")
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    ids, segments, mask, labels, nsp_labels = make_batch()
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    for kind in TYPES:
        g = golden_for(kind, ids, segments, mask, labels, nsp_labels)
        size = os.path.getsize(os.path.join(OUT, f"golden_{kind}.safetensors"))
        for root, _, files in os.walk(os.path.join(OUT, kind)):
            size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
        print(f"{kind}: loss {g['loss'].item():.6f}; {size / 1024:.1f} KiB with its checkpoint")


if __name__ == "__main__":
    main()
