"""Function transforms in the style of JAX: ``grad``, ``vjp``, ``jvp``, ``jacobian``, ``hessian``.

Each runs the function under a fresh tape that watches only the chosen
arguments, then walks that tape once:

    >>> import autodiff_viz as adv
    >>> adv.grad(lambda x: adv.sum(x ** 3))(adv.constant([1.0, 2.0])).numpy()
    array([ 3., 12.])

Unlike ``tape.gradient``, ``grad`` needs a scalar output (as JAX), and a
disconnected argument gets zeros, not None.
"""
from __future__ import annotations

import functools
import inspect
from numbers import Integral
from typing import Any, Callable, Sequence, Tuple, Union

import numpy as np

from ..base.state import paused, state
from ..base.structure import flatten
from ..core import engine, rules
from ..core.engine import In, Rule
from ..core.tensor import Tensor, Variable, _label, as_tensor
from .tape import GradientTape

Argnums = Union[int, Sequence[int]]     # which positional arguments to differentiate, as JAX's argnums


def _argnums(argnums, nargs):
    single = isinstance(argnums, Integral)
    nums = (int(argnums),) if single else tuple(int(a) for a in argnums)
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(f"argnums {a} is out of range for a function called with {nargs} argument(s).")
    return single, tuple(a % nargs for a in nums)


def _trace_call(f, args, argnums, persistent=False):
    """Call ``f`` under a new tape watching ``args[argnums]``; returns (tape, out, watched)."""
    args = list(args)
    for a in argnums:
        args[a] = as_tensor(args[a])
        if args[a].dtype.kind not in "fc":
            raise TypeError(f"argument {a} has dtype {args[a].dtype}; differentiate only with respect to "
                            "floating values (e.g. pass 2.0, not 2, or cast the array to float64).")
    with GradientTape(persistent=persistent, watch_accessed_variables=False) as tape:
        watched = [args[a] for a in argnums]
        tape.watch(watched)
        out = f(*args)
    return tape, out, watched


def value_and_grad(f: Callable[..., Any], argnums: Argnums = 0, has_aux: bool = False) -> Callable[..., Any]:
    """A function returning ``(f(*args), ∂f/∂args[argnums])``; ``f`` must return a scalar.

    ``has_aux=True`` (as JAX): ``f`` returns ``(scalar, aux)`` and the result is
    ``((scalar, aux), gradient)``; ``aux`` is passed through, not differentiated.
    """
    @functools.wraps(f)
    def wrapped(*args):
        single, nums = _argnums(argnums, len(args))
        tape, out, watched = _trace_call(f, args, nums)
        if has_aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError(f"grad(has_aux=True): {getattr(f, '__name__', 'f')} must return a pair "
                                f"(scalar, aux), got {type(out).__name__}.")
            out, aux = out
        if not isinstance(out, Tensor) or out.size != 1 or out.ndim > 0 and out.shape != (1,):
            shape = out.shape if isinstance(out, Tensor) else type(out).__name__
            raise TypeError(f"grad: {getattr(f, '__name__', 'f')} must return a scalar tensor, got {shape}. "
                            "For a non-scalar output use adv.jacobian, or adv.vjp with a cotangent."
                            + ("" if has_aux or not isinstance(out, (tuple, list)) else
                               " If it returns (loss, extra), pass has_aux=True."))
        grads = tape.gradient(out, watched, unconnected_gradients="zero")
        g = grads[0] if single else tuple(grads)
        return ((out, aux), g) if has_aux else (out, g)
    return wrapped


def grad(f: Callable[..., Any], argnums: Argnums = 0, has_aux: bool = False) -> Callable[..., Any]:
    """A function computing the gradient of scalar-valued ``f`` with respect to ``args[argnums]``.

    ``has_aux=True`` (as JAX): ``f`` returns ``(scalar, aux)`` and the result is ``(gradient, aux)``.
    """
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def wrapped(*args):
        value, g = vg(*args)
        return (g, value[1]) if has_aux else g
    return wrapped


