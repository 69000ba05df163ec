#!/usr/bin/env python3
"""The downstream metrics' independent twin: scikit-learn, SciPy and the SQuAD
evaluation logic, in Python.

Reads the small hand-written files of tests/data/downstream/ the way the
reference code reads them (GLUE: csv.reader with delimiter '\\t' and no quote
character, the column positions of HuggingFace's glue processors; SQuAD: the
JSON as the official scripts load it), scores the committed predictions with
sklearn.metrics / scipy.stats (GLUE, as transformers' glue_compute_metrics
calls them) and with a transcription of evaluate-v1.1.py / evaluate-v2.0.py
(SQuAD), computes a set of single-function cases, and writes everything to
tests/data/downstream/golden.json. tests/downstream/test_downstream_golden.cpp
compares ordo against that file; CI never runs Python, and nothing here is a
dependency of ordo. Run from the repository root:

    pip install scipy scikit-learn
    python3 tests/twin/downstream_twin.py
"""
import collections
import csv
import json
import re
import string
import sys

import numpy as np
import scipy
import scipy.stats
import sklearn
import sklearn.metrics

DATA = "tests/data/downstream/"
GOLDEN = DATA + "golden.json"


# ---- GLUE -------------------------------------------------------------------

def read_tsv(path):
    with open(path, "r", encoding="utf-8-sig") as f:
        return list(csv.reader(f, delimiter="\t", quotechar=None))


# task -> (skip header?, label column) as HuggingFace's processors read dev files
GLUE_LABEL_COLUMN = {
    "cola": (False, 1), "sst2": (True, 1), "mrpc": (True, 0), "stsb": (True, -1), "qqp": (True, 5),
    "mnli": (True, -1), "qnli": (True, -1), "rte": (True, -1), "wnli": (True, -1),
}
GLUE_LABELS = {
    "cola": ["0", "1"], "sst2": ["0", "1"], "mrpc": ["0", "1"], "qqp": ["0", "1"], "wnli": ["0", "1"],
    "mnli": ["contradiction", "entailment", "neutral"], "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
}


def glue_score(task, data_path, pred_path):
    skip, column = GLUE_LABEL_COLUMN[task]
    rows = read_tsv(data_path)[1 if skip else 0:]
    gold = [r[column] for r in rows]
    pred_rows = read_tsv(pred_path)
    assert pred_rows[0] == ["index", "prediction"]
    pred = [r[1] for r in pred_rows[1:]]
    assert len(pred) == len(gold)
    if task == "stsb":
        g = np.array([float(x) for x in gold])
        p = np.array([float(x) for x in pred])
        return {"pearson": float(scipy.stats.pearsonr(p, g)[0]), "spearman": float(scipy.stats.spearmanr(p, g)[0])}
    labels = GLUE_LABELS[task]
    g = np.array([labels.index(x) for x in gold])
    p = np.array([labels.index(x) for x in pred])
    if task == "cola":
        return {"mcc": float(sklearn.metrics.matthews_corrcoef(g, p))}
    out = {"accuracy": float((p == g).mean())}
    if task in ("mrpc", "qqp"):
        out["f1"] = float(sklearn.metrics.f1_score(y_true=g, y_pred=p))
    return out


GLUE_FILES = [
    ("cola", "CoLA/dev.tsv", "CoLA/pred_dev.tsv"),
    ("sst2", "SST-2/dev.tsv", "SST-2/pred_dev.tsv"),
    ("mrpc", "MRPC/dev.tsv", "MRPC/pred_dev.tsv"),
    ("stsb", "STS-B/dev.tsv", "STS-B/pred_dev.tsv"),
    ("qqp", "QQP/dev.tsv", "QQP/pred_dev.tsv"),
    ("mnli", "MNLI/dev_matched.tsv", "MNLI/pred_dev_matched.tsv"),
    ("mnli", "MNLI/dev_mismatched.tsv", "MNLI/pred_dev_mismatched.tsv"),
    ("qnli", "QNLI/dev.tsv", "QNLI/pred_dev.tsv"),
    ("rte", "RTE/dev.tsv", "RTE/pred_dev.tsv"),
    ("wnli", "WNLI/dev.tsv", "WNLI/pred_dev.tsv"),
]


# ---- SQuAD: the official evaluation's logic -----------------------------------

