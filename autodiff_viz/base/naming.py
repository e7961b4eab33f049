"""The learner's words for what a trace holds: names from source lines, places as notebook cells.

Two small services that traces, drawings and diagnoses share:

* :func:`assigned_name` reads a recorded source line with :mod:`ast` and
  returns the name it assigns (``h = adv.tanh(z)`` → ``"h"``; ``self.h =
  ...`` → ``"self.h"``; ``loss += ...`` → ``"loss"``), or None when the line
  assigns nothing simple (a tuple, a subscript, an expression statement, a
  statement spread over several lines);
* :func:`place` writes a ``(file, line)`` the way a learner finds it:
  ``"cell [3], line 8"`` for a notebook cell (IPython's compile cache maps
  the kernel's ``/tmp/ipykernel_…/….py`` file to the cell's execution
  count), ``"cell, line 8"`` when the count is unknown, else ``"file:line"``.
"""
from __future__ import annotations

import ast
import dis
import functools
import linecache
import os
import re
import sys

_CELL_FILE = re.compile(r"(ipykernel_\d+[/\\]\d+\.py$)|(^<ipython-input-\d+-)")
_INPUT_NUMBER = re.compile(r"^<ipython-input-(\d+)-")


def cell_number(filename: str) -> tuple[bool, int | None]:
    """``(is_a_notebook_cell, execution_count or None)`` for a code file name."""
    if not filename or not _CELL_FILE.search(filename):
        return False, None
    m = _INPUT_NUMBER.match(filename)
    if m:
        return True, int(m.group(1))
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    mapping = getattr(getattr(shell, "compile", None), "_filename_map", None)
    number = mapping.get(filename) if isinstance(mapping, dict) else None
    return True, (int(number) if isinstance(number, int) else None)


def place(filename: str, line: int) -> str:
    """``"cell [3], line 8"``, ``"cell, line 8"`` or ``"path/to/file.py:8"``."""
    is_cell, number = cell_number(filename)
    if is_cell:
        return f"cell [{number}], line {line}" if number is not None else f"cell, line {line}"
    return f"{filename}:{line}"


def short_place(filename: str, line: int) -> str:
    """As :func:`place`, with only the base name of a file (for prose): ``"train.py:8"``."""
    is_cell, _ = cell_number(filename)
    return place(filename, line) if is_cell else f"{os.path.basename(filename)}:{line}"


def is_stored_at_once(code, lasti) -> bool:
    """Is the value made at instruction ``lasti`` of ``code`` stored right away (so the line's variable holds it)?

    ``h = a @ a + c`` runs ``@`` then ``+`` then stores ``h``: only the ``+``
    makes ``h``; the product is an intermediate of the line. ``lasti`` is what
    an op recorded as its user frame's position (an operator's instruction,
    or the end of a call). True when the position is unknown (another
    Python's bytecode), so a name is never taken away by mistake.
    """
    entry = _STORED.get(id(code))
    if entry is None or entry[0] is not code:
        if len(_STORED) > 4096:
            _STORED.clear()
        entry = _STORED[id(code)] = (code, _stored_offsets(code))
    known, stored = entry[1]
    return lasti not in known or lasti in stored


_STORED: dict = {}   # id(code) -> (code, (offsets seen, offsets whose value is stored at once))


def _stored_offsets(code) -> tuple:
    # Python 3.11+ keeps inline CACHE entries between instructions; 3.10 has none to show
    ins = list(dis.get_instructions(code, **({'show_caches': True} if sys.version_info >= (3, 11) else {})))
    stored = set()
    following = None
    for i in reversed(ins):             # the next real instruction after each one
        if following is not None and following.startswith(("STORE_", "UNPACK_")):
            stored.add(i.offset)
        if i.opname not in ("CACHE", "EXTENDED_ARG", "NOP"):
            following = i.opname
    return {i.offset for i in ins}, stored


def escape_sites(escapes) -> set:
    """``{(tensor id, file, line)}`` where a tape saw a value leave it (``float()``, ``math.log``, ``.numpy()``).

    A tensor whose value left on the line that made it is not what that line
    assigns (``loss = loss - math.log(p[i])`` holds a number, not the
    getitem ``p[i]``), so neither a trace label nor ``explain`` names it
    after that line's variable.
    """
    return {(e.tensor_id, *e.location) for e in escapes if e.location is not None}


