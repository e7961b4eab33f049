#!/usr/bin/env bash
# One entry point for setting up and running autodiff_viz.
#
#   bash dev.sh tour    set up, then open notebooks/00_tour.ipynb in JupyterLab
#                       (HEADLESS=1 or CI=true: execute every notebook instead)
#   bash dev.sh test    set up, then run every test
#   bash dev.sh bench   set up, then run the benchmarks
#   bash dev.sh setup   only set up
#
# Setting up is idempotent: the virtual environment (.venv) is reinstalled only
# when pyproject.toml changes, and system packages only when missing.
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

install_all() {
    "$PY" -m pip install --upgrade pip && "$PY" -m pip install -e ".[test]"
}

setup_python() {
    local python
    python=$(command -v python3.11 || command -v python3)
    if [ ! -x "$PY" ]; then
        say "creating $VENV with $python"
        if ! "$python" -m venv "$VENV" 2>/dev/null; then
            rm -rf "$VENV"
            apt_install python3-venv || { say "install python3-venv (sudo apt-get install python3-venv)"; exit 1; }
            "$python" -m venv "$VENV"
        fi
    fi
    local stamp="$VENV/.installed-$(cat pyproject.toml setup.py | sha1sum | cut -c1-12)"
    if [ ! -f "$stamp" ]; then
        say "installing autodiff_viz and its test tools into $VENV (log: $VENV/pip.log)"
        if ! with_progress "$VENV/pip.log" install_all; then
            tail -n 30 "$VENV/pip.log" >&2
            say "pip failed; the full log is $VENV/pip.log"
            exit 1
        fi
        rm -f "$VENV"/.installed-*
        touch "$stamp"
    elif compiled_is_stale; then
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

setup() {
    need_system dot graphviz graphviz graphviz
    setup_python
}

case "${1:-tour}" in
    setup)
        setup ;;
    test)
        setup
        need_system chromium chromium "--cask chromium" "(not packaged; use your system browser package)" || true
        shift || true
        exec "$PY" -m pytest "$@" ;;
    tour)
        setup
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
