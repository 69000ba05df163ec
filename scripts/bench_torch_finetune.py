#!/usr/bin/env python3
"""The PyTorch side of `ordo bench finetune --compare-torch`.

HuggingFace's BertForSequenceClassification (2 labels) or
BertForQuestionAnswering built from an ordo run config's model (learned
absolute positions), a random batch, on the same number of CPU threads:
  train  forward with the task loss, backward, AdamW (median seconds);
  eval   a forward under torch.no_grad(), the logits copied to a list;
evaluation first, then training, as ordo's bench. Prints `examples_per_s
TRAIN EVAL`, then `peak_rss_mib EVAL TRAIN`: what the model and the
evaluation, then the model and both, add to the peak resident memory
(resident_peak.py). --precision bf16 runs each forward under
torch.autocast(dtype=torch.bfloat16), for ordo's `--precision bf16`. Needs
torch and transformers; ordo does not.
"""
import argparse
import json
import statistics
import time

import torch
from transformers import BertConfig, BertForQuestionAnswering, BertForSequenceClassification

from resident_peak import ResidentPeak


def median_seconds(work, warmup, steps):
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        work()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--vocab-size", type=int, required=True)
    ap.add_argument("--task", choices=["classification", "span"], required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--length", type=int, required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    m = json.load(open(args.config))["model"]
    keys = ["hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
            "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
            "type_vocab_size", "initializer_range", "layer_norm_eps"]
    config = BertConfig(vocab_size=args.vocab_size, num_labels=2, **{k: m[k] for k in keys if k in m})
    torch.manual_seed(1)
    span = args.task == "span"
    peak = ResidentPeak()
    model = (BertForQuestionAnswering if span else BertForSequenceClassification)(config).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-5, eps=1e-6, weight_decay=0.01)
    ids = torch.randint(5, args.vocab_size, (args.batch, args.length))
    mask = torch.ones_like(ids)
    labels = torch.arange(args.batch) % 2
    starts = 1 + torch.arange(args.batch) % (args.length - 2)

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")

    def train():
        with autocast():
            loss = task_loss()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def task_loss():
        if span:
            return model(input_ids=ids, attention_mask=mask, start_positions=starts, end_positions=starts + 1).loss
        return model(input_ids=ids, attention_mask=mask, labels=labels).loss

    def evaluate():
        model.eval()
        with torch.no_grad(), autocast():
            out = model(input_ids=ids, attention_mask=mask)
            (out.start_logits if span else out.logits).tolist()
        model.train()

    t_eval = median_seconds(evaluate, args.warmup, args.steps)
    eval_mib = peak.mib()
    t_train = median_seconds(train, args.warmup, args.steps)
    print(f"examples_per_s {args.batch / t_train:.2f} {args.batch / t_eval:.2f}")
    print(f"peak_rss_mib {eval_mib:.1f} {peak.mib():.1f}")
    print(f"threads {torch.get_num_threads()} torch {torch.__version__} precision {args.precision}")


if __name__ == "__main__":
    main()
