#!/usr/bin/env bash
# Rewrite ci/constraints.txt from the dev venv (after the whole suite passed there on newer versions):
# every installed distribution at its exact version, autodiff_viz itself left out.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
{
    sed -n '/^#/p' ci/constraints.txt
    "$PY" -m pip freeze --disable-pip-version-check | grep -v -i -E "^-e |^autodiff" \
        | sed -E 's/^([A-Za-z0-9_.-]+) @ .*\/[A-Za-z0-9_]+-([0-9][^-]*)-.*/\1==\2/' | sort -f
} > ci/constraints.txt.new
mv ci/constraints.txt.new ci/constraints.txt
echo "ci/constraints.txt: $(grep -vc '^#' ci/constraints.txt) pins" >&2
