"""Build the package, compiling its hot path with Cython when it can.

The modules that run for every op, layer call and update (``COMPILED``) are
plain Python; Cython turns each into a C extension that runs the same code
without the interpreter's per-bytecode cost (W2's training step: ~20% fewer
instructions over numpy's, see docs/performance.md). Annotations are not
read as C types, so the semantics stay Python's. The ``.py`` files stay the
one source: nothing is written twice.

Compiling is optional. Without a C compiler, or with
``AUTODIFF_VIZ_PURE=1`` at install time, the package installs as pure
Python and behaves the same, only slower. ``autodiff_viz/base/_build.py``
(written and read by ``autodiff_viz/base/compiled.py``) records a hash of each
compiled source; at import, a source that changed since (an edit in a
development checkout) makes the package load every
module from its ``.py`` instead, with a warning, so a stale extension never
runs (``bash dev.sh setup`` recompiles).
"""
from __future__ import annotations

import importlib.util
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
COMPILED = [
    "autodiff_viz/base/state.py", "autodiff_viz/core/engine.py", "autodiff_viz/core/tensor.py",
    "autodiff_viz/core/walks.py", "autodiff_viz/core/methods.py", "autodiff_viz/records/tape.py",
    "autodiff_viz/core/ops/common.py", "autodiff_viz/core/ops/elementwise.py", "autodiff_viz/core/ops/shapes.py",
    "autodiff_viz/core/ops/reductions.py", "autodiff_viz/core/ops/contractions.py", "autodiff_viz/base/structure.py",
    "autodiff_viz/core/nn.py", "autodiff_viz/core/rules/table.py", "autodiff_viz/core/rules/elementwise.py",
    "autodiff_viz/core/rules/shapes.py", "autodiff_viz/core/rules/reductions.py",
    "autodiff_viz/core/rules/contractions.py", "autodiff_viz/core/rules/nn.py", "autodiff_viz/layers/base.py",
    "autodiff_viz/layers/dense.py", "autodiff_viz/layers/activations.py", "autodiff_viz/optimizers.py",
    "autodiff_viz/losses.py", "autodiff_viz/models/model.py", "autodiff_viz/models/trainer.py",
    "autodiff_viz/models/compiling.py", "autodiff_viz/models/data_adapters.py",
]


def _load_record_keeper():
    """``autodiff_viz/base/compiled.py`` (standard library only), loaded by path: it owns ``_build.py``'s format."""
    spec = importlib.util.spec_from_file_location("_autodiff_viz_compiled",
                                                  os.path.join(ROOT, "autodiff_viz", "base", "compiled.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_compiled = _load_record_keeper()
# taken before compiling: an edit made meanwhile shows as a changed source at import
DIGESTS = {source: _compiled.digest(source) for source in (path.split("/", 1)[1] for path in COMPILED)}


def _record(compiled: bool) -> None:
    _compiled.write_record(DIGESTS if compiled else {})


def _keep_record() -> None:
    """Not compiling this time: an existing record still describes the extensions an earlier build left beside
    their sources (a pure sdist build or a second editable install from a compiled checkout must not mark
    them stale); without one, record that nothing was compiled."""
    if not os.path.exists(_compiled.RECORD):
        _record(False)


class OptionalBuildExt(build_ext):
    """``build_ext`` that falls back to pure Python when an extension cannot be compiled."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1     # one compiler per core: the modules are independent

    def run(self):
        try:
            super().run()
        except Exception as exc:   # noqa: BLE001  (no compiler, no headers: install pure Python)
            self._fall_back(exc)

    def _fall_back(self, exc) -> None:
        _record(False)
        print(f"autodiff_viz: compiling {COMPILED[0]} & co. failed ({exc}); installing pure Python "
              "(same behaviour, slower).", file=sys.stderr)


def _extensions() -> list:
    if os.environ.get("AUTODIFF_VIZ_PURE"):
        _keep_record()
        return []
    try:
        from Cython.Build import cythonize
        extensions = cythonize(COMPILED, nthreads=os.cpu_count() or 1, quiet=True, force=True,
                               compiler_directives={"language_level": 3, "binding": True, "embedsignature": True,
                                                    "annotation_typing": False})
    except Exception as exc:   # noqa: BLE001  (no Cython, or it cannot translate: install pure Python)
        _record(False)
        print(f"autodiff_viz: not compiling ({exc}); installing pure Python (same behaviour, slower).",
              file=sys.stderr)
        return []
    _record(True)       # now, before build_py copies the package into a wheel (a failed compile rewrites it)
    if os.name != "nt":
        for ext in extensions:
            ext.extra_compile_args.append("-g0")    # no debug info: a third of the size and the compile time
    return extensions


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
