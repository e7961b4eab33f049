#!/usr/bin/env bash
# The package as its users get it, checked outside the checkout.
#
#   1. `python -m build` makes the sdist and the wheel (out/dist/).
#   2. The wheel goes into a fresh venv outside the checkout, and tests/test_install_smoke.py, copied there
#      alone, runs against the installed package (a file the wheel left out fails here, not for a user).
#   3. The sdist installs with a C compiler (the hot path compiled) and without one (CC=false: setup.py falls
#      back to plain Python) and with AUTODIFF_VIZ_PURE=1; the smoke test runs against each.
#   4. tests/test_install.py (marked `install`): the install docs followed next to an installed
#      tensorflow-cpu 2.16, tensorflow, and torch 2.13 keep that framework and add no second one, and the
#      bridge's own tests (test_tf_bridge.py, test_torch_bridge.py) pass there against the installed wheel.
#
#   bash ci/dist.sh            (PY=... the Python that builds and runs step 4; default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
# The checks that ask which file Python imported run from $WORK: from the checkout, Python would import the
# checkout's copy (the current folder comes first on sys.path) and not the installed one.
ROOT=$PWD
PY=${PY:-.venv/bin/python}
BASE_PYTHON=$(command -v python3.11 || command -v python3)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/adv-dist.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
say() { printf '\033[1m[dist]\033[0m %s\n' "$*" >&2; }
quiet_pip() {  # quiet_pip COMMAND...: run a pip command, showing its output but this machine's index warnings
    local rc=0
    "$@" > "$WORK/pip.log" 2>&1 || rc=$?
    grep -v "^WARNING: Location" "$WORK/pip.log" >&2 || true
    return $rc
}

say "building the sdist and the wheel (python -m build)"
rm -rf out/dist
AUTODIFF_VIZ_PURE=1 "$PY" -m build --outdir out/dist . > "$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; exit 1; }
WHEEL=$(ls out/dist/*.whl)
SDIST=$(ls out/dist/*.tar.gz)
say "built $(basename "$SDIST") and $(basename "$WHEEL")"

mkdir -p "$WORK/smoke"
cp tests/test_install_smoke.py "$WORK/smoke/"
printf '[pytest]\n' > "$WORK/smoke/pytest.ini"       # its own rootdir: no configuration read from above
smoke() {  # smoke VENV LABEL: run the smoke test with VENV's Python, from outside the checkout
    say "smoke test against the $2"
    (cd "$WORK/smoke" && ADV_SMOKE_INSTALLED=1 "$1/bin/python" -m pytest -q -p no:cacheprovider \
        -o cache_dir="$WORK/cache" test_install_smoke.py)
}
fresh() {  # fresh VENV: a venv with pytest, outside the checkout
    "$BASE_PYTHON" -m venv "$1"
    quiet_pip "$1/bin/python" -m pip install -q -c "$ROOT/ci/constraints.txt" pytest
}

status=0
fresh "$WORK/wheel"
quiet_pip "$WORK/wheel/bin/python" -m pip install -q -c ci/constraints.txt "$WHEEL"
smoke "$WORK/wheel" "installed wheel" || status=1

fresh "$WORK/sdist-nocc"
say "installing the sdist without a C compiler (CC=false)"
CC=false quiet_pip "$WORK/sdist-nocc/bin/python" -m pip install -q --no-cache-dir -c ci/constraints.txt "$SDIST"
(cd "$WORK" && "$WORK/sdist-nocc/bin/python" -c "
import autodiff_viz.core.engine as e, sys
sys.exit(0 if e.__file__.endswith('.py') else 'compiled without a compiler? ' + e.__file__)") || status=1
smoke "$WORK/sdist-nocc" "sdist installed without a C compiler" || status=1

fresh "$WORK/sdist-pure"
say "installing the sdist with AUTODIFF_VIZ_PURE=1"
AUTODIFF_VIZ_PURE=1 quiet_pip "$WORK/sdist-pure/bin/python" -m pip install -q --no-cache-dir -c ci/constraints.txt "$SDIST"
smoke "$WORK/sdist-pure" "sdist installed as plain Python" || status=1

fresh "$WORK/sdist-cc"
say "installing the sdist with a C compiler (compiles the hot path; a few minutes)"
quiet_pip "$WORK/sdist-cc/bin/python" -m pip install -q --no-cache-dir -c ci/constraints.txt "$SDIST"
(cd "$WORK" && "$WORK/sdist-cc/bin/python" -c "
import autodiff_viz.core.engine as e, sys
sys.exit(0 if not e.__file__.endswith('.py') else 'not compiled: ' + e.__file__)") || status=1
(export AUTODIFF_VIZ_PURE=; smoke "$WORK/sdist-cc" "sdist compiled with a C compiler") || status=1

say "the install docs next to installed frameworks (tests/test_install.py)"
ADV_WHEEL="$ROOT/$WHEEL" "$PY" -m pytest -q -p no:cacheprovider -m install tests/test_install.py || status=1
exit $status
