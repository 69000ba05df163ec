#!/usr/bin/env python3
"""The PyTorch twin of ordo's fine-tuning heads: golden files for tests/nn/test_task_golden.cpp.

The twin's BERT weights (tests/data/twin/bert/, written by bert_twin.py) in
HuggingFace's BertForSequenceClassification (3 labels) and
BertForQuestionAnswering, their new head drawn N(0, 0.2) from a fixed seed, and
saved as save_pretrained writes them:
  tests/data/twin/seq_cls/  config.json (id2label, ...) + model.safetensors
  tests/data/twin/qa/       the same for the span head (no pooler)
and for each a golden file of one fine-tuning step on bert_twin's batch:
  golden_seq_cls.safetensors  labels [3]; logits, loss, every gradient,
                              then the losses of 5 AdamW steps
  golden_qa.safetensors       start/end positions [3] (row 2's start past the
                              window: HF clamps it to L and ignores it);
                              start/end logits, loss, every gradient, AdamW losses
Computed in float64 from the stored f32 weights, as bert_twin.py (its bounds
apply). Dropout is 0. Run from the repository root after bert_twin.py:
    python3 tests/twin/task_twin.py
"""
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import BertForQuestionAnswering, BertForSequenceClassification

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_twin import OUT, adamw_losses, f32, make_batch, outputs_of, scalar  # noqa: E402

LABELS = torch.tensor([0, 2, 1])
STARTS = torch.tensor([3, 1, 40])  # 40 > L = 11: clamped to 11 and ignored, as HF does
ENDS = torch.tensor([5, 6, 2])


def with_new_head(cls, head, **kwargs):
    model = cls.from_pretrained(os.path.join(OUT, "bert"), attn_implementation="eager", **kwargs)
    torch.manual_seed(5)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith(head):
                p.normal_(0.0, 0.2)
    model.eval()
    return model


def save_golden(name, golden):
    save_file({k: v.contiguous() for k, v in golden.items()}, os.path.join(OUT, name),
              metadata={"made_by": f"tests/twin/task_twin.py, torch {torch.__version__}, "
                                   f"transformers {transformers.__version__}"})


def main():
    if not os.path.isdir(os.path.join(OUT, "bert")):
        sys.exit("run from the repository root after tests/twin/bert_twin.py")
    torch.set_num_threads(1)
    ids, segments, mask, _, _ = make_batch()
    batch = {"input_ids": ids, "segment_ids": segments, "attention_mask": mask}

    cls = with_new_head(BertForSequenceClassification, "classifier.", num_labels=3,
                        id2label={0: "contradiction", 1: "entailment", 2: "neutral"},
                        label2id={"contradiction": 0, "entailment": 1, "neutral": 2})
    cls.save_pretrained(os.path.join(OUT, "seq_cls"), safe_serialization=True)
    cls = cls.double()

    def cls_forward():
        return cls(input_ids=ids, token_type_ids=segments, attention_mask=mask, labels=LABELS,
                   output_hidden_states=True, output_attentions=True)

    out = cls_forward()
    assert torch.allclose(out.loss, torch.nn.functional.cross_entropy(out.logits, LABELS), rtol=1e-14, atol=0)
    out.loss.backward()
    golden = dict(batch, labels=LABELS, loss=scalar(out.loss), logits=f32(out.logits))
    golden.update(outputs_of(cls, out, None))
    cls.zero_grad()
    golden["adamw_losses"], golden["adamw_grad_norms"] = adamw_losses(cls, lambda: cls_forward().loss)
    save_golden("golden_seq_cls.safetensors", golden)
    print(f"seq_cls: loss {golden['loss'].item():.6f}, AdamW {[round(x, 6) for x in golden['adamw_losses'].tolist()]}")

    qa = with_new_head(BertForQuestionAnswering, "qa_outputs.")
    qa.save_pretrained(os.path.join(OUT, "qa"), safe_serialization=True)
    qa = qa.double()

    def qa_forward():
        return qa(input_ids=ids, token_type_ids=segments, attention_mask=mask, start_positions=STARTS,
                  end_positions=ENDS, output_hidden_states=True, output_attentions=True)

    out = qa_forward()
    out.loss.backward()
    golden = dict(batch, start_positions=STARTS, end_positions=ENDS, loss=scalar(out.loss),
                  start_logits=f32(out.start_logits), end_logits=f32(out.end_logits))
    golden.update(outputs_of(qa, out, None))
    qa.zero_grad()
    golden["adamw_losses"], golden["adamw_grad_norms"] = adamw_losses(qa, lambda: qa_forward().loss)
    save_golden("golden_qa.safetensors", golden)
    print(f"qa: loss {golden['loss'].item():.6f}, AdamW {[round(x, 6) for x in golden['adamw_losses'].tolist()]}")


if __name__ == "__main__":
    main()
