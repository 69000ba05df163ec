#!/usr/bin/env python3
"""The PyTorch side of `ordo bench train --compare-torch`.

Times the same pretraining step as ordo — HuggingFace BertForMaskedLM built
from the same config (learned absolute positions), a random batch with ~15%
MLM targets, forward + loss, backward, AdamW — on the same number of CPU
threads, two ways:
  same_algorithm  the vocabulary projection only for the predicted rows, as
                  ordo does (the same loss, the same work as ordo's step);
  hf_as_is        BertForMaskedLM's own forward, which projects every row;
and with --compile, same_algorithm under torch.compile (inductor; its
compilation in the warm-up steps). --precision bf16 runs each forward and
loss under torch.autocast(dtype=torch.bfloat16), as PyTorch users train in
bf16 (bf16 products, FP32 weights and optimizer state), for ordo's
`--precision bf16`.
Prints `tokens_per_s SAME HF` on the first line (what ordo reads), then
`peak_rss_mib M` (what building the model and same_algorithm's steps add to
the peak resident memory: resident_peak.py), `compile_tokens_per_s C` (-1:
not asked or failed), then the phase split of each. Needs torch and
transformers; ordo itself does not.
"""
import argparse
import json
import statistics
import time

import torch
from transformers import BertConfig, BertForMaskedLM

from resident_peak import ResidentPeak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, help="an ordo run config (its 'model' object is used)")
    ap.add_argument("--vocab-size", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--length", type=int, required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", action="store_true", help="also time same_algorithm under torch.compile")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    m = json.load(open(args.config))["model"]
    keys = ["hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
            "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
            "type_vocab_size", "initializer_range", "layer_norm_eps"]
    config = BertConfig(vocab_size=args.vocab_size, **{k: m[k] for k in keys if k in m})
    torch.manual_seed(1)
    peak = ResidentPeak()
    model = BertForMaskedLM(config).to(args.device).train()
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, eps=1e-6)

    ids = torch.randint(5, args.vocab_size, (args.batch, args.length), device=args.device)
    labels = torch.full_like(ids, -100)
    labels.view(-1)[3::7] = ids.view(-1)[3::7]  # ~15% targets, as ordo's bench
    mask = torch.ones_like(ids)

    def sync():
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    rows = (labels.view(-1) != -100).nonzero().squeeze(1)
    targets = labels.view(-1)[rows]

    def autocast():
        return torch.autocast(args.device.split(":")[0], dtype=torch.bfloat16, enabled=args.precision == "bf16")

    def same_algorithm():
        with autocast():
            sequence = model.bert(input_ids=ids, attention_mask=mask).last_hidden_state
            picked = sequence.reshape(-1, sequence.shape[-1])[rows]
            return torch.nn.functional.cross_entropy(model.cls(picked).float(), targets)

    def hf_as_is():
        with autocast():
            return model(input_ids=ids, attention_mask=mask, labels=labels).loss

    results = [time_step(same_algorithm, opt, args, sync)]
    peak_mib = peak.mib()
    results.append(time_step(hf_as_is, opt, args, sync))
    names = ["same_algorithm", "hf_as_is"]
    compile_rate = -1.0
    if args.compile:
        try:
            results.append(time_step(torch.compile(same_algorithm), opt, args, sync))
            names.append("same_algorithm_compiled")
            compile_rate = args.batch * args.length / sum(results[-1])
        except Exception:  # inductor needs a working C++ toolchain; the eager figures still stand
            pass
    rates = [args.batch * args.length / sum(r) for r in results]
    print(f"tokens_per_s {rates[0]:.1f} {rates[1]:.1f}")
    print(f"peak_rss_mib {peak_mib:.1f}")
    print(f"compile_tokens_per_s {compile_rate:.1f}")
    for name, (f, b, u) in zip(names, results):
        print(f"{name}: forward_ms {1e3 * f:.2f} backward_ms {1e3 * b:.2f} optimizer_ms {1e3 * u:.2f} "
              f"threads {torch.get_num_threads()} torch {torch.__version__} precision {args.precision}")


def time_step(loss_fn, opt, args, sync):
    """Median forward, backward and optimizer seconds of one training step."""
    fwd, bwd, upd = [], [], []
    for i in range(args.warmup + args.steps):
        sync()
        t0 = time.perf_counter()
        loss = loss_fn()
        sync()
        t1 = time.perf_counter()
        loss.backward()
        sync()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        t3 = time.perf_counter()
        if i >= args.warmup:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
            upd.append(t3 - t2)
    return tuple(statistics.median(x) for x in (fwd, bwd, upd))


if __name__ == "__main__":
    main()
