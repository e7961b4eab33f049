"""Which code the learner wrote: how a bridge finds the learner's line among the frames of a call.

A recorded op runs deep inside a framework: ``loss = F.cross_entropy(net(x), y)`` passes through the
learner's line, then torch's ``Module.__call__``, a library's ``forward`` (transformers, timm, Keras), the
framework's own functions and finally the recorder. A trace, an error and a diagnosis must all name the
learner's line, so every bridge walks up from the op to the first frame whose file is not library code.

Library code is a set of folders: the framework's, autodiff_viz's own, the standard library and every
installed package (``site-packages``: transformers' code is not the learner's either). :class:`Code` holds
one such set and remembers the answer per file name, so a walk costs one dict look-up per frame. Each
bridge makes its own (``torch/provenance.py``, ``tf/provenance.py``) and everything in that bridge asks it.

A Keras op runs some forty frames below the learner's line, and every op of a layer's call would walk them all.
A bridge that wraps a library's call (Keras' ``Layer.__call__``) can **mark** the wrapper's frame while it runs
(:meth:`Code.marking`): the first walk that passes a marked frame leaves its answer there, and every later walk
stops at that frame. The answer cannot change while the frame runs: the frames above it are suspended, and a
suspended frame's line does not move.
"""
from __future__ import annotations

import inspect
import os
import sys
import sysconfig

#: the answer of a marked frame (:meth:`Code.marking`) no walk has passed yet; ``_ABSENT``: a frame not marked
UNKNOWN = object()
_ABSENT = object()


def folder(module) -> str:
    """The folder a module (a package's ``__init__``) lives in, ending in the path separator."""
    return os.path.dirname(os.path.abspath(module.__file__)) + os.sep


def installed() -> tuple:
    """The standard library's folders and those packages are installed in (``site-packages``)."""
    paths = sysconfig.get_paths()
    return tuple(os.path.abspath(p) + os.sep
                 for k in ("stdlib", "platstdlib", "purelib", "platlib") if (p := paths.get(k)))


class Code:
    """The folders whose files are library code, not the learner's; ``<frozen …>`` modules count too.

    ``dirs``: the folders (each ending in the separator); ``known``: ``{file name: library?}``, filled as files
    are asked about. :meth:`add` counts one more folder (a test's temporary "installed" package).
    """

    def __init__(self, *dirs: str):
        self.dirs = tuple(sorted(set(dirs)))
        self.known: dict = {}
        self.marked = None              # the code object whose running frames may be marked
        self.marks: dict = {}           # {marked frame: the walk's answer from there, or UNKNOWN}

    def add(self, *dirs: str) -> None:
        self.dirs = tuple(sorted(set(self.dirs) | set(dirs)))
        self.known = {}
        self.marks.update(dict.fromkeys(self.marks, UNKNOWN))

    def marking(self, code) -> dict:
        """Let frames running ``code`` (a wrapper's ``__code__``, itself library code) be marked: the wrapper puts
        its frame in the returned dict as ``marks[frame] = UNKNOWN`` when it starts and takes it out when it ends
        (whatever happens between). Marks must leave with their frames: a frame kept as a key would keep its locals."""
        self.marked = code
        return self.marks

    def __contains__(self, filename: str) -> bool:
        inside = self.known.get(filename)
        if inside is None:
            inside = self.known[filename] = filename.startswith(self.dirs) or filename.startswith("<frozen")
        return inside

    def computes(self, cls, method: str) -> bool:
        """Is ``cls.<method>`` (``forward``, ``call``) library code? Then the class computes what its library
        says (a subclass of ``nn.Linear`` that only adds a field still does), and a figure may write its
        library formula; a class whose method the learner wrote may be named ``RNN`` and compute anything."""
        code = getattr(inspect.unwrap(getattr(cls, method, None) or (lambda: None)), "__code__", None)
        return code is not None and code.co_filename in self

    def user_line(self, depth: int = 2):
        """``(file name, line)`` of the first frame outside library code, looking from ``depth`` frames above
        this method's own (2: its caller's caller, as ``sys._getframe``), or None when every frame is library code."""
        f = sys._getframe(depth)
        known = self.known
        marked = self.marked
        passed = ()
        answer = None
        while f is not None:
            code = f.f_code
            if code is marked:
                mark = self.marks.get(f, _ABSENT)
                if mark is UNKNOWN:
                    passed = (*passed, f)
                elif mark is not _ABSENT:
                    answer = mark
                    break
            name = code.co_filename
            inside = known.get(name)
            if inside is None:
                inside = name in self
            if not inside:
                answer = name, f.f_lineno
                break
            f = f.f_back
        for m in passed:
            if m in self.marks:
                self.marks[m] = answer
        return answer

    def user_call(self, depth: int = 2):
        """:meth:`user_line` and what that line called: ``((file, line), (names, offset))``, ``names`` the
        library functions between the learner's line and here, outermost first (``error_handler``,
        ``op_dispatch_handler``, ``reduce_sum``), ``offset`` the line's bytecode offset (two calls on one line
        differ in it); ``(None, None)`` when every frame is library code."""
        f = sys._getframe(depth)
        known = self.known
        names = []
        while f is not None:
            name = f.f_code.co_filename
            inside = known.get(name)
            if inside is None:
                inside = name in self
            if not inside:
                return (name, f.f_lineno), (tuple(reversed(names)), f.f_lasti)
            names.append(f.f_code.co_name)
            f = f.f_back
        return None, None

    def user_frame(self, f):
        """The first frame from ``f`` upwards whose file is not library code (the frame itself), or None."""
        while f is not None and f.f_code.co_filename in self:
            f = f.f_back
        return f

    def called_by_user(self, depth: int = 2) -> bool:
        """Is the frame ``depth`` above this method's own (2: its caller's caller) outside these folders?"""
        f = sys._getframe(depth)
        return f is not None and f.f_code.co_filename not in self


def variable_for(obj, frame):
    """The name the learner's code gives ``obj`` in ``frame`` (a local, else a global, else an attribute of its
    ``self``): ``decoder`` for a model built as ``decoder = MLP(2, 4)`` and called as ``decoder(z)``, ``block`` in
    ``for block in blocks: x = block(x)``. None when no name holds it (``layers[0](x)``) or ``frame`` is None.
    Asked once per model, when a recording first sees it called."""
    return None if frame is None else name_in(obj, frame.f_locals, frame.f_globals)


def name_in(obj, *namespaces):
    """The first name bound to ``obj`` in ``namespaces`` (dicts, in order), else among the attributes of their
    ``self``; None if none."""
    for scope in namespaces:
        for name, value in scope.items():
            if value is obj and name.isidentifier() and not name.startswith("_"):
                return name
    owner = next((scope["self"] for scope in namespaces if "self" in scope), None)
    for name, value in (getattr(owner, "__dict__", None) or {}).items():
        if value is obj and not name.startswith("_"):
            return name
    return None
