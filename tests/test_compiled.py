"""The compiled hot path (setup.py) and plain Python behave alike, and a stale build never runs.

setup.py compiles the modules every op runs through with Cython. Compiled
functions make no Python frames, so everything that walks the stack (the
learner's line on each op, the names of their variables, the line a
warning points at) must find the same frame either way. These tests run
one learner's script in a fresh interpreter both ways and compare what it
reports; then they check that an edited source makes the package fall back
to plain Python instead of running the old extension.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import autodiff_viz as adv
from autodiff_viz.base import compiled as _compiled
from autodiff_viz.core import engine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LEARNER = textwrap.dedent('''
    import json, sys, warnings
    import numpy as np
    import autodiff_viz as adv
    from autodiff_viz.core import engine; from autodiff_viz.base.state import resolve_location  # one line

    w = adv.Variable([0.5, -1.0], name="w")
    with adv.GradientTape(persistent=True) as tape:
        hidden = adv.tanh(w * 2.0)            # line 9
        loss = adv.sum(hidden * hidden)       # line 10
    trace = tape.trace(loss)
    lines = sorted({n.location.line for n in trace.nodes if n.location})
    titles = sorted(n.title for n in trace.nodes if n.title)
    comparison = tape.compare(loss, {"hidden": 2 * np.tanh([1.0, -2.0])})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with adv.GradientTape() as t2:
            k = adv.constant([1, 2])
            t2.watch(k)                       # line 19: watching an integer tensor warns here
        t2.gradient(adv.sum(k), k)            # line 20: an integer source warns here
    model = adv.Sequential([adv.layers.Dense(2, dtype="float64")])
    with adv.GradientTape() as t3:
        out = model(np.ones((1, 3)))          # line 23
    where = resolve_location(t3._nodes[0]._where)
    print(json.dumps({"compiled": engine.COMPILED, "engine_file": engine.__file__,
                      "lines": lines, "titles": titles, "compare_ok": bool(comparison.ok),
                      "warning_lines": [c.lineno for c in caught], "warning_files": [c.filename for c in caught],
                      "layer_line": where[1] if where else None}))
''')


def _run(tmp_path, env_extra, script=LEARNER, cwd=None):
    path = tmp_path / "learner.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if k != "AUTODIFF_VIZ_PURE"}
    env.update(env_extra)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, cwd=cwd or ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _built() -> dict:
    return _compiled.recorded()


def test_a_compiled_build_runs_every_recorded_module_compiled():
    """What setup.py compiled is what runs (the dev install compiles; pure Python only without a compiler)."""
    sources = _built()
    extensions = _compiled._extensions()
    if not sources or os.environ.get("AUTODIFF_VIZ_PURE"):
        assert not engine.COMPILED and engine.__file__.endswith(".py")
        return
    assert set(extensions.values()) == set(sources)
    assert engine.COMPILED and not engine.__file__.endswith(".py")
    for name in extensions:
        assert not sys.modules[name].__file__.endswith(".py"), name


def test_the_learners_lines_names_and_warnings_are_the_same_compiled_and_pure(tmp_path):
    pure, _ = _run(tmp_path, {"AUTODIFF_VIZ_PURE": "1"})
    assert pure["compiled"] is False and pure["engine_file"].endswith("engine.py")
    native, _ = _run(tmp_path, {})
    assert native["compiled"] is bool(_built())
    for report in (pure, native):
        assert report["lines"] == [9, 10]
        assert report["compare_ok"]
        assert report["warning_lines"] == [19, 20] and all(f.endswith("learner.py") for f in report["warning_files"])
        assert report["layer_line"] == 23
    assert pure["titles"] == native["titles"] and any(t.startswith("hidden") for t in pure["titles"])
    assert pure["lines"] == native["lines"]


@pytest.mark.skipif(not _built(), reason="this install is plain Python (no compiler): nothing can be stale")
def test_an_edited_source_makes_the_package_run_as_plain_python_with_a_warning(tmp_path):
    copy = tmp_path / "checkout"
    shutil.copytree(os.path.join(ROOT, "autodiff_viz"), copy / "autodiff_viz",
                    ignore=shutil.ignore_patterns("__pycache__"))
    edited = copy / "autodiff_viz" / "core" / "ops" / "elementwise.py"
    edited.write_text(edited.read_text() + "\nEDITED_AFTER_THE_BUILD = True\n")
    script = textwrap.dedent('''
        import json, sys, warnings
        sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0] + "/checkout")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import autodiff_viz as adv
        from autodiff_viz.core import engine
        from autodiff_viz.core.ops import elementwise as ops
        with adv.GradientTape() as tape:
            x = adv.constant(2.0); tape.watch(x); y = x * x
        print(json.dumps({"compiled": engine.COMPILED, "edited": getattr(ops, "EDITED_AFTER_THE_BUILD", False),
                          "files": [engine.__file__, ops.__file__], "grad": float(tape.gradient(y, x).numpy()),
                          "warnings": [str(c.message) for c in caught if c.category is RuntimeWarning]}))
    ''')
    report, _ = _run(tmp_path, {}, script, cwd=str(tmp_path))
    assert report["edited"] and not report["compiled"]
    assert all(f.endswith(".py") and str(copy) in f for f in report["files"])
    assert report["grad"] == 4.0
    assert len(report["warnings"]) == 1
    assert "core/ops/elementwise.py changed since the package was compiled" in report["warnings"][0]


def test_the_pure_python_fallback_passes_the_location_and_diagnosis_tests(tmp_path):
    """The tests that depend most on frames (lines, names, warnings, explain) also pass as plain Python."""
    env = {k: v for k, v in os.environ.items()}
    env["AUTODIFF_VIZ_PURE"] = "1"
    files = ["tests/test_anomaly.py", "tests/test_explain.py", "tests/test_naming_and_probe.py",
             "tests/test_compare.py", "tests/test_threads.py", "tests/test_widget_state.py"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout.splitlines()[-1]


def test_importing_twice_does_not_stack_finders():
    before = sum(isinstance(f, _compiled._SourceFinder) for f in sys.meta_path)
    _compiled.use_pure_python_where_stale()
    assert sum(isinstance(f, _compiled._SourceFinder) for f in sys.meta_path) == before
    assert adv.tanh(adv.constant(0.0)).numpy() == 0.0


def test_a_pure_build_in_a_compiled_checkout_keeps_the_record_of_its_extensions(tmp_path):
    """CI's minimum-versions job installs the checkout editable with ``AUTODIFF_VIZ_PURE=1`` and its wheel job
    builds an sdist from it; neither may rewrite ``_build.py`` to "nothing compiled", or the extensions still
    beside their sources look never recorded and every later import in that checkout warns and runs plain."""
    copy = tmp_path / "checkout"
    shutil.copytree(os.path.join(ROOT, "autodiff_viz"), copy / "autodiff_viz",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "_build.py"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), copy / name)
    record = copy / "autodiff_viz" / "base" / "_build.py"

    def build_pure():
        env = {**os.environ, "AUTODIFF_VIZ_PURE": "1"}
        done = subprocess.run([sys.executable, "setup.py", "--name"], cwd=copy, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr

    build_pure()
    assert "SOURCES = {\n}" in record.read_text()          # nothing compiled and no record yet: say so
    compiled_record = 'SOURCES = {\n    "core/engine.py": "0123",\n}\n'
    record.write_text(compiled_record)
    build_pure()
    assert record.read_text() == compiled_record
