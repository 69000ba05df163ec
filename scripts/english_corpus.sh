#!/usr/bin/env bash
# The real-English corpus of the scale study (configs/scale_study/english/), in
# one command: WordNet 3.0's glosses and usage examples (Debian package
# wordnet-base, installed by scripts/install_deps.sh) extracted by
# `ordo data english`, one document per synset, and a WordPiece vocabulary
# trained on them by `ordo vocab train`. Deterministic: the same files give
# the same bytes (tests/text/test_english_corpus.cpp).
#
#   scripts/english_corpus.sh ORDO OUT_DIR [WORDNET_DIR]
#
# writes OUT_DIR/wordnet.txt and OUT_DIR/vocab.txt (ENGLISH_VOCAB_SIZE tokens,
# default 8000), replacing earlier ones. WORDNET_DIR: the folder of WordNet's
# data.noun, data.verb, data.adj, data.adv (default /usr/share/wordnet).
# `make english_corpus` runs it into runs/english_corpus.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 ORDO OUT_DIR [WORDNET_DIR]" >&2
  exit 2
fi
ordo=$1 out=$2 from=${3:-/usr/share/wordnet}
source "$(dirname "$0")/args.sh"
check_ordo_and_out "$0" "$ordo" "$out"
if [[ ! -d "$from" ]]; then
  echo "$0: no WordNet folder '$from' (scripts/install_deps.sh installs wordnet-base)" >&2
  exit 2
fi
mkdir -p "$out"
"$ordo" data english --source wordnet --from "$from" --out "$out/wordnet.txt" --overwrite
"$ordo" vocab train --corpus "$out/wordnet.txt" --out "$out/vocab.txt" --size "${ENGLISH_VOCAB_SIZE:-8000}" --overwrite