def assigned_name_at(filename: str, line: int) -> str | None:
    """:func:`assigned_name` of the statement that starts at ``line`` of ``filename``, also when it
    spans several lines (``loss = adv.mean(`` … ``)``): up to 20 lines are joined until they parse."""
    first = linecache.getline(filename, line)
    name = assigned_name(first)
    if name is not None or not first.strip() or not first.rstrip().endswith(("(", "[", "{", ",", "\\")):
        return name
    return _assigned_over_lines(filename, line, first)


def statement_spans(filename: str) -> dict:
    """``{line: (first, returns)}`` for the lines of ``filename``'s simple statements (compound statements'
    bodies are their own statements): ``first`` the statement's first line (``loss = tf.reduce_mean(`` …
    ``)`` spans several), ``returns`` the name of the function a ``return`` statement returns from, else None.
    ``{}`` when the source cannot be read or parsed (a cell with magics)."""
    source = "".join(linecache.getlines(filename))
    return _spans(filename, source) if source else {}


@functools.lru_cache(maxsize=64)
def _spans(filename: str, source: str) -> dict:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    out: dict = {}

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
            elif isinstance(child, ast.stmt) and not hasattr(child, "body"):
                returns = function if isinstance(child, ast.Return) else None
                out.update((k, (child.lineno, returns)) for k in range(child.lineno, child.end_lineno + 1))
            elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                visit(child, function)

    visit(tree, None)
    return out


@functools.lru_cache(maxsize=1024)
def _assigned_over_lines(filename: str, line: int, first: str) -> str | None:
    text = first.strip()
    for k in range(1, 20):
        nxt = linecache.getline(filename, line + k)
        if not nxt:
            return None
        text += "\n" + nxt.strip()
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        return assigned_name(text)
    return None


@functools.lru_cache(maxsize=4096)
def assigned_name(code: str) -> str | None:
    """The name a one-line statement assigns, or None.

        >>> assigned_name("h = adv.tanh(x @ W + b)  # hidden")
        'h'
        >>> assigned_name("a, b = adv.split(x, 2)") is None
        True
    """
    text = (code or "").strip()
    if not text or len(text) > 400:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    if len(tree.body) != 1:
        return None
    stmt = tree.body[0]
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        target = stmt.target
    else:
        return None
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return f"{target.value.id}.{target.attr}"
    return None


def unpacked_names_at(filename: str, line: int) -> tuple | None:
    """The names the statement holding ``line`` unpacks its value into — ``mean, logvar = tf.split(h, 2, axis=1)``
    → ``("mean", "logvar")`` — or None (any other statement; a starred, nested or attribute target)."""
    first = statement_spans(filename).get(line, (line, None))[0]
    text = ""
    for k in range(20):
        nxt = linecache.getline(filename, first + k)
        if not nxt:
            return None
        text += nxt.strip() + "\n"
        names = _unpacked(text)
        if names is not False:
            return names
    return None


