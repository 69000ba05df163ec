#!/usr/bin/env python3
"""PyTorch's training step on the GPU beside `ordo bench step` (tools/gpu_check.sh).

HuggingFace BertForMaskedLM built from an ordo config (learned absolute
positions, SDPA attention), a random batch with ~15% MLM targets as ordo's
bench draws it (every 7th position), only the predicted rows projected on the
vocabulary (what ordo does), forward + loss under bf16 autocast, backward,
fused AdamW — timed with CUDA events, eager and under torch.compile. Prints
one line per shape:

  torch CONFIG BxL eager_ms E compile_ms C

(compile_ms -1 where torch.compile failed). Needs a GPU, torch and
transformers; ordo itself does not.
"""
import argparse
import json

import torch
from transformers import BertConfig, BertForMaskedLM


def build(config_path, vocab_size, device):
    m = json.load(open(config_path))["model"]
    keys = ["hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
            "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
            "type_vocab_size", "initializer_range", "layer_norm_eps"]
    config = BertConfig(vocab_size=vocab_size, attn_implementation="sdpa", **{k: m[k] for k in keys if k in m})
    torch.manual_seed(1)
    model = BertForMaskedLM(config).to(device).train()
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, eps=1e-6, fused=True)
    return model, opt


def step_ms(model, opt, ids, mask, rows, targets, steps, warmup, compiled):
    def loss_fn():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            sequence = model.bert(input_ids=ids, attention_mask=mask).last_hidden_state
            picked = sequence.reshape(-1, sequence.shape[-1])[rows]
            logits = model.cls(picked)
        return torch.nn.functional.cross_entropy(logits.float(), targets)

    forward = torch.compile(loss_fn) if compiled else loss_fn

    def one():
        loss = forward()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(warmup):
        one()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        one()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, help="an ordo run config (its 'model' and data.vocab_size)")
    ap.add_argument("--name", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--length", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    vocab_size = json.load(open(args.config))["data"].get("vocab_size", 30000)
    device = "cuda"
    model, opt = build(args.config, vocab_size, device)
    ids = torch.randint(5, vocab_size, (args.batch, args.length), device=device)
    labels = torch.full_like(ids, -100)
    labels.view(-1)[3::7] = ids.view(-1)[3::7]
    mask = torch.ones_like(ids)
    rows = (labels.view(-1) != -100).nonzero().squeeze(1)
    targets = labels.view(-1)[rows]
    eager = step_ms(model, opt, ids, mask, rows, targets, args.steps, args.warmup, compiled=False)
    try:
        compiled = step_ms(model, opt, ids, mask, rows, targets, args.steps, args.warmup, compiled=True)
    except Exception:  # torch.compile needs a working toolchain (triton); the eager figure still stands
        compiled = -1.0
    print(f"torch {args.name} {args.batch}x{args.length} eager_ms {eager:.3f} compile_ms {compiled:.3f} "
          f"(torch {torch.__version__}, {torch.cuda.get_device_name()})")


if __name__ == "__main__":
    main()
