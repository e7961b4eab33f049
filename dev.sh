#!/usr/bin/env bash
# One entry point for setting up and running autodiff_viz.
#
#   bash dev.sh tour    set up what the notebooks need (pure Python, no compiling),
#                       then open notebooks/00_tour.ipynb in JupyterLab
#                       (HEADLESS=1 or CI=true: execute every notebook instead)
#   bash dev.sh test    set up everything the tests use, compile the hot path, run every test
#                       (CI=true or BOTH_WAYS=1: the whole suite as plain Python, then compiled)
#   bash dev.sh bench   the same set-up as test, then run the benchmarks
#   bash dev.sh setup   only set up (as test does)
#
# Setting up is idempotent: the virtual environment (.venv) is reinstalled only
# when pyproject.toml or setup.py changes, and system packages only when missing.
# The tour installs the [tour] extra and runs as plain Python (AUTODIFF_VIZ_PURE=1):
# a learner waits for the notebook, not for a compiler. test/bench install [test]
# and compile (Cython), which the tour then reuses.
set -euo pipefail
cd "$(dirname "$0")"

VENV=${VENV:-.venv}
PY="$VENV/bin/python"

say() { printf '\033[1m[dev]\033[0m %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"; else return 1; fi
}

APT_UPDATED=0
apt_install() {  # apt_install PACKAGE...: install Debian packages, or say how
    if command -v apt-get >/dev/null && as_root true; then
        if [ "$APT_UPDATED" = 0 ]; then as_root apt-get update -qq >&2; APT_UPDATED=1; fi
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >&2
    else
        return 1
    fi
}

need_system() {  # need_system COMMAND DEBIAN_PACKAGE BREW CONDA
    local cmd=$1 deb=$2 brew=$3 conda=$4
    command -v "$cmd" >/dev/null && return 0
    say "'$cmd' is missing; installing the system package '$deb'"
    if apt_install "$deb" && command -v "$cmd" >/dev/null; then return 0; fi
    say "could not install '$cmd' here. Install it with one of:"
    say "    sudo apt-get install $deb        (Debian/Ubuntu)"
    say "    brew install $brew               (macOS)"
    say "    conda install -c conda-forge $conda"
    return 1
}

with_progress() {  # with_progress LOG COMMAND...: run COMMAND into LOG, saying every 15 s what it is doing
    local log=$1; shift
    "$@" > "$log" 2>&1 &
    local pid=$! waited=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1; waited=$((waited + 1))
        if [ $((waited % 15)) = 0 ] && kill -0 "$pid" 2>/dev/null; then
            say "  ... ${waited}s: $(tail -n 1 "$log" 2>/dev/null | cut -c1-100)"
        fi
    done
    wait "$pid"
}

install_extra() {  # install_extra EXTRA: the package in editable mode with that extra (tour: no compiling)
    if [ "$1" = tour ]; then
        AUTODIFF_VIZ_PURE=1 "$PY" -m pip install --disable-pip-version-check -e ".[tour]"
    else
        "$PY" -m pip install --upgrade pip && "$PY" -m pip install -e ".[$1]"
    fi
}

setup_python() {  # setup_python EXTRA: a venv with the package and the extra (test covers tour)
    local extra=${1:-test} python
    python=$(command -v python3.11 || command -v python3)
    if [ ! -x "$PY" ]; then
        say "creating $VENV with $python"
        if ! "$python" -m venv "$VENV" 2>/dev/null; then
            rm -rf "$VENV"
            apt_install python3-venv || { say "install python3-venv (sudo apt-get install python3-venv)"; exit 1; }
            "$python" -m venv "$VENV"
        fi
    fi
    local hash stamp
    hash=$(cat pyproject.toml setup.py | sha1sum | cut -c1-12)
    stamp="$VENV/.installed-$extra-$hash"
    if [ "$extra" = tour ] && [ -f "$VENV/.installed-test-$hash" ]; then
        return 0     # the test set-up holds all the tour needs; the tour runs pure Python anyway
    fi
    if [ ! -f "$stamp" ]; then
        if [ "$extra" = tour ]; then
            say "installing autodiff_viz and what the notebooks need into $VENV (log: $VENV/pip.log)"
        else
            say "installing autodiff_viz and its test tools into $VENV, compiling the hot path (log: $VENV/pip.log)"
        fi
        if ! with_progress "$VENV/pip.log" install_extra "$extra"; then
            tail -n 30 "$VENV/pip.log" >&2
            say "pip failed; the full log is $VENV/pip.log"
            exit 1
        fi
        find "$VENV" -maxdepth 1 -name '.installed-*' ! -name "*-$hash" -delete
        touch "$stamp"
    elif [ "$extra" != tour ] && compiled_is_stale; then
        say "recompiling the hot path (Cython; a source changed since the last build; ~5 min, log: $VENV/pip.log)"
        if ! with_progress "$VENV/pip.log" "$PY" -m pip install --no-deps -e .; then
            tail -n 30 "$VENV/pip.log" >&2
            say "the rebuild failed; the full log is $VENV/pip.log (the package runs as plain Python meanwhile)"
        fi
    fi
}

compiled_is_stale() {  # did a module compiled by setup.py change since it was compiled? (see autodiff_viz/_compiled.py)
    "$PY" autodiff_viz/_compiled.py
}

setup() {  # setup [EXTRA]
    need_system dot graphviz graphviz graphviz
    setup_python "${1:-test}"
}

case "${1:-tour}" in
    setup)
        setup ;;
    test)
        setup
        need_system chromium chromium "--cask chromium" "(not packaged; use your system browser package)" || true
        shift || true
        if [ "${CI:-}" = true ] || [ -n "${BOTH_WAYS:-}" ]; then
            # The package must behave the same compiled or not: CI runs the whole suite both ways,
            # plain Python first, then the compiled build (whose closing line ends the log).
            say "the whole suite as plain Python (AUTODIFF_VIZ_PURE=1)"
            pure=0
            AUTODIFF_VIZ_PURE=1 "$PY" -m pytest "$@" || pure=$?
            say "plain Python: $([ $pure = 0 ] && echo passed || echo "FAILED (pytest exit $pure)");" \
                "now the whole suite with the compiled hot path"
            compiled=0
            "$PY" -m pytest "$@" || compiled=$?
            [ $pure = 0 ] && exit $compiled
            exit $pure
        fi
        exec "$PY" -m pytest "$@" ;;
    tour)
        setup tour
        export AUTODIFF_VIZ_PURE=1     # the kernel too: plain Python, the same behaviour (compiled or not)
        say "set up in ${SECONDS}s; starting the tour"
        if [ ! -f notebooks/00_tour.ipynb ]; then
            exec "$PY" examples/quickstart.py
        fi
        if [ -n "${HEADLESS:-}" ] || [ "${CI:-}" = true ]; then
            exec "$PY" -m autodiff_viz.run_notebooks "${OUT:-out/notebooks}"
        fi
        lab_args=()
        if [ "$(id -u)" = 0 ]; then lab_args+=(--allow-root); fi   # JupyterLab refuses root without it
        exec "$PY" -m jupyterlab ${lab_args[@]+"${lab_args[@]}"} notebooks/00_tour.ipynb ;;
    bench)
        setup
        shift || true
        exec "$PY" benchmarks/run.py "$@" ;;
    *)
        say "unknown command '$1'; use tour, test, bench or setup"; exit 2 ;;
esac
