"""Use the compiled hot path only when it matches its sources (see ``setup.py``).

``setup.py`` may compile the modules every op runs through into C
extensions (Cython). Python imports an extension in preference to the
``.py`` beside it, so an extension built from an older source would
silently run old code after an edit. Before the package imports anything
else, this checks each extension found in the package against the SHA-1
that ``setup.py`` recorded for its source (``base/_build.py``). If any source
changed, was never recorded, or ``AUTODIFF_VIZ_PURE=1`` is set, *every*
module is loaded from its ``.py`` (all or nothing: the frame walks that
find the learner's line assume one or the other), with a warning unless
pure Python was asked for.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import warnings

# this module is autodiff_viz/base/compiled.py; the package it guards is two folders up (setup.py and dev.sh
# load it by path, under another name, so neither is read from __name__)
PACKAGE = "autodiff_viz"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _extensions() -> dict:
    """``{module name: source path relative to the package}`` of every compiled module present."""
    found = {}
    for folder, _dirs, files in os.walk(ROOT):
        rel_dir = os.path.relpath(folder, ROOT)
        for name in files:
            for suffix in _SUFFIXES:
                if name.endswith(suffix):
                    stem = name[:-len(suffix)]
                    parts = [] if rel_dir == "." else rel_dir.split(os.sep)
                    if stem == "__init__":
                        module, source = ".".join([PACKAGE, *parts]), os.path.join(*parts, "__init__.py")
                    else:
                        module = ".".join([PACKAGE, *parts, stem])
                        source = os.path.join(*parts, stem + ".py")
                    found[module] = source.replace(os.sep, "/")
                    break
    return found


RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_build.py")     # base/_build.py


def digest(source: str) -> str | None:
    """SHA-1 of a source file (a path relative to the package), or None if it is not there."""
    try:
        with open(os.path.join(ROOT, source), "rb") as f:
            return hashlib.sha1(f.read()).hexdigest()
    except OSError:
        return None


def write_record(digests: dict) -> None:
    """Write ``_build.py``: ``{source relative to the package: SHA-1}`` of what was compiled (empty: pure Python)."""
    lines = ['"""Written by setup.py: the sources compiled into extensions, with their SHA-1 (see compiled.py)."""',
             "SOURCES = {"]
    lines += [f"    {source!r}: {value!r}," for source, value in digests.items()]
    lines += ["}", ""]
    with open(RECORD, "w") as f:
        f.write("\n".join(lines))


def recorded() -> dict:
    """What ``_build.py`` says was compiled (read as a file: this also runs outside the package, from dev.sh)."""
    record: dict = {}
    try:
        with open(RECORD) as f:
            exec(f.read(), record)
    except OSError:
        return {}
    return record.get("SOURCES", {})


def changed(sources) -> list:
    """Those of ``sources`` that differ from what was compiled, or were never recorded.

    A source that is not there (an installed wheel without sources) counts as unchanged.
    """
    record = recorded()
    return [source for source in sources
            if (now := digest(source)) is not None and record.get(source) != now]


class _SourceFinder:
    """A meta path finder that loads the listed modules from their ``.py`` files, not their extensions."""

    def __init__(self, modules: dict):
        self.modules = modules

    def find_spec(self, name, path=None, target=None):
        source = self.modules.get(name)
        if source is None:
            return None
        file = os.path.join(ROOT, source)
        if source.endswith("__init__.py"):
            return importlib.util.spec_from_file_location(name, file,
                                                          submodule_search_locations=[os.path.dirname(file)])
        return importlib.util.spec_from_file_location(name, file)


def use_pure_python_where_stale() -> bool:
    """Load every module from source if any extension is out of date (or pure Python is asked for); True if so."""
    extensions = _extensions()
    if not extensions:
        return False
    asked = bool(os.environ.get("AUTODIFF_VIZ_PURE"))
    stale = [] if asked else changed(extensions.values())
    if not asked and not stale:
        return False
    sources = {name: source for name, source in extensions.items()
               if os.path.exists(os.path.join(ROOT, source))}
    if any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        return True
    sys.meta_path.insert(0, _SourceFinder(sources))
    if stale:
        warnings.warn(f"autodiff_viz: {', '.join(stale)} changed since the package was compiled, so every module "
                      "runs as plain Python (correct, slower). Recompile with `bash dev.sh setup` (or "
                      "`pip install -e .`); set AUTODIFF_VIZ_PURE=1 to choose plain Python without this warning.",
                      RuntimeWarning, stacklevel=3)
    return True


if __name__ == "__main__":      # bash dev.sh: exit status 0 if a compiled source changed since it was compiled
    sys.exit(0 if changed(recorded()) else 1)
