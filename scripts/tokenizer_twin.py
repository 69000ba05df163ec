#!/usr/bin/env python3
"""The tokenizer's independent twin: HuggingFace's own BertTokenizer.

Runs transformers' Python BERT tokenizer (BasicTokenizer + WordpieceTokenizer,
`BertTokenizerLegacy` in transformers 5, `BertTokenizer` before) on a set of
tricky sentences, with the small vocabulary tests/data/tokenizer_vocab.txt, and
writes what it produced to tests/data/tokenizer_golden.json. ordo's test
(tests/text/test_tokenizer_golden.cpp) compares its own tokenizer against that
file, so the test suite never needs Python. Run from the repository root:

    pip install transformers   # CPU only; no model is downloaded
    python3 scripts/tokenizer_twin.py

Each case records the basic tokenizer's words (after the cutting-out of
special tokens that tokenize() does first), the word pieces and their ids,
for lower-casing on (BERT uncased) and off (BERT cased).
"""
import json
import sys
import unicodedata

import transformers

try:
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as PythonBertTokenizer
except ImportError:  # transformers 4: the Python tokenizer is BertTokenizer itself
    from transformers import BertTokenizer as PythonBertTokenizer

VOCAB_PATH = "tests/data/tokenizer_vocab.txt"
GOLDEN_PATH = "tests/data/tokenizer_golden.json"

# A small hand-made vocabulary: the specials, punctuation, whole words and "##"
# pieces, both cases, a few accented and non-Latin entries.
VOCAB = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
    + ["¿", "¡", "—", "–", "«", "»", "…", "“", "”", "、", "。"]
    + list("abcdefghijklmnopqrstuvwxyz")
    + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    + ["the", "dog", "cat", "chased", "hello", "world", "un", "##aff", "##able", "play", "##ing", "##ed",
       "run", "##ner", "naive", "cafe", "resume", "über", "uber", "ober", "Hello", "The", "Dog",
       "##ll", "straße", "strasse", "##ß", "ß", "σ", "ς", "οδος", "οδοσ", "##ος", "ο", "##δ",
       "中", "国", "人", "你", "好", "한", "국", "##국", "\u1112", "##\u1161", "##\u11ab", "##\u0323", "##̇", "x" * 100, "é", "##é",
       "ñ", "1", "2", "3", "##0", "##1", "2024", "##\u0301", "\u0301", "ﬁ", "fi"]
)

SENTENCES = [
    "Hello, world!",
    "The dog chased the cat.",
    "unaffable",
    "Héllo wörld",
    "Ça va? naïve café résumé",
    "ÜBER über Über",
    "¿Qué tal? ¡Hola!",
    "an em—dash and an en–dash…",
    "«quoted» “curly”",
    "中国人你好",
    "ab中cd",
    "한국",
    "한 韓",
    "\u3000ideographic space\u00a0nbsp\u2009thin",
    "tab\there\nnewline\rreturn",
    "line\u2028separator\u2029para",
    "vertical\x0btab\x0cfeed",
    "nul\x00char and \ufffdreplacement",
    "zero\u200bwidth\u200djoiner\ufeffbom",
    "soft\u00adhyphen",
    "private\ue000use",
    "control\x07bell\x1bescape\x7fdel\u0085nel",
    "[CLS] hello [SEP] world [SEP]",
    "hello[MASK]world",
    "[cls] lower-case specials",
    "[UNK] [PAD][PAD]",
    "[CL\x00S] hidden",
    "x" * 100,
    "x" * 101,
    "é" * 100,
    "playing played plays runner running",
    "qwzx",
    "e\u0301 combining acute",
    "ΟΔΟΣ οδος Σ",
    "İstanbul",
    "Straße STRASSE",
    "ﬁne ﬁ",
    "2024 2025 $100 50%",
    "^caret `backtick ~tilde $dollar",
    "a.b,c;d:e!f?g",
    "  leading and trailing  ",
    "",
    "   ",
    "emoji 😀 here",
    "ｆｕｌｌｗｉｄｔｈ",
    "x\u0301\u0323y",
    "Ω ohm sign \u2126 angstrom \u212b",
    "\u0958 devanagari qa",
    "ḱṷṓn",
]


def basic_words(tokenizer, text):
    """The BasicTokenizer's words after the added-token split tokenize() does first."""
    words = []
    for chunk in tokenizer.tokens_trie.split(text):
        if chunk in tokenizer.all_special_tokens:
            words.append(chunk)
        elif chunk:
            words.extend(tokenizer.basic_tokenizer.tokenize(chunk, never_split=tokenizer.all_special_tokens))
    return words


def main():
    assert len(set(VOCAB)) == len(VOCAB), "the twin's vocabulary has a duplicate"
    with open(VOCAB_PATH, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(token + "\n" for token in VOCAB))
    cases = []
    for lower_case in (True, False):
        tokenizer = PythonBertTokenizer(VOCAB_PATH, do_lower_case=lower_case)
        for text in SENTENCES:
            tokens = tokenizer.tokenize(text)
            cases.append({
                "text": text,
                "lower_case": lower_case,
                "basic": basic_words(tokenizer, text),
                "tokens": tokens,
                "ids": tokenizer.convert_tokens_to_ids(tokens),
            })
    golden = {
        "generator": "scripts/tokenizer_twin.py",
        "tokenizer": f"transformers {transformers.__version__} {PythonBertTokenizer.__name__}",
        "python": sys.version.split()[0],
        "unicode": unicodedata.unidata_version,
        "vocab": VOCAB_PATH,
        "cases": cases,
    }
    with open(GOLDEN_PATH, "w", encoding="utf-8", newline="\n") as f:
        json.dump(golden, f, ensure_ascii=True, indent=1)
        f.write("\n")
    print(f"{GOLDEN_PATH}: {len(cases)} cases from {golden['tokenizer']} (Unicode {golden['unicode']})")


if __name__ == "__main__":
    main()