def vjp(f: Callable[..., Any], *primals: Any) -> Tuple[Any, Callable[..., Any]]:
    """``(f(*primals), vjp_fn)`` where ``vjp_fn(v)`` returns ``vᵀ·∂f/∂primal`` for every primal.

    The cotangent ``v`` has the shape of the output; ``vjp_fn`` may be called many times.
    """
    tape, out, watched = _trace_call(f, primals, tuple(range(len(primals))), persistent=True)

    def vjp_fn(cotangent):
        return tuple(tape.gradient(out, watched, output_gradients=cotangent, unconnected_gradients="zero"))
    return out, vjp_fn


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> Tuple[Any, Any]:
    """``(f(*primals), ∂f/∂primals · tangents)``: forward mode, one walk of the record.

    ``primals`` and ``tangents`` are tuples (or lists) of ``f``'s arguments
    and their tangents, as JAX's: ``adv.jvp(f, (x,), (t,))``. A bare tensor
    is refused, since iterating it would split it into rows.
    """
    for what, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"jvp: {what} must be a tuple or list with one entry per argument of "
                            f"{getattr(f, '__name__', 'f')}, got {type(value).__name__}. For one argument "
                            "write adv.jvp(f, (x,), (t,)), not adv.jvp(f, x, t).")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents.")
    tape, out, watched = _trace_call(f, primals, tuple(range(len(primals))), persistent=True)
    seeds = {}
    recorded = any(t is not tape for t in state.recording)
    for x, t in zip(watched, tangents):
        t = as_tensor(t)
        if t.shape != x.shape:
            raise ValueError(f"jvp: a tangent has shape {t.shape} but its primal has shape {x.shape}.")
        if recorded:        # the tangent itself, so an outer tape sees how the result depends on it
            seeds[x._id] = t if t.dtype == x.dtype else rules.cast(t, dtype=x.dtype)
        else:
            seeds[x._id] = t._value.astype(x.dtype)
    tangent_out = _tangent_result(tape._push(seeds), out, ())
    return out, tangent_out


def _seed_like(value: np.ndarray, tape):
    """A seed for a walk: a tensor when an outer tape records the walk, else the array."""
    others = [t for t in state.recording if t is not tape]
    return Tensor(value) if others else value


def _tangent_result(tangents, out, batch):
    t = tangents.get(out._id)
    if t is None:
        return Tensor(np.zeros(tuple(batch) + out.shape, dtype=out.dtype))
    if isinstance(t, Tensor):
        return t
    t = np.asarray(t)       # a scalar tangent may be a numpy scalar: keep its shape ()
    return Tensor._wrap(t if t.flags.c_contiguous else np.ascontiguousarray(t))


def jacobian(f: Callable[..., Any], argnums: Argnums = 0, mode: str = "reverse") -> Callable[..., Any]:
    """A function computing the full Jacobian ``out.shape + arg.shape`` of ``f``.

    ``mode="reverse"`` walks the record backwards once per output (seeded with
    an identity over the output's entries): cheap for few outputs.
    ``mode="forward"`` pushes an identity of tangents forwards once per
    argument: cheap for few inputs. Both give the same numbers.
    """
    if mode not in ("reverse", "forward"):
        raise ValueError(f"jacobian: mode must be 'reverse' or 'forward', got {mode!r}.")

    @functools.wraps(f)
    def wrapped(*args):
        single, nums = _argnums(argnums, len(args))
        tape, out, watched = _trace_call(f, args, nums, persistent=True)
        outs, rebuild = flatten(out)
        per_out = []
        for o in outs:
            if not isinstance(o, Tensor):
                raise TypeError(f"jacobian: the function returned {type(o).__name__}, not a tensor.")
            if mode == "reverse":
                js = tape.jacobian(o, watched, unconnected_gradients="zero")
            else:
                js = [_forward_jacobian(tape, o, x) for x in watched]
            per_out.append(js[0] if single else tuple(js))
        return rebuild(per_out)
    return wrapped


def _forward_jacobian(tape, out, x):
    """``out.shape + x.shape`` from one forward walk seeded with the identity over ``x``."""
    eye = np.eye(x.size, dtype=x.dtype).reshape(x.shape + x.shape)
    t = _tangent_result(tape._push({x._id: _seed_like(eye, tape)}), out, x.shape)
    k = x.ndim
    return rules.transpose(t, axes=tuple(range(k, k + out.ndim)) + tuple(range(k))) if k and out.ndim else t


