"""Build the package, compiling its hot path with Cython when it can.

The modules that run for every op, layer call and update (``COMPILED``) are
plain Python; Cython turns each into a C extension that runs the same code
without the interpreter's per-bytecode cost (annotations are not read as C
types, so the semantics stay Python's) (W2's training step: ~20% less
overhead over numpy, see docs/performance.md). The ``.py`` files stay the
one source: nothing is written twice.

Compiling is optional. Without a C compiler, or with
``AUTODIFF_VIZ_PURE=1`` at install time, the package installs as pure
Python and behaves the same, only slower. ``autodiff_viz/_build.py``
records a hash of each compiled source; at import, a source that changed
since (an edit in a development checkout) makes the package load every
module from its ``.py`` instead, with a warning, so a stale extension never
runs (``bash dev.sh setup`` recompiles).
"""
from __future__ import annotations

import hashlib
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
COMPILED = [
    "autodiff_viz/engine.py", "autodiff_viz/tensor.py", "autodiff_viz/tape.py", "autodiff_viz/ops.py",
    "autodiff_viz/structure.py", "autodiff_viz/nn.py", "autodiff_viz/rules/__init__.py",
    "autodiff_viz/rules/nn.py", "autodiff_viz/layers/base.py", "autodiff_viz/layers/dense.py",
    "autodiff_viz/layers/activations.py", "autodiff_viz/optimizers.py", "autodiff_viz/losses.py",
    "autodiff_viz/models.py",
]
RECORD = os.path.join(ROOT, "autodiff_viz", "_build.py")


def _digest(path: str) -> str:
    with open(os.path.join(ROOT, path), "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


DIGESTS = {path: _digest(path) for path in COMPILED}     # taken before compiling: an edit meanwhile shows as stale


def _record(sources: list) -> None:
    """Write ``autodiff_viz/_build.py``: the hash of every source that was compiled (empty: pure Python)."""
    lines = ['"""Written by setup.py: the sources compiled into extensions, with their SHA-1 (see there)."""',
             "SOURCES = {"]
    lines += [f"    {path[len('autodiff_viz/'):]!r}: {DIGESTS[path]!r}," for path in sources]
    lines += ["}", ""]
    with open(RECORD, "w") as f:
        f.write("\n".join(lines))


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
            return
        _record(COMPILED)

    def _fall_back(self, exc) -> None:
        _record([])
        print(f"autodiff_viz: compiling {COMPILED[0]} & co. failed ({exc}); installing pure Python "
              "(same behaviour, slower).", file=sys.stderr)


def _extensions() -> list:
    if os.environ.get("AUTODIFF_VIZ_PURE"):
        _record([])
        return []
    try:
        from Cython.Build import cythonize
        extensions = cythonize(COMPILED, nthreads=os.cpu_count() or 1, quiet=True, force=True,
                               compiler_directives={"language_level": 3, "binding": True, "embedsignature": True,
                                                    "annotation_typing": False})
    except Exception as exc:   # noqa: BLE001  (no Cython, or it cannot translate: install pure Python)
        _record([])
        print(f"autodiff_viz: not compiling ({exc}); installing pure Python (same behaviour, slower).",
              file=sys.stderr)
        return []
    _record(COMPILED)       # now, before build_py copies the package into a wheel (a failed compile rewrites it)
    if os.name != "nt":
        for ext in extensions:
            ext.extra_compile_args.append("-g0")    # no debug info: a third of the size and the compile time
    return extensions


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
