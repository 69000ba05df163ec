#!/usr/bin/env python3
"""Golden files for ordo's byte-level BPE (text/bpe.h) from HF tokenizers.

Trains two byte-level BPE tokenizers with HF `tokenizers`' ByteLevelBPETokenizer
on local text — Debian's fortunes (fortunes-min: /usr/share/games/fortunes),
Debian's license texts (/usr/share/common-licenses) and ordo's synthetic
corpus (`ordo data synth`) — one RoBERTa-style (specials <s> <pad> </s> <unk>
<mask>) and one GPT-2-style (<|endoftext|> alone), saves each as vocab.json + merges.txt (the GPT-2-style one also as tokenizer.json,
HF's other format) under tests/data/bpe/,
and writes what HF's tokenizer gives on the test lines: ids for every line,
character offsets for the first --offset-lines (the hand-written ones among
them), and the lines themselves.

The test lines are drawn from the same sources (training lines and lines the
training never saw) plus hand-written ones for what the pattern must get
right: Unicode letters and marks of several scripts, emoji (ZWJ sequences,
skin tones, flags), repeated and unusual whitespace (tabs, U+00A0, U+3000,
U+0085, U+001C), newlines inside a line, contractions in all cases, numbers
of several scripts, and the special tokens inside text.

Run from the repository root after building ordo (CI never runs Python):
    pip install tokenizers
    python3 tests/twin/bpe_twin.py [--ordo build/ordo]
"""
import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile

import tokenizers
from tokenizers import ByteLevelBPETokenizer

OUT = "tests/data/bpe"
HAND_WRITTEN = [
    "Hello world", "hello  world", "hello   world  ", "  leading spaces", "trailing spaces   ",
    "tab\there", "tabs\t\t\tand spaces \t mixed", "line one\nline two", "blank\n\n\nlines", "\n", " ", "   ",
    "crlf line\r\nnext", "I don't know, you're right; we'll see, they've gone, I'm here, he'd go, it's",
    "SHOUTING DON'T WON'T I'LL YOU'RE", "'s 't 're 've 'm 'll 'd", "''quoted'' and 'single' 'sup",
    "rock 'n' roll", "O'Brien's dog's bone", "numbers 12345 and 3.14159 and 1,000,000 and 007",
    "Arabic-Indic ٣٤٥ Devanagari ४५६ fractions ½ ¾ superscript ² roman Ⅻ",
    "Café naïve façade résumé — déjà vu", "Ünïcödé ÀÉÎÕÜ ß ẞ ﬁ ligature", "ΑΒΓ αβγ Ελληνικά",
    "Русский текст, ещё", "日本語のテキスト、漢字とかな", "中文文本，标点符号。", "한국어 텍스트",
    "עברית ימין לשמאל", "العربية من اليمين", "हिन्दी में लिखा", "ไทย ภาษา",
    "emoji 😀 😃 😄 😁 👍🏽 👩‍👩‍👧‍👦 🇫🇷 🇯🇵 ❤️ ✨", "😀😀😀", "a😀b", " 😀 ", "🏳️‍🌈 flag",
    "combining e\u0301 a\u0300 n\u0303", "zero\u200bwidth\u200dspace", "nbsp\u00a0here", "ideographic\u3000space",
    "next line\u0085char", "file sep\u001cchar", "vertical\u000btab form\u000cfeed",
    "symbols @#$%^&*()_+-=[]{}|;:,.<>?/~`", "!!!???...,,,", "a-b_c.d/e\\f", "email me@example.org now",
    "url https://www.debian.org/doc/?q=1&x=2", "<s>special</s> inside <mask> text <pad><unk>",
    "<|endoftext|>gpt end<|endoftext|>", "< s > not special", "mixed123letters456", "x²+y²=z²",
    "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters 𝟙𝟚𝟛", "soft\u00adhyphen", "private \ue000 use",
]


