#!/usr/bin/env python3
"""The PyTorch twin of ordo's BERT: golden files for tests/nn/test_bert_golden.cpp.

HuggingFace's own BertForPreTraining (encoder, MLM + NSP) and BertLMHeadModel
(is_decoder=True: causal self-attention, next-token prediction) are built with
a tiny config and weights re-drawn so that no tensor is trivially zero or one,
run on a fixed batch, and what they compute is written under tests/data/twin/:

  bert/config.json, bert/model.safetensors
      the weights, written by HF's save_pretrained (HF's names and config.json),
      which is what ordo loads: loading them also checks that an HF checkpoint
      reads in ordo.
  golden_encoder.safetensors
      the batch (input_ids, segment_ids, attention_mask, labels, nsp_labels) and
      BertForPreTraining's loss, lm_loss, nsp_loss, the MLM logits of every
      position, the NSP logits, hidden_states.0..L, attentions.1..L, the
      gradient of every parameter ("grad.<name>") and the losses of 5 AdamW
      steps ("adamw_losses", 6 values: before each step and after the last;
      "adamw_grad_norms": the global gradient norm of each step before clipping).
  golden_decoder.safetensors
      the same for BertLMHeadModel on the same weights (less the pooler and the
      NSP head), with explicit positions (row 2 shifted by 5, to exercise the
      positions input) and next-token labels in ordo's convention (below).

Precision: the weights are drawn and stored in f32; everything golden is then
computed by torch in float64 from those f32 weights and cast to f32 at the
end (the scalar losses are kept in f64). The golden values are thus the exact
result of the stored weights up to one final rounding, so ordo's f32 run
differs from them only by its own rounding (the test's bounds measure ordo
alone, not ordo plus torch's f32 rounding), and ordo's f64 run can be held to
a bound near f32's resolution.

Dropout is 0: ordo's masks come from Philox and torch's from its own
generator, so they differ by design.

Label conventions. BertForPreTraining: labels [B, L] with -100 where no token is
predicted, as ordo. BertLMHeadModel takes labels aligned with input_ids and
shifts them itself (ForCausalLMLoss: logits at i predict labels[i + 1]); ordo's
PretrainingModel expects the label at i to be already the next token. The
twin gives HF labels = input_ids (-100 at padding) and stores ordo's
labels[b, i] = hf_labels[b, i + 1], with -100 at the last position. Both mean
the same loss: cross-entropy of the logits at i against token i + 1, averaged
over the pairs whose target is a real token.

Run from the repository root (CPU torch suffices; no download happens):
    python3 tests/twin/bert_twin.py
See tests/twin/README.md for the versions that made the committed files.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import BertConfig, BertForPreTraining, BertLMHeadModel

OUT = os.path.join("tests", "data", "twin")

CONFIG = dict(
    vocab_size=59,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,  # head_dim 16
    intermediate_size=37,
    max_position_embeddings=20,
    type_vocab_size=2,
    hidden_act="gelu",  # erf form
    layer_norm_eps=1e-12,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    initializer_range=0.02,
    pad_token_id=0,
)

# AdamW as ordo's nn::AdamW is configured in the test.
LR, BETAS, EPS, WEIGHT_DECAY, MAX_NORM, STEPS = 1e-3, (0.9, 0.999), 1e-6, 0.01, 1.0, 5


def make_batch():
    """3 sequences of length 11: row 0 full, rows 1 and 2 padded (id 0) after 8 and 5 tokens."""
    g = torch.Generator().manual_seed(1234)
    B, L = 3, 11
    lengths = [11, 8, 5]
    ids = torch.randint(4, CONFIG["vocab_size"], (B, L), generator=g)
    mask = torch.zeros(B, L, dtype=torch.long)
    segments = torch.zeros(B, L, dtype=torch.long)
    # [CLS] = 2 first, [SEP] = 3 closing each of two segments; segment 1 is the second.
    second = [6, 5, 3]  # where segment 1 starts in each row
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
        ids[b, 0] = 2
        ids[b, second[b] - 1] = 3
        ids[b, n - 1] = 3
        segments[b, second[b]:n] = 1
        ids[b, n:] = 0
    # MLM labels: a few real positions per row, each a token the model must
    # predict (not always the one at that position, as BERT's 10% random case).
    labels = torch.full((B, L), -100, dtype=torch.long)
    for b, positions in enumerate([[1, 4, 7, 9], [2, 6], [1, 3]]):
        for p in positions:
            labels[b, p] = int(torch.randint(4, CONFIG["vocab_size"], (1,), generator=g))
    nsp_labels = torch.tensor([0, 1, 1])
    return ids, segments, mask, labels, nsp_labels


def redraw(model):
    """torch's seeded init replaced by N(0, 0.2) everywhere (LayerNorm gains 1 + N(0, 0.2)),
    so no bias is zero, no gain one, and the [PAD] embedding row is not zero either."""
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(0.0, 0.2)
            if name.endswith("LayerNorm.weight"):
                p.add_(1.0)


def f32(t):
    return t.detach().to(torch.float32).contiguous()


def scalar(t):
    return t.detach().to(torch.float64).reshape(())


def outputs_of(model, out, names, grads=True):
    """hidden_states.0..L, attentions.1..L and (after backward) grad.<name> of every parameter."""
    d = {}
    for i, h in enumerate(out.hidden_states):
        d[f"hidden_states.{i}"] = f32(h)
    for i, a in enumerate(out.attentions):
        d[f"attentions.{i + 1}"] = f32(a)
    if grads:
        for name, p in model.named_parameters():
            assert p.grad is not None, name
            d[f"grad.{name}"] = f32(p.grad)
    return d


def adamw_losses(model, loss_fn):
    """Losses of STEPS AdamW steps (torch.optim.AdamW, clip_grad_norm_), from the current weights."""
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or n.endswith("LayerNorm.weight"))]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or n.endswith("LayerNorm.weight")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                             {"params": no_decay, "weight_decay": 0.0}], lr=LR, betas=BETAS, eps=EPS)
    losses, norms = [], []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_fn()
        losses.append(loss.item())
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM).item())
        opt.step()
    with torch.no_grad():
        losses.append(loss_fn().item())
    return torch.tensor(losses, dtype=torch.float64), torch.tensor(norms, dtype=torch.float64)


def encoder_golden(ids, segments, mask, labels, nsp_labels):
    config = BertConfig(**CONFIG, attn_implementation="eager")
    model = BertForPreTraining(config)
    redraw(model)
    model.eval()  # dropout is 0 anyway; eval states it
    model.save_pretrained(os.path.join(OUT, "bert"), safe_serialization=True)

    model = model.double()
    ce = torch.nn.CrossEntropyLoss()  # mean over labels != -100, as HF and ordo

    def forward():
        return model(input_ids=ids, token_type_ids=segments, attention_mask=mask, labels=labels,
                     next_sentence_label=nsp_labels, output_hidden_states=True, output_attentions=True)

    out = forward()
    lm_loss = ce(out.prediction_logits.reshape(-1, CONFIG["vocab_size"]), labels.reshape(-1))
    nsp_loss = ce(out.seq_relationship_logits, nsp_labels)
    assert torch.allclose(out.loss, lm_loss + nsp_loss, rtol=1e-14, atol=0)
    out.loss.backward()

    golden = {"input_ids": ids, "segment_ids": segments, "attention_mask": mask, "labels": labels,
              "nsp_labels": nsp_labels, "loss": scalar(out.loss), "lm_loss": scalar(lm_loss),
              "nsp_loss": scalar(nsp_loss), "logits": f32(out.prediction_logits),
              "nsp_logits": f32(out.seq_relationship_logits)}
    golden.update(outputs_of(model, out, None))
    model.zero_grad()
    losses, norms = adamw_losses(model, lambda: forward().loss)
    golden["adamw_losses"], golden["adamw_grad_norms"] = losses, norms
    save_file({k: v.contiguous() for k, v in golden.items()}, os.path.join(OUT, "golden_encoder.safetensors"),
              metadata={"made_by": f"tests/twin/bert_twin.py, torch {torch.__version__}, "
                                   f"transformers {transformers.__version__}"})
    return golden


def decoder_golden(ids, segments, mask):
    config = BertConfig(**CONFIG, is_decoder=True, attn_implementation="eager")
    model = BertLMHeadModel(config)
    # The encoder's weights (as saved), less the pooler and the NSP head.
    state = BertForPreTraining.from_pretrained(os.path.join(OUT, "bert")).state_dict()
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not missing, missing
    assert all(n.startswith(("bert.pooler.", "cls.seq_relationship.")) for n in unexpected), unexpected
    model = model.double().eval()

    # Explicit positions: rows 0 and 1 count from 0, row 2 from 5 (positions
    # are an input, never implied by the index).
    B, L = ids.shape
    positions = torch.arange(L).expand(B, L).clone()
    positions[2] += 5
    hf_labels = ids.masked_fill(mask == 0, -100)
    ordo_labels = torch.full_like(hf_labels, -100)
    ordo_labels[:, :-1] = hf_labels[:, 1:]

    def forward():
        return model(input_ids=ids, token_type_ids=segments, attention_mask=mask, position_ids=positions,
                     labels=hf_labels, use_cache=False, output_hidden_states=True, output_attentions=True)

    def ordo_loss(out):
        # ordo's convention by hand, in f64. HF's ForCausalLMLoss casts the
        # logits to float32 ("upcast") before its cross-entropy, so its loss
        # is an f32 value even for an f64 model: it is checked against this
        # one, and this one is the golden and what is differentiated.
        return torch.nn.functional.cross_entropy(out.logits.reshape(-1, CONFIG["vocab_size"]),
                                                 ordo_labels.reshape(-1), ignore_index=-100)

    out = forward()
    by_hand = ordo_loss(out)
    # HF's shifted loss equals ordo's convention (to f32's resolution).
    assert abs(out.loss.item() - by_hand.item()) <= 1e-6 * by_hand.item(), (out.loss, by_hand)
    # Causality: no attention to a later key.
    for a in out.attentions:
        assert torch.all(torch.triu(a, diagonal=1) == 0)
    by_hand.backward()

    golden = {"input_ids": ids, "segment_ids": segments, "attention_mask": mask, "positions": positions,
              "labels": ordo_labels, "loss": scalar(by_hand), "logits": f32(out.logits)}
    golden.update(outputs_of(model, out, None))
    model.zero_grad()
    losses, norms = adamw_losses(model, lambda: ordo_loss(forward()))
    golden["adamw_losses"], golden["adamw_grad_norms"] = losses, norms
    save_file({k: v.contiguous() for k, v in golden.items()}, os.path.join(OUT, "golden_decoder.safetensors"),
              metadata={"made_by": f"tests/twin/bert_twin.py, torch {torch.__version__}, "
                                   f"transformers {transformers.__version__}"})
    return golden


def main():
    if not os.path.isdir("tests"):
        sys.exit("run from the repository root: python3 tests/twin/bert_twin.py")
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    ids, segments, mask, labels, nsp_labels = make_batch()
    enc = encoder_golden(ids, segments, mask, labels, nsp_labels)
    dec = decoder_golden(ids, segments, mask)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    for name, g in (("encoder", enc), ("decoder", dec)):
        print(f"{name}: loss {g['loss'].item():.6f}; AdamW losses {[round(x, 6) for x in g['adamw_losses'].tolist()]}"
              f"; pre-clip grad norms {[round(x, 4) for x in g['adamw_grad_norms'].tolist()]}")
    total = 0
    for root, _, files in os.walk(OUT):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    print(f"{OUT}: {total / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
