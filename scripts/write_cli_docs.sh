#!/usr/bin/env bash
# Writes docs/cli.md from the commands' own help, so the page cannot drift
# from the binary: `ordo help`, then `ordo help COMMAND` for every command it
# lists, in its order. tests/tools/test_docs.cpp fails when docs/cli.md
# differs from what this prints.
#
# Usage: scripts/write_cli_docs.sh [ORDO] > docs/cli.md    (ORDO: build/ordo by default)
set -euo pipefail
ordo=${1:-build/ordo}
[[ -x $ordo ]] || { echo "write_cli_docs: no ordo binary at '$ordo' (build it, or give its path)" >&2; exit 2; }

# `ordo help` lists "  NAME<padding>  SUMMARY" under "commands:"; a name may
# hold one space ("bench pe"), and at least two spaces end it.
names=$("$ordo" help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9_-]*\( [a-z][a-z0-9_-]*\)\{0,1\}\)  .*/\1/p')
[[ -n $names ]] || { echo "write_cli_docs: found no commands in '$ordo help'" >&2; exit 1; }

fence='```'
echo "# ordo's commands"
echo
echo "Generated from the commands' own help by \`scripts/write_cli_docs.sh build/ordo > docs/cli.md\`;"
echo "do not edit by hand (a test fails when this page and the help differ)."
echo
echo "$fence"
"$ordo" help
echo "$fence"
while IFS= read -r name; do
  echo
  echo "## ordo $name"
  echo
  echo "$fence"
  # shellcheck disable=SC2086  # a two-word name is two arguments
  "$ordo" help $name
  echo "$fence"
done <<< "$names"