@functools.lru_cache(maxsize=1024)
def _unpacked(text: str):
    """Names of a tuple target, None for another statement, False when ``text`` does not parse yet."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    stmt = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or \
            not isinstance(stmt.targets[0], (ast.Tuple, ast.List)):
        return None
    elts = stmt.targets[0].elts
    return tuple(e.id for e in elts) if all(isinstance(e, ast.Name) for e in elts) else None


def unpacked_outputs(ops) -> dict:
    """``{op index: names}`` for the ops whose outputs the learner's statement unpacks by name: the last op
    recorded on a statement of the form ``a, b = …`` (``mean, logvar = tf.split(self.encoder(x), 2, axis=1)``:
    the encoder's ops run first, on the same line). ``ops``: a bridge's recorded ops in order, each with
    ``index`` and ``location`` (``(file, line)`` or None). The caller checks that the number of names is the
    number of outputs."""
    out: dict = {}
    for k, op in enumerate(ops):
        loc = op.location
        if loc is None or k + 1 < len(ops) and ops[k + 1].location == loc:
            continue
        names = unpacked_names_at(*loc)
        if names:
            out[op.index] = names
    return out


@functools.lru_cache(maxsize=4096)
def is_return(code: str) -> bool:
    """Is the one-line statement a ``return <expression>``? (Its value is the function's output.)"""
    text = (code or "").strip()
    if not text.startswith("return ") or len(text) > 400:
        return False
    try:
        tree = ast.parse(text.replace("return ", "_ = ", 1))
    except (SyntaxError, ValueError):
        return False
    return len(tree.body) == 1

@functools.lru_cache(maxsize=None)
def to_snake_case(name: str) -> str:
    """``SimpleRNNCell`` -> ``simple_rnn_cell`` (Keras' rule for default layer names)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def file_line(location) -> str | None:
    """``"file:line"`` of a recorded location ``(filename, lineno)``, or None when there is none."""
    return None if location is None else f"{location[0]}:{location[1]}"


def code_line(location) -> str:
    """The user's line for a message, as ``  file.py:12:  loss = ...`` or ``  cell [3], line 12:  loss = ...``
    on a line of its own (empty when unknown)."""
    if location is None:
        return ""
    filename, lineno = location
    text = linecache.getline(filename, lineno).strip()
    where = short_place(filename, lineno)
    return f"\n    {where}:  {text}" if text else f"\n    {where}"


def array_name(value, namespace: dict) -> str | None:
    """The learner's variable that holds ``value``'s data (``x_batch`` for the batch fed to ``model(x_batch)``).

    A model converts a numpy batch into a tensor of its own (a copy, often cast to float32), so the array is
    found by what it holds: the first public name in ``namespace`` bound to a numpy array of the same shape
    whose entries, cast to ``value``'s dtype, are ``value``'s. None when no variable holds it.
    """
    import numpy as np
    for key, v in namespace.items():
        if key.startswith("_") or not isinstance(v, np.ndarray) or not v.ndim or v.shape != value.shape:
            continue
        try:
            if np.array_equal(v.astype(value.dtype, copy=False), value):
                return key
        except (TypeError, ValueError):
            continue
    return None


# What a picture calls data fed to a model that no variable of the learner's holds (``model(np.random.rand(4, 3))``):
# the name of the tensor a layer makes of a numpy batch, and of an unnamed input node of a bridge's trace.
INPUT = "input"


LOST_FIX = ("Fix that line so it keeps a tensor: adv.matmul(X, W), X @ W or adv.constant(X).dot(W) for X.dot(W) "
            "with X a numpy array (np.dot(X, W) works too); collect pieces in a list and adv.stack them instead "
            "of writing into np.zeros; adv ops instead of float() / np.asarray().")


def lost_at(esc, where: bool = True) -> str:
    """Where and how a path left the tape, for a message: ``line 8 (softmax.py) through np.asarray() ...``
    (without the place when ``where`` is False: a message that quotes the line says it).

    ``np.asarray()`` on a line with ``.dot(`` is numpy's ``ndarray.dot``: a
    numpy array on the left converts the tensor on the right to an array
    without a word (the CS231n spelling ``scores = X.dot(W)``).
    """
    place = f"line {esc.location[1]} ({esc.location[0]})" if esc.location else "a line of your code"
    how = esc.how
    if how == "np.asarray()" and esc.location and ".dot(" in code_line(esc.location):
        how += " (a numpy array's .dot() converted the tensor to an array)"
    return f"{place} through {how}" if where else f"through {how}"


def attribute_assignment(cls, attr: str) -> tuple[str, int, str] | None:
    """``(file, line, method)`` of the ``self.<attr> = ...`` in ``cls`` or a class it inherits from (the user's
    own code first) that sets what the attribute holds: the last one of the first method that assigns it
    (``self.kernel = self.add_weight(...)`` then ``self.kernel = self.kernel * mask`` in ``build``: the second),
    or None when no source is found. Tells a value a layer computed once (in ``build`` or ``__init__``) from
    one it computes on every call."""
    import inspect
    for klass in getattr(cls, "__mro__", (cls,)):
        try:
            lines, start = inspect.getsourcelines(klass)
            filename = inspect.getsourcefile(klass)
        except (OSError, TypeError):
            continue
        try:
            tree = ast.parse("".join(lines).replace("\r", "") if lines[0][:1] not in " \t" else
                             "if 1:\n" + "".join(lines))
        except SyntaxError:
            continue
        shift = start - 1 - (1 if lines[0][:1] in " \t" else 0)
        for method in ast.walk(tree):
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            found = None
            for node in ast.walk(method):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else ()
                if any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                       and t.value.id == "self" for t in targets):
                    found = max(found or 0, node.lineno)
            if found is not None:
                return filename, found + shift, method.name
    return None