def normalize_answer(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", s)
    return " ".join(s.split())


def f1_v1(prediction, ground_truth):
    p = normalize_answer(prediction).split()
    g = normalize_answer(ground_truth).split()
    same = sum((collections.Counter(p) & collections.Counter(g)).values())
    if same == 0:
        return 0
    precision, recall = 1.0 * same / len(p), 1.0 * same / len(g)
    return (2 * precision * recall) / (precision + recall)


def tokens_v2(s):
    return normalize_answer(s).split() if s else []


def f1_v2(a_gold, a_pred):
    g, p = tokens_v2(a_gold), tokens_v2(a_pred)
    same = sum((collections.Counter(g) & collections.Counter(p)).values())
    if len(g) == 0 or len(p) == 0:
        return int(g == p)
    if same == 0:
        return 0
    precision, recall = 1.0 * same / len(p), 1.0 * same / len(g)
    return (2 * precision * recall) / (precision + recall)


def exact(a_gold, a_pred):
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def squad_v1(dataset, predictions):
    em = f1 = total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                truths = [a["text"] for a in qa["answers"]]
                prediction = predictions[qa["id"]]
                em += max(normalize_answer(prediction) == normalize_answer(t) for t in truths)
                f1 += max(f1_v1(prediction, t) for t in truths)
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}


def squad_v2(dataset, preds, na_probs=None, na_prob_thresh=1.0):
    has_ans = {}
    exact_raw, f1_raw = {}, {}
    for article in dataset:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                qid = qa["id"]
                has_ans[qid] = bool(qa["answers"])
                gold = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
                exact_raw[qid] = max(exact(a, preds[qid]) for a in gold)
                f1_raw[qid] = max(f1_v2(a, preds[qid]) for a in gold)
    probs = na_probs if na_probs is not None else {k: 0.0 for k in preds}

    def thresholded(scores):
        return {q: (float(not has_ans[q]) if probs[q] > na_prob_thresh else s) for q, s in scores.items()}

    exact_t, f1_t = thresholded(exact_raw), thresholded(f1_raw)

    def block(qids):
        return [("exact", 100.0 * sum(exact_t[k] for k in qids) / len(qids)),
                ("f1", 100.0 * sum(f1_t[k] for k in qids) / len(qids)), ("total", len(qids))]

    out = collections.OrderedDict(block(list(exact_t)))
    for prefix, qids in (("HasAns", [k for k, v in has_ans.items() if v]),
                         ("NoAns", [k for k, v in has_ans.items() if not v])):
        if qids:
            for key, value in block(qids):
                out["%s_%s" % (prefix, key)] = value
    if na_probs is not None:
        for name, raw in (("exact", exact_raw), ("f1", f1_raw)):
            current = best = sum(1 for v in has_ans.values() if not v)
            best_thresh = 0.0
            for qid in sorted(na_probs, key=lambda k: na_probs[k]):
                if has_ans[qid]:
                    current += raw[qid]
                else:
                    current += -1 if preds[qid] else 0
                if current > best:
                    best, best_thresh = current, na_probs[qid]
            out["best_" + name] = 100.0 * best / len(raw)
            out["best_%s_thresh" % name] = best_thresh
    return out


def load(path):
    with open(DATA + path, encoding="utf-8") as f:
        return json.load(f)


# ---- single-function cases -----------------------------------------------------

NORMALIZE = [
    "The  Cat!", "cat", "A an THE", "theatre", "the_cat", "an-apple", "Ünïcode Ærøskøbing",
    "the\u0301 end", "a\u00b2 b", "\u03a3\u0391 \u039f\u0394\u039f\u03a3", "  spaced\tout\nwords  ",
    "l'été", "1,000.5 %", "the\u2014the", "\u03b1the the\u03b1 the", "Frédéric François Chopin",
    "¿Qué?", "a", "", "The the THE", "an_an", "ＴＨＥ end", "x the\u00a0y",
]
F1_PAIRS = [  # (prediction, gold)
    ("", ""), ("the", ""), ("cat", ""), ("", "cat"), ("a cat", "the cat"), ("cat cat dog", "cat dog dog"),
    ("The Solo Piano.", "the solo piano"), ("Romantic era of music", "the Romantic era"),
    ("mat mat the mat on", "on the mat"), ("FREDERIC Francois CHOPIN", "Frédéric François Chopin"),
    ("a mouse and the cat", "the cat and the mouse"), ("the", "a"),
]
RANKS = [[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], [2.5, 2.5, 2.5], [0.1, -0.2, 7.0, 0.1], [4.0, 3.0]]
CLASSIFICATION = [  # (gold, predicted)
    ([0, 1, 1, 0, 1], [1, 1, 1, 1, 1]),          # constant prediction: MCC 0
    ([1, 1, 1, 1], [1, 0, 1, 1]),                # constant gold: MCC 0
    ([0, 1, 1, 0, 1, 0], [0, 1, 0, 0, 1, 1]),
    ([0, 0, 0, 0], [0, 0, 0, 0]),                # no positive anywhere: F1 0
    ([2, 0, 1, 1, 2, 0, 2, 1], [2, 0, 2, 1, 0, 0, 2, 2]),  # three classes
]
CORRELATION = [  # (x, y)
    ([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0]),
    ([1.0, 2.0, 2.0, 3.0], [1.0, 3.0, 2.0, 4.0]),               # a tie in x
    ([0.5, 0.5, 1.5, 1.5, 3.0, 3.0], [1.0, 2.0, 2.0, 3.0, 3.0, 1.0]),  # ties on both sides
    ([1.0, 2.0], [5.0, 3.0]),                                     # two points: exactly -1
    ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]),                           # constant: undefined
]


