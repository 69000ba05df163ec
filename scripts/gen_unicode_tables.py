#!/usr/bin/env python3
"""Writes text/unicode_tables.inc: the Unicode data ordo's BERT tokenizer needs.

Everything comes from this Python's `unicodedata` module and its str methods,
so the tables match what HuggingFace's Python BertTokenizer sees when it runs
under the same Python. Run from the repository root:

    python3 scripts/gen_unicode_tables.py

Tables (all sorted by code point, compacted into ranges where the data allows):
  kPropertyRanges     [start, next start) -> flag bits (category C*, P*, Zs, Mn,
                      str.isspace, case-ignorable, cased, str.isalnum, L*, N*) — see unicode.h.
  kCombiningClass     [first, last] -> canonical combining class (nonzero only).
  kLowerRuns          runs of code points (first, last, stride) whose str.lower()
                      is one code point at a fixed offset `delta`.
  kLowerSpecial       code points whose str.lower() is several code points.
  kDecomposition      code point -> its full canonical decomposition (NFD of the
                      single character), Hangul syllables excluded (algorithmic).
  kComposition        (first, second) -> primary composite, for NFC; Hangul excluded.
"""
import sys
import unicodedata

MAX_CP = 0x10FFFF
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3

FLAG_CONTROL = 1        # general category C* (HF's _is_control, before its \t\n\r exception)
FLAG_PUNCT = 2          # general category P*
FLAG_ZS = 4             # general category Zs
FLAG_MN = 8             # general category Mn
FLAG_PYSPACE = 16       # str.isspace(): what Python's str.split() splits on
FLAG_CASE_IGNORABLE = 32
FLAG_CASED = 64         # cased and not case-ignorable (all the final-sigma rule asks)
FLAG_ALNUM = 128        # str.isalnum(): Python's regex \w less '_' (SQuAD's answer normalisation)
FLAG_LETTER = 256       # general category L* (\p{L} of GPT-2's pre-tokenizing pattern)
FLAG_NUMBER = 512       # general category N* (\p{N} of the same pattern)


def sigma_probe(text):
    """Whether Python lowers the capital sigma at index 1 of `text` to the final form."""
    return text.lower()[1] == "\u03c2"


def casing_flags(ch):
    """Case-ignorable / cased, read back from CPython's final-sigma rule.

    unicodedata does not expose these derived properties, but str.lower()
    applies them: U+03A3 becomes final sigma when preceded by a cased letter
    and not followed by (case-ignorables then) a cased letter. With a cased
    letter before it:
      "AΣ" + ch       -> not final  iff ch is not case-ignorable and is cased;
      "AΣ" + ch + "a" -> not final  iff ch is case-ignorable (skipped to "a") or cased.
    """
    before_end = sigma_probe("A\u03a3" + ch)
    before_letter = sigma_probe("A\u03a3" + ch + "a")
    if not before_end:
        return FLAG_CASED
    if not before_letter:
        return FLAG_CASE_IGNORABLE
    return 0


def property_flags(cp):
    ch = chr(cp)
    cat = unicodedata.category(ch)
    flags = 0
    if cat.startswith("C"):
        flags |= FLAG_CONTROL
    if cat.startswith("P"):
        flags |= FLAG_PUNCT
    if cat == "Zs":
        flags |= FLAG_ZS
    if cat == "Mn":
        flags |= FLAG_MN
    if ch.isspace():
        flags |= FLAG_PYSPACE
    if ch.isalnum():
        flags |= FLAG_ALNUM
    if cat.startswith("L"):
        flags |= FLAG_LETTER
    if cat.startswith("N"):
        flags |= FLAG_NUMBER
    if 0xD800 <= cp <= 0xDFFF:
        return flags  # lone surrogates cannot be probed through str.lower()
    return flags | casing_flags(ch)


def property_ranges():
    ranges = []  # (start, flags), each running to the next start
    previous = None
    for cp in range(MAX_CP + 1):
        flags = property_flags(cp)
        if flags != previous:
            ranges.append((cp, flags))
            previous = flags
    return ranges


def combining_class_ranges():
    ranges = []  # (first, last, ccc)
    for cp in range(MAX_CP + 1):
        ccc = unicodedata.combining(chr(cp))
        if ccc == 0:
            continue
        if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2] == ccc:
            ranges[-1] = (ranges[-1][0], cp, ccc)
        else:
            ranges.append((cp, cp, ccc))
    return ranges


