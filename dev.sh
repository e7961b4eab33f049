#!/usr/bin/env bash
# One entry point for setting up and running autodiff_viz.
#
#   bash dev.sh tour    set up what the notebooks need (pure Python, no compiling),
#                       then open notebooks/00_tour.ipynb in JupyterLab
#                       (HEADLESS=1 or CI=true: execute every notebook instead)
#   bash dev.sh test    set up everything the tests use, compile the hot path, run every test
#                       (BOTH_WAYS=1: the whole suite as plain Python, then compiled;
#                        CI=true: those two, then the minimum-versions job (ci/min_versions.sh) and the
#                        built wheel and sdist (ci/dist.sh); CI_STAGES="plain compiled minimum dist" picks)
#   bash dev.sh bench   the same set-up as test, then run the benchmarks
#   bash dev.sh setup   only set up (as test does)
#
# Setting up is idempotent: the virtual environment (.venv) is reinstalled only
# when pyproject.toml, setup.py or ci/constraints.txt changes, and system packages only when missing.
# pip installs with ci/constraints.txt: the exact versions CI tests (pyproject.toml declares ranges).
# The tour installs the [tour] extra and runs as plain Python (AUTODIFF_VIZ_PURE=1):
# a learner waits for the notebook, not for a compiler. test/bench install [test]
# and compile (Cython), which the tour then reuses.
set -euo pipefail
cd "$(dirname "$0")"

VENV=${VENV:-.venv}
declare -A STAGE_NAMES
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
        AUTODIFF_VIZ_PURE=1 "$PY" -m pip install --disable-pip-version-check -c ci/constraints.txt -e ".[tour]"
    else
        "$PY" -m pip install --upgrade pip && "$PY" -m pip install -c ci/constraints.txt -e ".[$1]"
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
    hash=$(cat pyproject.toml setup.py ci/constraints.txt | sha1sum | cut -c1-12)
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

compiled_is_stale() {  # did a module compiled by setup.py change since it was compiled? (see autodiff_viz/base/compiled.py)
    "$PY" autodiff_viz/base/compiled.py
}

# End-to-end files that build whole courses, sites or environments in processes of their own and read the
# package only through its public face: they run once, in the plain stage, so CI stays well inside its time.
# The compiled stage runs every other test (frame walks, names, lines: where compiled and plain could differ).
ONCE_ONLY=(tests/test_site.py tests/test_grading_nbgrader.py tests/test_grading_otter.py tests/test_figure_browser.py
           tests/test_real_models.py tests/test_real_models_keras.py tests/test_accuracy.py tests/test_tf_coverage.py
           tests/test_install_smoke.py tests/test_install_typing.py)

STAGE_NAMES=([plain]="the whole suite as plain Python (AUTODIFF_VIZ_PURE=1)"
             [compiled]="the suite with the compiled hot path (the end-to-end files of ONCE_ONLY ran in plain)"
             [minimum]="the minimum-versions job (ci/min_versions.sh)"
             [dist]="the built wheel and sdist, installed outside the checkout (ci/dist.sh)")

ci_stages() {  # ci_stages STAGE... -- PYTEST_ARGS: run each stage, time it, and end on one combined count
    local stages=() stage log status=0 started failed_stages=() summary=()
    while [ "$1" != -- ]; do stages+=("$1"); shift; done
    shift
    mkdir -p out/ci
    # The package must behave the same compiled or not: the whole suite runs both ways.
    for stage in "${stages[@]}"; do
        say "stage $stage: ${STAGE_NAMES[$stage]:-unknown stage}"
        log="out/ci/$stage.log"
        started=$SECONDS
        local rc=0
        case "$stage" in
            plain) AUTODIFF_VIZ_PURE=1 "$PY" -m pytest "$@" 2>&1 | tee "$log" || rc=$? ;;
            compiled) "$PY" -m pytest "${ONCE_ONLY[@]/#/--ignore=}" "$@" 2>&1 | tee "$log" || rc=$? ;;
            minimum) bash ci/min_versions.sh 2>&1 | tee "$log" || rc=$? ;;
            dist) PY="$PY" bash ci/dist.sh 2>&1 | tee "$log" || rc=$? ;;
            *) say "unknown stage '$stage' (plain, compiled, minimum, dist)"; rc=2 ;;
        esac
        summary+=("$(printf '%-9s %-6s %5ss' "$stage" "$([ $rc = 0 ] && echo passed || echo FAILED)" \
                     $((SECONDS - started)))")
        say "stage $stage: $([ $rc = 0 ] && echo passed || echo "FAILED (exit $rc)") in $((SECONDS - started))s"
        if [ $rc != 0 ]; then status=1; failed_stages+=("$stage"); fi
    done
    say "stages (name, result, time):"
    for stage in "${summary[@]}"; do say "  $stage"; done
    [ ${#failed_stages[@]} = 0 ] || say "FAILED stages: ${failed_stages[*]}"
    # the last line: every pytest count of every stage added up (the stages' own closing lines are above)
    local logs=()
    for stage in "${stages[@]}"; do logs+=("out/ci/$stage.log"); done
    "$PY" ci/tally.py --seconds "$SECONDS" --failed "${failed_stages[*]}" "${logs[@]}"
    exit $status
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
        if [ "${CI:-}" = true ]; then
            ci_stages ${CI_STAGES:-plain compiled minimum dist} -- "$@"
        elif [ -n "${BOTH_WAYS:-}" ]; then
            ci_stages plain compiled -- "$@"
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
            exec "$PY" -m autodiff_viz.course.run_notebooks "${OUT:-out/notebooks}"
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
