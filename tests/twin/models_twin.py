#!/usr/bin/env python3
"""Golden files for the HF families ordo reads besides BERT: GPT-2 and RoBERTa.

For each configuration below, transformers builds the model (GPT2LMHeadModel,
RobertaForMaskedLM) with every weight re-drawn from N(0, 0.2) (LayerNorm gains
1 + N(0, 0.2)), writes it with save_pretrained (safetensors, f32) into
tests/data/twin/<name>/, runs a fixed padded batch through it in float64 from
those f32 weights, and writes tests/data/twin/golden_<name>.safetensors:
input_ids, attention_mask, hidden_states.0..L (HF's order: for GPT-2 the last
after ln_f), attentions.1..L and logits. tests/nn/test_models_golden.cpp reads
them: ordo must load each folder as HF wrote it and give the same tensors.

Configurations (odd sizes; tied and untied LM heads):
  gpt2_tied       vocab 61, n_positions 19, n_embd 24, 2 layers, 3 heads, n_inner None (96), tied
  gpt2_untied     vocab 57, n_positions 23, n_embd 20, 3 layers, 4 heads, n_inner 37, untied
  roberta_tied    vocab 53, 22 positions (20 usable), hidden 24, 2 layers, 2 heads, intermediate 37, tied
  roberta_untied  vocab 47, 18 positions, hidden 20, 3 layers, 4 heads, intermediate 29, untied, gelu_new

Run from the repository root (CI never runs Python):
    pip install torch transformers safetensors
    python3 tests/twin/models_twin.py
"""
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel, RobertaConfig, RobertaForMaskedLM

OUT = "tests/data/twin"


def redraw(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.2
            is_gain = ("ln_" in name or "LayerNorm" in name or "layer_norm" in name) and name.endswith("weight")
            p.copy_((1.0 + noise) if is_gain else noise)


def batch(vocab, length, pad, bos=None, eos=None, seed=3):
    """3 rows of `length`; rows 1 and 2 right-padded after 8 and 5 tokens."""
    g = torch.Generator().manual_seed(seed)
    low = 3 if bos is not None else 0
    ids = torch.randint(low, vocab, (3, length), generator=g)
    mask = torch.ones(3, length, dtype=torch.long)
    for row, n in ((1, 8), (2, 5)):
        mask[row, n:] = 0
        ids[row, n:] = pad
    if bos is not None:
        ids[:, 0] = bos
        for row, n in ((0, length), (1, 8), (2, 5)):
            ids[row, n - 1] = eos
    return ids, mask


def golden(name, model, ids, mask):
    folder = os.path.join(OUT, name)
    model.save_pretrained(folder, safe_serialization=True)
    with torch.no_grad():
        out64 = model.double().eval()(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                                      output_attentions=True)
        out32 = model.float().eval()(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                                     output_attentions=True)
    tensors = {"input_ids": ids, "attention_mask": mask, "logits": out64.logits.float().contiguous()}
    worst = (out64.logits - out32.logits.double()).abs().max().item()
    for i, h in enumerate(out64.hidden_states):
        tensors[f"hidden_states.{i}"] = h.float().contiguous()
        worst = max(worst, (h - out32.hidden_states[i].double()).abs().max().item())
    for i, a in enumerate(out64.attentions):
        tensors[f"attentions.{i + 1}"] = a.float().contiguous()
    meta = {"made_by": f"tests/twin/models_twin.py, torch {torch.__version__}, transformers {transformers.__version__}, "
                       f"Python {sys.version.split()[0]}",
            "model": type(model).__name__}
    save_file(tensors, os.path.join(OUT, f"golden_{name}.safetensors"), metadata=meta)
    print(f"{name}: {type(model).__name__}, {len(out64.hidden_states)} hidden states; HF f32 vs f64 {worst:.2e}")


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    gpt2 = [("gpt2_tied", dict(vocab_size=61, n_positions=19, n_embd=24, n_layer=2, n_head=3, n_inner=None,
                               tie_word_embeddings=True), 11),
            ("gpt2_untied", dict(vocab_size=57, n_positions=23, n_embd=20, n_layer=3, n_head=4, n_inner=37,
                                 tie_word_embeddings=False), 13)]
    for k, (name, kw, length) in enumerate(gpt2):
        config = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, activation_function="gelu_new",
                            layer_norm_epsilon=1e-5, bos_token_id=kw["vocab_size"] - 1,
                            eos_token_id=kw["vocab_size"] - 1, **kw)
        config._attn_implementation = "eager"
        model = GPT2LMHeadModel(config)
        redraw(model, 100 + k)
        if config.tie_word_embeddings:
            assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
        ids, mask = batch(kw["vocab_size"], length, pad=0)
        golden(name, model, ids, mask)
    roberta = [("roberta_tied", dict(vocab_size=53, hidden_size=24, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, max_position_embeddings=22, hidden_act="gelu",
                                     tie_word_embeddings=True), 12),
               ("roberta_untied", dict(vocab_size=47, hidden_size=20, num_hidden_layers=3, num_attention_heads=4,
                                       intermediate_size=29, max_position_embeddings=18, hidden_act="gelu_new",
                                       tie_word_embeddings=False), 14)]
    for k, (name, kw, length) in enumerate(roberta):
        config = RobertaConfig(type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, layer_norm_eps=1e-5, **kw)
        config._attn_implementation = "eager"
        model = RobertaForMaskedLM(config)
        redraw(model, 200 + k)
        if config.tie_word_embeddings:
            assert model.lm_head.decoder.weight.data_ptr() == model.roberta.embeddings.word_embeddings.weight.data_ptr()
        ids, mask = batch(kw["vocab_size"], length, pad=1, bos=0, eos=2)
        golden(name, model, ids, mask)


if __name__ == "__main__":
    main()
