"""What the tests of real why-None questions share (``tests/test_why_none_unseen*.py``): the line of a snippet in
a test's own source, TensorFlow as a fixture, and reduced library code that the recorders count as installed.

A test module imports the fixtures by their function names (``tf_fixture``, ``installed_fixture``,
``tf_installed_fixture``) and asks for them by their fixture names (``tf``, ``installed``, ``tf_installed``).
"""
from __future__ import annotations

import importlib
import inspect
import os
import sys
import textwrap

import pytest


def line_in(fn, text: str) -> str:
    """``file:line`` of the first line of ``fn``'s source that contains ``text`` (through a decorator's wrapper,
    as ``inspect.getsourcelines`` reads it; ``getsourcefile`` does not unwrap)."""
    fn = inspect.unwrap(fn)
    lines, start = inspect.getsourcelines(fn)
    return f"{inspect.getsourcefile(fn)}:{start + next(k for k, ln in enumerate(lines) if text in ln)}"


def lineno_in(fn, text: str) -> str:
    """The line number alone, for a message that quotes it (Keras' warnings, an optimizer's error)."""
    return line_in(fn, text).rsplit(":", 1)[1]


@pytest.fixture(scope="module", name="tf")
def tf_fixture():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return pytest.importorskip("tensorflow")


def _writer(tmp_path, monkeypatch):
    """``make(name, source)``: ``source`` written as ``tmp_path/name.py`` and imported."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(name: str, source: str):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        sys.modules.pop(name, None)
        module = importlib.import_module(name)
        monkeypatch.setitem(sys.modules, name, module)
        return module
    return make


def _count_as_installed(library, root, monkeypatch):
    """``root`` counted as one more folder of installed code by a bridge's ``LIBRARY`` (bridges/frames.py)."""
    monkeypatch.setattr(library, "dirs", library.dirs + (root,))
    monkeypatch.setattr(library, "known", {})


@pytest.fixture(name="installed")
def installed_fixture(tmp_path, monkeypatch):
    """``installed(name, source)``: a module written to a temporary directory that the PyTorch recorder counts as
    an installed package (as it counts site-packages), imported."""
    pytest.importorskip("torch")
    from autodiff_viz.torch import provenance
    record = sys.modules["autodiff_viz.torch.record"]
    _count_as_installed(provenance.LIBRARY, str(tmp_path) + os.sep, monkeypatch)
    monkeypatch.setattr(record, "_library_class", {})
    return _writer(tmp_path, monkeypatch)


@pytest.fixture(name="tf_installed")
def tf_installed_fixture(tf, tmp_path, monkeypatch):
    """The same for the TensorFlow recorder: a module it counts as installed code."""
    import autodiff_viz.tf  # noqa: F401  (loads the bridge's modules)
    _count_as_installed(sys.modules["autodiff_viz.tf.provenance"].LIBRARY, str(tmp_path) + os.sep, monkeypatch)
    return _writer(tmp_path, monkeypatch)
