#!/usr/bin/env python3
"""A deep model's MODELED kernel classes from two shallow recordings.

`ordo bench step --device cpu --classes --model-only` records one step on the
CPU and sums its roofline time by kernel class; at BERT-base's full shape that
is minutes of CPU a recording. A model's layers make the same calls, so every
per-call sum (modeled us, calls, launches) is linear in the layer count:

    full(N) = one + (N - 1) * (two - one)

with `one` and `two` the same step recorded with 1 and 2 layers
(--set model.num_hidden_layers=1 and 2). With --variant, a 1-layer recording
of the same step under another setting (ORDO_FUSED_ATTENTION=1), which
changes only what a layer calls, adds N * (variant - one).

Usage: extrapolate_modeled_layers.py --layers N --one L1.txt --two L2.txt
       [--variant V1.txt] > full.txt
The output is the class tables in the format `ordo bench calibrate --modeled`
reads, each header saying it was extrapolated.
"""
import argparse
import re
import sys

HEADER = re.compile(r"^(.*): MODELED by kernel class, ([0-9.]+) launches")


def read_tables(path):
    """{label: (launches, {class: [calls, us]})} from a bench step log."""
    tables, current = {}, None
    with open(path) as f:
        lines = f.read().splitlines()
    for number, line in enumerate(lines, 1):
        m = HEADER.match(line.strip())
        if m:
            current = {}
            tables[m.group(1)] = [float(m.group(2)), current]
            continue
        if current is None:
            continue
        fields = line.split()
        if not fields:
            current = None
        elif fields[:4] != ["class", "calls", "modeled", "us"]:
            try:
                current[fields[0]] = [float(fields[1]), float(fields[2])]
            except (IndexError, ValueError):
                sys.exit(f"{path}:{number}: a class table row that does not parse: {line.strip()!r}")
    if not tables:
        sys.exit(f"{path}: no '<step>: MODELED by kernel class, N launches' table")
    return tables


def combine(a, b, scale):
    """a + scale * b, per label and class (a class missing from one is 0 there)."""
    out = {}
    for label in a:
        if label not in b:
            sys.exit(f"the step '{label}' is in one recording and not the other")
        launches = a[label][0] + scale * b[label][0]
        classes = {}
        for name in set(a[label][1]) | set(b[label][1]):
            x = a[label][1].get(name, [0.0, 0.0])
            y = b[label][1].get(name, [0.0, 0.0])
            classes[name] = [x[0] + scale * y[0], x[1] + scale * y[1]]
        out[label] = [launches, classes]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--one", required=True)
    p.add_argument("--two", required=True)
    p.add_argument("--variant")
    args = p.parse_args()
    one, two = read_tables(args.one), read_tables(args.two)
    per_layer = combine(two, one, -1.0)
    full = combine(one, per_layer, args.layers - 1.0)
    if args.variant:
        full = combine(full, combine(read_tables(args.variant), one, -1.0), float(args.layers))
    for label, (launches, classes) in full.items():
        print(f"{label}: MODELED by kernel class, {launches:.0f} launches (extrapolated to {args.layers} layers "
              f"from {args.one} and {args.two}{' and ' + args.variant if args.variant else ''})")
        print("class calls modeled us")
        for name in sorted(classes):
            calls, us = classes[name]
            if calls < -1e-6 or us < -1e-3:
                sys.exit(f"{label}: class {name} comes out negative ({calls} calls, {us} us)")
            if calls > 0.5 or us > 1e-3:
                print(f"{name} {calls:.0f} {us:.1f}")
        print()


if __name__ == "__main__":
    main()
