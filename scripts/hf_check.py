#!/usr/bin/env python3
"""HuggingFace compatibility of ordo checkpoints, checked both ways, by hand.

  ordo -> HF   an ordo checkpoint (given with --checkpoint, or three written here
               by short `ordo pretrain` runs on the synthetic language: MLM,
               MLM + NSP, causal decoder) is loaded by
               transformers' BertForMaskedLM and BertForPreTraining
               (BertLMHeadModel for a decoder); `ordo forward` and HF run the
               same batch and every hidden state, attention and the logits
               are compared.
  HF -> ordo   transformers builds BertForPreTraining, BertForMaskedLM and a
               BertLMHeadModel (is_decoder) with random weights, writes them
               with save_pretrained (safetensors), and `ordo forward` reads
               each directory and must give HF's outputs; the same for
               GPT2LMHeadModel and RobertaForMaskedLM (their own layouts,
               RoBERTa's padding-skipping positions, GPT-2 without segments).

HF runs in float32 (as ordo) and in float64 (the exact reference); the table
gives max |ordo - HF| and max |ordo - HF| / max |HF| per tensor. The script
exits non-zero when a loading warning names a tensor ordo wrote or when any
relative difference against HF's float64 outputs exceeds 1e-4 (f32 rounding
through a few layers is ~1e-6; a real mismatch is 1e-3 or more).

Run from the repository root after building ordo (no Python is needed by ordo
itself; this is a check for people):
    pip install torch transformers safetensors
    python3 scripts/hf_check.py [--ordo build/ordo] [--checkpoint DIR] [--keep DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file
from transformers import (BertConfig, BertForMaskedLM, BertForPreTraining, BertLMHeadModel, GPT2Config,
                          GPT2LMHeadModel, RobertaConfig, RobertaForMaskedLM)

TOLERANCE = 1e-4


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout


def make_batch(vocab, max_positions, type_vocab, seed=7):
    """4 rows of 13 tokens, two of them right-padded, two segments, default positions."""
    g = torch.Generator().manual_seed(seed)
    B, L = 4, min(13, max_positions)
    ids = torch.randint(1, vocab, (B, L), generator=g)
    lengths = [L, L - 3, L - 6, L]
    mask = torch.zeros(B, L, dtype=torch.long)
    segments = torch.zeros(B, L, dtype=torch.long)
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
        ids[b, n:] = 0
        if type_vocab > 1:
            segments[b, n // 2:n] = 1
    return {"input_ids": ids, "segment_ids": segments, "attention_mask": mask}


def ordo_forward(ordo, checkpoint, batch, work, tag):
    inp = os.path.join(work, f"{tag}.input.json")
    out = os.path.join(work, f"{tag}.ordo.safetensors")
    with open(inp, "w") as f:
        json.dump({k: v.tolist() for k, v in batch.items()}, f)
    run([ordo, "forward", "--checkpoint", checkpoint, "--input", inp, "--out", out])
    return load_file(out)


def hf_outputs(model, batch, dtype):
    model = model.to(dtype).eval()
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], token_type_ids=batch["segment_ids"],
                    attention_mask=batch["attention_mask"], output_hidden_states=True,
                    output_attentions=True, **({"use_cache": False} if model.config.is_decoder else {}))
    d = {f"hidden_states.{i}": h for i, h in enumerate(out.hidden_states)}
    d.update({f"attentions.{i + 1}": a for i, a in enumerate(out.attentions)})
    d["logits"] = out.prediction_logits if hasattr(out, "prediction_logits") else out.logits
    if getattr(out, "seq_relationship_logits", None) is not None:
        d["nsp_logits"] = out.seq_relationship_logits
    return d


def compare(title, ordo_out, model, batch):
    """Prints one table; returns the worst relative difference against HF in float64."""
    hf32 = hf_outputs(model, batch, torch.float32)
    hf64 = hf_outputs(model, batch, torch.float64)
    print(f"\n{title}")
    print(f"  {'tensor':<18} {'shape':<18} {'max|d| vs HF f32':>17} {'rel vs HF f32':>14} {'rel vs HF f64':>14}")
    worst = 0.0
    names = [n for n in hf64 if n in ordo_out or n != "nsp_logits"]
    for name in names:
        if name not in ordo_out:
            print(f"  {name:<18} missing from ordo's output")
            worst = float("inf")
            continue
        o = ordo_out[name].double()
        a, b = hf32[name].double(), hf64[name]
        if o.shape != b.shape:
            print(f"  {name:<18} shape {tuple(o.shape)} vs HF {tuple(b.shape)}")
            worst = float("inf")
            continue
        abs32 = (o - a).abs().max().item()
        rel32 = abs32 / a.abs().max().item()
        rel64 = (o - b).abs().max().item() / b.abs().max().item()
        worst = max(worst, rel64)
        print(f"  {name:<18} {str(tuple(o.shape)):<18} {abs32:>17.3e} {rel32:>14.3e} {rel64:>14.3e}")
    return worst


def loading_problems(cls, directory):
    model, info = cls.from_pretrained(directory, attn_implementation="eager", output_loading_info=True)
    problems = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    return model, problems


def ordo_to_hf(ordo, checkpoint, work):
    config = json.load(open(os.path.join(checkpoint, "config.json")))
    decoder = bool(config.get("is_decoder", False))  # ordo writes its `decoder` as HF's is_decoder
    print(f"== ordo -> HF: {checkpoint} (pe {config.get('pe')}, is_decoder {decoder}) ==")
    if config.get("pe", "ape_learned") != "ape_learned" or config.get("pre_layer_norm"):
        sys.exit("only absolute learned positions in a post-LN model have an HF twin")
    batch = make_batch(config["vocab_size"], config["max_position_embeddings"], config["type_vocab_size"])
    ordo_out = ordo_forward(ordo, checkpoint, batch, work, "ordo_" + os.path.basename(os.path.dirname(os.path.dirname(checkpoint))))
    worst, failed = 0.0, False
    classes = [BertLMHeadModel] if decoder else [BertForMaskedLM, BertForPreTraining]
    for cls in classes:
        model, problems = loading_problems(cls, checkpoint)
        # An MLM-only checkpoint has no pooler / NSP head for BertForPreTraining;
        # BertForMaskedLM does not use the pooler ordo may have written.
        allowed = ("bert.pooler.", "cls.seq_relationship.")
        serious = {k: [n for n in v if not n.startswith(allowed)] for k, v in problems.items()}
        serious = {k: v for k, v in serious.items() if v}
        print(f"\n{cls.__name__}.from_pretrained: {'loaded every tensor' if not problems else problems}")
        if serious:
            print(f"  PROBLEM: {serious}")
            failed = True
        out = dict(ordo_out)
        if cls is BertForPreTraining and any(n.startswith(allowed) for v in problems.values() for n in v):
            out.pop("nsp_logits", None)  # HF initialised the head afresh: nothing to compare
        worst = max(worst, compare(f"ordo forward vs {cls.__name__}", out, model, batch))
    return worst, failed


def redraw(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(0.0, 0.2)
            if name.endswith("LayerNorm.weight"):
                p.add_(1.0)


def hf_to_ordo(ordo, work):
    print("\n== HF -> ordo: checkpoints written by transformers' save_pretrained ==")
    base = dict(vocab_size=101, hidden_size=48, num_hidden_layers=3, num_attention_heads=4, intermediate_size=80,
                max_position_embeddings=40, type_vocab_size=2, hidden_act="gelu", layer_norm_eps=1e-12,
                pad_token_id=0)
    worst, failed = 0.0, False
    for cls, extra in ((BertForPreTraining, {}), (BertForMaskedLM, {}), (BertLMHeadModel, {"is_decoder": True})):
        model = cls(BertConfig(**base, **extra, attn_implementation="eager"))
        redraw(model, seed=3)
        directory = os.path.join(work, f"hf_{cls.__name__}")
        model.save_pretrained(directory, safe_serialization=True)
        batch = make_batch(base["vocab_size"], base["max_position_embeddings"], base["type_vocab_size"], seed=11)
        ordo_out = ordo_forward(ordo, directory, batch, work, cls.__name__)
        if cls is BertLMHeadModel:
            # ordo must have read is_decoder: causal attention, nothing above the diagonal.
            for l in range(1, base["num_hidden_layers"] + 1):
                if torch.triu(ordo_out[f"attentions.{l}"], diagonal=1).abs().max().item() != 0:
                    print(f"  PROBLEM: ordo's attentions.{l} is not causal for an is_decoder checkpoint")
                    failed = True
        worst = max(worst, compare(f"ordo forward vs {cls.__name__} ({directory})", ordo_out, model, batch))
    return worst, failed


def families_to_ordo(ordo, work):
    """GPT-2 and RoBERTa as transformers writes them, through `ordo forward`."""
    print("\n== HF -> ordo: GPT2LMHeadModel and RobertaForMaskedLM ==")
    worst, failed = 0.0, False
    models = [("gpt2", GPT2LMHeadModel(GPT2Config(vocab_size=101, n_positions=40, n_embd=48, n_layer=3, n_head=4,
                                                  attn_implementation="eager")), 0),
              ("roberta", RobertaForMaskedLM(RobertaConfig(vocab_size=101, hidden_size=48, num_hidden_layers=3,
                                                           num_attention_heads=4, intermediate_size=80,
                                                           max_position_embeddings=42, type_vocab_size=1,
                                                           pad_token_id=1, attn_implementation="eager")), 1)]
    for name, model, pad in models:
        redraw(model, seed=5)
        with torch.no_grad():  # redraw's "+1" is for BERT's names; GPT-2's and RoBERTa's gains too
            for n, p in model.named_parameters():
                if ("ln_" in n or "layer_norm" in n) and n.endswith("weight"):
                    p.add_(1.0)
        directory = os.path.join(work, f"hf_{name}")
        model.save_pretrained(directory, safe_serialization=True)
        batch = make_batch(101, 40, 1, seed=13)
        batch["input_ids"][batch["attention_mask"] == 0] = pad
        del batch["segment_ids"]  # GPT-2 adds token_type_ids through wte: none given, none added
        ordo_out = ordo_forward(ordo, directory, batch, work, name)
        hf = {}
        for dtype in (torch.float32, torch.float64):
            with torch.no_grad():
                out = model.to(dtype).eval()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                             output_hidden_states=True, output_attentions=True)
            d = {f"hidden_states.{i}": h for i, h in enumerate(out.hidden_states)}
            d.update({f"attentions.{i + 1}": a for i, a in enumerate(out.attentions)})
            d["logits"] = out.logits
            hf[dtype] = d
        print(f"\nordo forward vs {type(model).__name__} ({directory})")
        print(f"  {'tensor':<18} {'shape':<18} {'max|d| vs HF f32':>17} {'rel vs HF f32':>14} {'rel vs HF f64':>14}")
        for key in hf[torch.float64]:
            if key not in ordo_out:
                print(f"  {key:<18} missing from ordo's output")
                failed = True
                continue
            o, a, b = ordo_out[key].double(), hf[torch.float32][key].double(), hf[torch.float64][key]
            abs32 = (o - a).abs().max().item()
            rel32 = abs32 / a.abs().max().item()
            rel64 = (o - b).abs().max().item() / b.abs().max().item()
            worst = max(worst, rel64)
            print(f"  {key:<18} {str(tuple(o.shape)):<18} {abs32:>17.3e} {rel32:>14.3e} {rel64:>14.3e}")
    return worst, failed


def make_ordo_checkpoint(ordo, work, objective):
    """A short `ordo pretrain` run of the tiny config on the synthetic language."""
    run_dir = os.path.join(work, f"ordo_run_{objective.replace('+', '_')}")
    sets = ["train.steps=150", "train.batch_size=8", "train.max_seq_length=32",
            "train.checkpoint_every=150", "train.eval_every=150", "train.log_every=50",
            "data.synthetic_sentences=2000", "data.vocab_size=500", f"data.objective={objective}"]
    if objective == "causal":
        sets.append("model.decoder=true")
    cmd = [ordo, "pretrain", "--config", "configs/tiny.json", "--out", run_dir, "--quiet", "--overwrite"]
    for s in sets:
        cmd += ["--set", s]
    run(cmd)
    checkpoints = sorted(os.listdir(os.path.join(run_dir, "checkpoints")))
    return os.path.join(run_dir, "checkpoints", checkpoints[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ordo", default="build/ordo", help="the ordo binary")
    p.add_argument("--checkpoint", help="an ordo checkpoint directory (default: written by a short ordo pretrain run)")
    p.add_argument("--keep", help="write everything under this directory and keep it")
    args = p.parse_args()
    torch.set_num_threads(2)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    work = args.keep or tempfile.mkdtemp(prefix="ordo-hf-check-")
    os.makedirs(work, exist_ok=True)
    if args.checkpoint:
        checkpoints = [args.checkpoint]
    else:  # an MLM run, an MLM + NSP run (pooler and NSP head written) and a causal decoder run
        checkpoints = [make_ordo_checkpoint(args.ordo, work, o) for o in ("mlm", "mlm+nsp", "causal")]
    w1, f1 = 0.0, False
    for checkpoint in checkpoints:
        w, f = ordo_to_hf(args.ordo, checkpoint, work)
        w1, f1 = max(w1, w), f1 or f
    w2, f2 = hf_to_ordo(args.ordo, work)
    w3, f3 = families_to_ordo(args.ordo, work)
    worst = max(w1, w2, w3)
    f2 = f2 or f3
    print(f"\nworst relative difference against HF float64: {worst:.3e} (tolerance {TOLERANCE:.0e})")
    if f1 or f2 or not worst <= TOLERANCE:
        sys.exit(1)
    print("OK: ordo and transformers agree both ways")


if __name__ == "__main__":
    main()