def none_if_nan(x):
    return None if np.isnan(x) else float(x)


def main():
    golden = {
        "made_by": "tests/twin/downstream_twin.py with Python %s, numpy %s, scipy %s, scikit-learn %s"
                   % (sys.version.split()[0], np.__version__, scipy.__version__, sklearn.__version__),
        "glue": [], "squad": [],
    }
    for task, data, pred in GLUE_FILES:
        golden["glue"].append({"task": task, "data": data, "predictions": pred,
                               "metrics": glue_score(task, DATA + data, DATA + pred)})
    v1, v2 = load("squad/dev-v1.1.json")["data"], load("squad/dev-v2.0.json")["data"]
    pred_v1, pred_v2 = load("squad/pred-v1.1.json"), load("squad/pred-v2.0.json")
    na = load("squad/na_probs-v2.0.json")
    golden["squad"].append({"task": "squad", "data": "squad/dev-v1.1.json", "predictions": "squad/pred-v1.1.json",
                            "metrics": squad_v1(v1, pred_v1)})
    golden["squad"].append({"task": "squad2", "data": "squad/dev-v2.0.json", "predictions": "squad/pred-v2.0.json",
                            "metrics": squad_v2(v2, pred_v2)})
    golden["squad"].append({"task": "squad2", "data": "squad/dev-v2.0.json", "predictions": "squad/pred-v2.0.json",
                            "na_probs": "squad/na_probs-v2.0.json", "metrics": squad_v2(v2, pred_v2, na)})
    # the best running total reached inside a tie (at 0.5): the file's order decides the threshold
    golden["squad"].append({"task": "squad2", "data": "squad/dev-v2.0.json", "predictions": "squad/pred-v2.0.json",
                            "na_probs": "squad/na_probs_ties-v2.0.json",
                            "metrics": squad_v2(v2, pred_v2, load("squad/na_probs_ties-v2.0.json"))})
    golden["squad"].append({"task": "squad2", "data": "squad/dev-v2.0.json", "predictions": "squad/pred-v2.0.json",
                            "na_probs": "squad/na_probs-v2.0.json", "na_prob_thresh": 0.25,
                            "metrics": squad_v2(v2, pred_v2, na, 0.25)})
    golden["normalize"] = [{"text": s, "normalized": normalize_answer(s)} for s in NORMALIZE]
    golden["f1"] = [{"prediction": p, "gold": g, "exact": exact(g, p), "f1_v1": float(f1_v1(p, g)),
                     "f1_v2": float(f1_v2(g, p))} for p, g in F1_PAIRS]
    golden["ranks"] = [{"x": x, "ranks": [float(r) for r in scipy.stats.rankdata(x)]} for x in RANKS]
    golden["classification"] = [
        {"gold": g, "predicted": p, "accuracy": float(sklearn.metrics.accuracy_score(g, p)),
         "mcc": float(sklearn.metrics.matthews_corrcoef(g, p)),
         "f1": float(sklearn.metrics.f1_score(g, p, pos_label=1, average="binary", zero_division=0.0))
         if max(g + p) <= 1 else None}
        for g, p in CLASSIFICATION]
    with np.errstate(all="ignore"):
        import warnings
        warnings.simplefilter("ignore")
        golden["correlation"] = [
            {"x": x, "y": y, "pearson": none_if_nan(scipy.stats.pearsonr(x, y)[0]),
             "spearman": none_if_nan(scipy.stats.spearmanr(x, y)[0])} for x, y in CORRELATION]
    with open(GOLDEN, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", GOLDEN)


if __name__ == "__main__":
    main()