def hessian(f: Callable[..., Any], argnums: Argnums = 0) -> Callable[..., Any]:
    """The matrix of second derivatives of scalar ``f``: the Jacobian of its gradient.

    Reverse over reverse: an outer tape records the inner gradient walk.
    """
    return jacobian(grad(f, argnums), argnums)


def custom_gradient(f: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``f`` a gradient of your own (TensorFlow's ``tf.custom_gradient``).

    ``f(*xs)`` returns ``(y, grad_fn)``; ``grad_fn(dy)`` returns one gradient
    per input (a tensor, or None for no gradient). The whole of ``f`` appears
    as one op ``custom:<name>`` on the tape, its edges labelled "custom".

        >>> @adv.custom_gradient
        ... def clip_grad(x):
        ...     return x, lambda dy: adv.clip(dy, -1.0, 1.0)

    Variables (as TensorFlow): the trainable float variables that ``f``'s
    ops read, other than its arguments, are found while ``f`` runs and
    become extra inputs of the op, in the order first read, so a tape links
    them and their gradient reaches them. ``grad_fn`` must then take a
    keyword ``variables`` (it gets that list) and return
    ``(input_grads, variable_grads)``, one gradient per variable in that
    order:

        >>> v = adv.Variable(2.0)
        >>> @adv.custom_gradient
        ... def scale(x):
        ...     def grad_fn(dy, variables):
        ...         return dy * v, [dy * x]          # ∂(x·v)/∂x = v, ∂(x·v)/∂v = x
        ...     return x * v, grad_fn

    A ``grad_fn`` without ``variables`` is refused with TensorFlow's
    ``TypeError`` rather than leaving the variables' gradients None.

    ``grad_fn`` is called once per cotangent; a batched cotangent (a whole
    Jacobian at once) is split into single cotangents. Forward mode needs a
    JVP and is not available for custom gradients.
    """
    @functools.wraps(f)
    def wrapped(*args):
        xs = [as_tensor(a) for a in args]
        y, grad_fn, variables = _run_noting_variables(f, xs)
        if variables and not _takes_variables(grad_fn):
            raise TypeError(
                "If using @custom_gradient with a function that uses variables, then grad_fn must accept a "
                f"keyword argument 'variables'. {f.__name__} reads the trainable variable(s) "
                f"{_names(variables)}: define grad_fn(dy, variables) returning (input_grads, [one gradient "
                f"per variable, in that order]), or pass the variable(s) to {f.__name__} as arguments.")
        y = as_tensor(y)
        cache = {}

        def grads_for(g, out):
            key = id(g)
            if key not in cache:
                cache.clear()
                cache[key] = (g, _call_grad_fn(grad_fn, g, out, xs, f, variables))
            return cache[key][1]

        def vjp_i(i):
            return lambda g, out, *inputs: grads_for(g, out)[i]

        ins = [In(f"x{i}", "custom", vjp_i(i)) for i in range(len(xs))]
        ins += [In(f"variables[{j}]", "custom", vjp_i(len(xs) + j)) for j in range(len(variables))]
        rule = Rule(f"custom:{f.__name__}", _custom_forward(f, xs, variables, y), ins, doc=f.__doc__ or "")
        return engine.apply(rule, *xs, *variables)
    return wrapped


def _run_noting_variables(f, xs):
    """Run ``f(*xs)`` recording on no tape of the user's; returns ``(y, grad_fn, variables)``.

    ``variables``: the trainable float variables an op inside read, in the
    order first read, less those passed as arguments. A private tape that
    watches accessed variables (TensorFlow's ``VariableWatcher``) is the only
    one recording while ``f`` runs; it is dropped afterwards.
    """
    watcher = GradientTape(persistent=True)
    with paused():
        watcher._resume()
        y, grad_fn = f(*xs)
    read = [t for t in watcher.record.watched.values() if isinstance(t, Variable)]
    return y, grad_fn, [v for v in read if all(v is not x for x in xs)]


def _takes_variables(grad_fn) -> bool:
    """Can ``grad_fn`` be called with the keyword ``variables`` (named, or through ``**kwargs``)?"""
    try:
        params = inspect.signature(grad_fn).parameters.values()
    except (TypeError, ValueError):         # no signature to read (a builtin): let the call tell
        return True
    return any(p.kind is p.VAR_KEYWORD or p.name == "variables" and p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                                               p.KEYWORD_ONLY)
               for p in params)


def _names(variables) -> str:
    return ", ".join(_label(v) for v in variables)


def _custom_forward(f, xs, variables, y):
    """The custom op's forward: ``y`` at the values it was called with, else ``f`` run again.

    Running again at other values is what lets a per-edge gradient check
    take finite differences of a custom op alone. The variables ``f`` reads
    hold the given values while it runs again, and their own values after.
    """
    n = len(xs)

    def forward(*vals):
        if all(v is x._value for v, x in zip(vals, xs + variables)):
            return y._value
        saved = [v._value for v in variables]
        try:
            with paused():
                for v, val in zip(variables, vals[n:]):
                    v._value = val
                return as_tensor(f(*[Tensor(v) for v in vals[:n]])[0])._value
        finally:
            for v, value in zip(variables, saved):
                v._value = value
    return forward


def _call_grad_fn(grad_fn, g, out, xs, f, variables=()):
    """Run a user's grad_fn on one cotangent, or on each entry of a batch of them.

    Returns one gradient per input ``xs``, then one per variable.
    """
    total = len(xs) + len(variables)
    nb = g.ndim - out.ndim
    if nb:
        rows = [_call_grad_fn(grad_fn, g[i], out, xs, f, variables) for i in range(g.shape[0])]
        return tuple(None if rows[0][k] is None else rules.stack(*[r[k] for r in rows], axis=0)
                     for k in range(total))
    kwargs = {"variables": list(variables)} if variables else {}
    recorded = isinstance(g, Tensor)
    if recorded:
        result = grad_fn(g, **kwargs)
    else:
        with paused():
            result = grad_fn(Tensor._wrap(g), **kwargs)
    result = _grad_list(result, xs, f, variables)
    if recorded:
        return tuple(result)
    return tuple(None if r is None else np.asarray(r._value if isinstance(r, Tensor) else r) for r in result)


def _grad_list(result, xs, f, variables) -> list:
    """What a grad_fn returned as one flat list: the inputs' gradients, then the variables'.

    Each gradient has the shape of what it is for: nothing downstream sums a
    broadcast one back, so a wrong shape is refused here, where it was made.
    """
    n = len(xs)
    var_grads = []
    if variables:
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            got = f"{len(result)} values" if isinstance(result, (list, tuple)) else type(result).__name__
            raise TypeError(f"custom_gradient: {f.__name__} reads the variable(s) {_names(variables)}, so its "
                            f"grad_fn must return a pair (input_grads, variable_grads), got {got}.")
        result, var_grads = result
        if not isinstance(var_grads, (list, tuple)):
            raise TypeError(f"custom_gradient: the grad_fn of {f.__name__} returned a "
                            f"{type(var_grads).__name__} as variable_grads; return a list with one gradient "
                            f"per variable ({_names(variables)}), e.g. `return dx, [dv]`.")
        if len(var_grads) != len(variables):
            raise ValueError(f"custom_gradient: the grad_fn of {f.__name__} returned {len(var_grads)} variable "
                             f"gradient(s) for {len(variables)} variable(s) ({_names(variables)}); return one "
                             "per variable, in the order of `variables` (None for none).")
    result = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(result) != n:
        raise ValueError(f"custom_gradient: the grad_fn of {f.__name__} returned {len(result)} "
                         f"gradient(s) for {n} input(s); return one per input (None for none).")
    result += var_grads
    names = [f"input x{i}" for i in range(n)] + [f"variable {_label(v)}" for v in variables]
    for r, t, name in zip(result, list(xs) + list(variables), names):
        shape = None if r is None else np.shape(r._value if isinstance(r, Tensor) else r)
        if shape is not None and shape != t.shape:
            raise ValueError(f"custom_gradient: the grad_fn of {f.__name__} returned a gradient of shape {shape} "
                             f"for {name} of shape {t.shape}; a gradient has the shape of what it is for "
                             "(sum over the axes it was broadcast along, e.g. adv.sum(dy * x) for a scalar).")
    return result
