"""TensorFlow's control flow and eager-mode queries, for a program that runs eagerly: ``tf.cond``, ``tf.while_loop``,
``tf.map_fn``, ``tf.scan``, ``tf.executing_eagerly`` …

In TensorFlow these build graph nodes inside ``tf.function`` and simply run in eager mode. Here everything runs
eagerly, so each is the Python it stands for — ``cond`` an ``if``, ``while_loop`` a ``while``, ``map_fn`` a loop
and a ``stack`` — and every step it runs is recorded on the tape like any other line, with its own nodes in
the graph (a loop of 10 steps draws 10 steps).
"""
from __future__ import annotations

import builtins
import contextlib
import time

import numpy as np

from ..tensor import Tensor
from .common import _tensor
from .shapes import stack, stop_gradient


def _truth(pred, op):
    value = pred._value if isinstance(pred, Tensor) else np.asarray(pred)
    if value.size != 1:
        raise ValueError(f"{op}: the predicate must be a single boolean, got shape {value.shape}; reduce it first "
                         "(adv.reduce_all(p) or adv.reduce_any(p)).")
    return bool(value.reshape(()))


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``tf.cond``: ``true_fn()`` if ``pred`` else ``false_fn()`` (only the branch taken runs and is recorded)."""
    return true_fn() if _truth(pred, "cond") else false_fn()


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name=None):
    """``tf.case``: the function of the first pair whose predicate holds (``exclusive=True``: exactly one may)."""
    taken = [fn for p, fn in pred_fn_pairs if _truth(p, "case")]
    if exclusive and len(taken) > 1:
        raise ValueError(f"case: exclusive=True but {len(taken)} predicates hold.")
    if taken:
        return taken[0]()
    if default is None:
        raise ValueError("case: no predicate holds and there is no default.")
    return default()


def switch_case(branch_index, branch_fns, default=None, name=None):
    """``tf.switch_case``: ``branch_fns[branch_index]()`` (a dict of index → function works too); an index out
    of range runs ``default`` (the last branch when None), as TensorFlow."""
    i = int(np.asarray(branch_index._value if isinstance(branch_index, Tensor) else branch_index))
    fns = dict(branch_fns) if isinstance(branch_fns, dict) else dict(enumerate(branch_fns))
    if i in fns:
        return fns[i]()
    return (default or fns[builtins.max(fns)])()


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, maximum_iterations=None, name=None):
    """``tf.while_loop``: ``while cond(*vars): vars = body(*vars)``, at most ``maximum_iterations`` times; the
    result has ``loop_vars``' structure. ``back_prop=False`` stops the gradient through the result."""
    single = not isinstance(loop_vars, (list, tuple))
    state = [loop_vars] if single else list(loop_vars)
    steps = 0
    while _truth(cond(*state), "while_loop") and (maximum_iterations is None or steps < maximum_iterations):
        out = body(*state)
        state = [out] if not isinstance(out, (list, tuple)) else list(out)
        steps += 1
    if not back_prop:
        state = [stop_gradient(v) if isinstance(v, Tensor) else v for v in state]
    return state[0] if single else type(loop_vars)(state)


def _elements(elems):
    """The slices along axis 0 of a tensor, or of each tensor of a tuple/list (zipped)."""
    if isinstance(elems, (list, tuple)):
        columns = [list(_tensor(e)) for e in elems]
        return [type(elems)(row) for row in zip(*columns)]
    return list(_tensor(elems))


def _stacked(results):
    first = results[0]
    if isinstance(first, (list, tuple)):
        return type(first)(stack([r[i] for r in results]) for i in builtins.range(len(first)))
    return stack(results)


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False, infer_shape=True,
           name=None, fn_output_signature=None):
    """``tf.map_fn``: ``stack([fn(e) for e in elems])`` (over axis 0; a tuple of tensors is zipped)."""
    return _stacked([fn(e) for e in _elements(elems)])


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """``tf.vectorized_map``: the same values as :func:`map_fn` (one call per element; nothing to vectorize)."""
    return map_fn(fn, elems)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
         infer_shape=True, reverse=False, name=None):
    """``tf.scan``: the running ``acc = fn(acc, e)`` over ``elems``, each step kept (stacked); the first element
    starts the accumulator when ``initializer`` is None."""
    items = _elements(elems)
    if reverse:
        items = items[::-1]
    if initializer is None:
        acc, items, out = items[0], items[1:], [items[0]]
    else:
        acc, out = initializer, []
    for e in items:
        acc = fn(acc, e)
        out.append(acc)
    return _stacked(out[::-1] if reverse else out)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """``tf.foldl``: ``acc = fn(acc, e)`` from the first element to the last; the final ``acc``."""
    items = _elements(elems)
    acc, items = (items[0], items[1:]) if initializer is None else (initializer, items)
    for e in items:
        acc = fn(acc, e)
    return acc


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """``tf.foldr``: as :func:`foldl` from the last element to the first."""
    items = _elements(elems)[::-1]
    acc, items = (items[0], items[1:]) if initializer is None else (initializer, items)
    for e in items:
        acc = fn(acc, e)
    return acc


# ----- eager-mode queries and no-op contexts ---------------------------------------------------------------
def executing_eagerly():
    """``tf.executing_eagerly``: True — everything here runs eagerly."""
    return True


def inside_function():
    """``tf.inside_function``: False — there is no ``tf.function`` graph here."""
    return False


def is_tensor(x):
    """``tf.is_tensor``: is ``x`` a tensor (or Variable) of this package."""
    return isinstance(x, Tensor)


def is_symbolic_tensor(tensor):
    """``tf.is_symbolic_tensor``: False — every tensor here holds values."""
    return False


def get_static_value(tensor, partial=False):
    """``tf.get_static_value``: the numpy value (every tensor here has one)."""
    return tensor._value.copy() if isinstance(tensor, Tensor) else np.asarray(tensor)


def no_op(name=None):
    """``tf.no_op``: does nothing (None)."""
    return None


def group(*inputs, name=None):
    """``tf.group``: nothing to wait for in eager mode (None)."""
    return None


def tuple_(tensors, name=None, control_inputs=None):
    """``tf.tuple``: the tensors as a list (eager mode has nothing to group)."""
    return list(tensors)


@contextlib.contextmanager
def control_dependencies(control_inputs):
    """``tf.control_dependencies``: a block that does nothing (eager code already runs in order)."""
    yield


@contextlib.contextmanager
def init_scope():
    """``tf.init_scope``: a block that does nothing (there is no graph to lift out of)."""
    yield


def timestamp(name=None):
    """``tf.timestamp``: seconds since the epoch, as a float64 tensor."""
    return Tensor._wrap(np.asarray(time.time(), dtype=np.float64))


def grad_pass_through(f):
    """``tf.grad_pass_through(f)``: ``y = f(x)`` forward, but the gradient passes as if ``y = x`` (the
    straight-through estimator): ``x + stop_gradient(f(x) − x)``."""
    def wrapped(x):
        x = _tensor(x)
        return x + stop_gradient(f(x) - x)
    return wrapped


def recompute_grad(f):
    """``tf.recompute_grad(f)``: ``f`` itself — the same values and gradient (TensorFlow recomputes the forward
    in the backward pass to save memory; here every value is kept, so there is nothing to save)."""
    return f


def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """``tf.print``: prints tensors by their values (not their repr), as TensorFlow does."""
    builtins.print(*[x._value if isinstance(x, Tensor) else x for x in inputs], sep=sep, end=end)