def lower_tables():
    runs = []  # [first, last, stride, delta]
    special = []  # (cp, [lowered code points])
    for cp in range(MAX_CP + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        lowered = chr(cp).lower()
        if lowered == chr(cp):
            continue
        if len(lowered) != 1:
            special.append((cp, [ord(c) for c in lowered]))
            continue
        delta = ord(lowered) - cp
        if runs:
            first, last, stride, run_delta = runs[-1]
            step = cp - last
            if run_delta == delta and step in (1, 2) and (first == last or step == stride):
                runs[-1] = [first, cp, step, delta]
                continue
        runs.append([cp, cp, 1, delta])
    return runs, special


def decomposition_table():
    table = []  # (cp, [decomposed code points])
    for cp in range(MAX_CP + 1):
        if HANGUL_FIRST <= cp <= HANGUL_LAST or 0xD800 <= cp <= 0xDFFF:
            continue
        nfd = unicodedata.normalize("NFD", chr(cp))
        if nfd != chr(cp):
            table.append((cp, [ord(c) for c in nfd]))
    return table


def composition_table():
    pairs = []  # (first, second, composite)
    for cp in range(MAX_CP + 1):
        if HANGUL_FIRST <= cp <= HANGUL_LAST or 0xD800 <= cp <= 0xDFFF:
            continue
        raw = unicodedata.decomposition(chr(cp))
        if not raw or raw.startswith("<"):
            continue
        parts = [int(p, 16) for p in raw.split()]
        # A primary composite is one NFC leaves alone: that excludes the
        # composition exclusions, singletons and non-starter decompositions.
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            pairs.append((parts[0], parts[1], cp))
    pairs.sort()
    return pairs


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "text/unicode_tables.inc"
    props = property_ranges()
    assert all(len(cps) <= 4 for _, cps in decomposition_table()), "Decomposition holds 4 code points"
    ccc = combining_class_ranges()
    runs, special = lower_tables()
    decomp = decomposition_table()
    comp = composition_table()

    lines = [
        "// GENERATED by scripts/gen_unicode_tables.py — do not edit by hand.",
        f"// Unicode {unicodedata.unidata_version}, from Python {sys.version.split()[0]}'s unicodedata.",
        "// Included once, by text/unicode.cpp, which defines the entry types.",
        "",
        f"constexpr char kUnicodeVersion[] = \"{unicodedata.unidata_version}\";",
        "",
        f"constexpr PropertyRange kPropertyRanges[{len(props)}] = {{",
    ]
    lines += [f"    {{0x{cp:X}, {flags}}}," for cp, flags in props]
    lines += ["};", "", f"constexpr CombiningRange kCombiningClass[{len(ccc)}] = {{"]
    lines += [f"    {{0x{a:X}, 0x{b:X}, {c}}}," for a, b, c in ccc]
    lines += ["};", "", f"constexpr LowerRun kLowerRuns[{len(runs)}] = {{"]
    lines += [f"    {{0x{a:X}, 0x{b:X}, {s}, {d}}}," for a, b, s, d in runs]
    lines += ["};", "", f"constexpr LowerSpecial kLowerSpecial[{len(special)}] = {{"]
    lines += ["    {0x%X, {%s}, %d}," % (cp, ", ".join(f"0x{c:X}" for c in cps), len(cps))
              for cp, cps in special]
    lines += ["};", "", f"constexpr Decomposition kDecomposition[{len(decomp)}] = {{"]
    lines += ["    {0x%X, {%s}, %d}," % (cp, ", ".join(f"0x{c:X}" for c in cps), len(cps))
              for cp, cps in decomp]
    lines += ["};", "", f"constexpr Composition kComposition[{len(comp)}] = {{"]
    lines += [f"    {{0x{a:X}, 0x{b:X}, 0x{c:X}}}," for a, b, c in comp]
    lines += ["};", ""]
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"{out_path}: Unicode {unicodedata.unidata_version}; {len(props)} property ranges, "
          f"{len(ccc)} combining-class ranges, {len(runs)} lower-case runs + {len(special)} special, "
          f"{len(decomp)} decompositions, {len(comp)} compositions")


if __name__ == "__main__":
    main()