def read_lines(paths):
    lines = []
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            lines += [line.rstrip("\n") for line in f]
    return [l for l in lines if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ordo", default="build/ordo")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--offset-lines", type=int, default=300)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp()

    fortunes = sorted(glob.glob("/usr/share/games/fortunes/*.u8")) or sorted(
        p for p in glob.glob("/usr/share/games/fortunes/*") if not p.endswith(".dat"))
    licenses = sorted(glob.glob("/usr/share/common-licenses/*"))
    licenses = [p for p in licenses if os.path.isfile(p)]
    synth = os.path.join(work, "synth")
    subprocess.run([args.ordo, "data", "synth", "--sentences", "3000", "--out", synth, "--seed", "5"],
                   check=True, capture_output=True)
    synthetic = read_lines([os.path.join(synth, "corpus.txt")])
    fortune_lines = read_lines(fortunes)
    license_lines = read_lines(licenses)

    rng = random.Random(30)
    # Training text: most of the fortunes and the synthetic corpus, half the licenses.
    rng.shuffle(license_lines)
    seen_licenses, unseen_licenses = license_lines[: len(license_lines) // 2], license_lines[len(license_lines) // 2:]
    train_file = os.path.join(work, "train.txt")
    with open(train_file, "w", encoding="utf-8") as f:
        f.write("\n".join(fortune_lines + synthetic + seen_licenses + HAND_WRITTEN[:10]) + "\n")

    # Test lines: hand-written ones, then a draw from each source (seen and unseen), some joined by newlines.
    pool = fortune_lines + synthetic + seen_licenses + unseen_licenses
    lines = list(HAND_WRITTEN)
    while len(lines) < args.lines:
        r = rng.random()
        if r < 0.08:
            line = "\n".join(rng.sample(pool, 2))
        elif r < 0.14:
            line = rng.choice(pool).replace(" ", "  " if rng.random() < 0.5 else " \t ")
        else:
            line = rng.choice(pool)
        lines.append(line[:120])

    cases = {}
    made_by = f"tests/twin/bpe_twin.py, tokenizers {tokenizers.__version__}, Python {sys.version.split()[0]}"
    for name, vocab_size, specials in [("roberta", 2500, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]),
                                        ("gpt2", 1500, ["<|endoftext|>"])]:
        tok = ByteLevelBPETokenizer()
        tok.train([train_file], vocab_size=vocab_size, min_frequency=2, special_tokens=specials, show_progress=False)
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        tok.save_model(folder)  # vocab.json + merges.txt
        if name == "gpt2":  # the other format once (the same model): tokenizer.json
            tok.save(os.path.join(folder, "tokenizer.json"), pretty=False)
        encodings = tok.encode_batch(lines)
        cases[name] = {
            "vocab_size": tok.get_vocab_size(),
            "ids": [e.ids for e in encodings],
            "offsets": [[o for pair in e.offsets for o in pair] for e in encodings[:args.offset_lines]],
        }
        # HF's decode gives the text back (no normaliser, byte-level): the round trip ordo checks too.
        bad = [i for i, (l, e) in enumerate(zip(lines, encodings)) if tok.decode(e.ids, skip_special_tokens=False) != l]
        print(f"{name}: vocab {tok.get_vocab_size()}, {sum(len(e.ids) for e in encodings)} tokens; "
              f"{len(bad)} lines HF does not decode back")

    golden = {"made_by": made_by,
              "sources": {"fortunes": fortunes, "licenses": len(licenses), "synthetic_sentences": 3000,
                          "train_lines": len(fortune_lines) + len(synthetic) + len(seen_licenses) + 10},
              "lines": lines, "tokenizers": cases}
    with open(os.path.join(OUT, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    chars = sum(len(l) for l in lines)
    print(f"{len(lines)} lines, {chars} characters -> {OUT}/golden.json "
          f"({os.path.getsize(os.path.join(OUT, 'golden.json'))} bytes)")


if __name__ == "__main__":
    main()
