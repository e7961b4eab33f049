"""Symbolic tensors: what the functional API passes between layer calls (Keras 3's ``KerasTensor``).

``adv.layers.Input(shape=(4,))`` gives a :class:`KerasTensor`: a shape and a
dtype, no values. Calling a layer on it records a :class:`_SymbolicNode` (the
layer, the arguments, the symbolic outputs) instead of computing; a
functional model is the graph of those nodes. The helpers here tell a
symbolic call from a concrete one and make placeholder batches to find
output shapes. The operators on symbolic tensors (``x + h``) are graph steps
(:class:`~autodiff_viz.layers.input_layer.Operation`), installed from there.
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np

from ..base.structure import flatten
from ..core.tensor import Tensor, Variable, constant

_symbolic_layers: "weakref.WeakSet" = weakref.WeakSet()  # layers called on symbolic tensors


_node_order = itertools.count()


class KerasTensor:
    """A symbolic tensor: the shape and dtype of a value a functional model will compute, and which
    layer call makes it. ``shape[0]`` is ``None`` (any batch size).

        >>> x = adv.layers.Input(shape=(4,), name="features")
        >>> x
        <KerasTensor shape=(None, 4), dtype=float32, name=features>
        >>> h = adv.layers.Dense(8)(x)          # builds the layer; h.shape == (None, 8)

    It holds no values: to compute, make a model (``adv.Model(x, h)``) and
    call it on data.
    """

    __slots__ = ("shape", "dtype", "name", "_keras_history", "__weakref__")
    _keras_kind = "symbolic"

    def __init__(self, shape, dtype, name=None, history=None):
        self.shape = tuple(None if s is None else int(s) for s in shape)
        self.dtype = np.dtype(dtype).name
        self.name = name
        self._keras_history = history      # (node, index among the node's outputs)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def _no_value(self, *args, **kwargs):
        raise TypeError(f"{self.name} is a symbolic tensor (shape {self.shape}): it has no value. Call layers "
                        "on it to build a graph, make adv.Model(inputs, outputs), then call the model on data. "
                        "To compute with other ops, put them in a layer (adv.layers.Lambda, or your own call()).")

    __array__ = numpy = __float__ = __int__ = __bool__ = __len__ = __iter__ = _no_value
    __hash__ = object.__hash__


class _SymbolicNode:
    """One call of a layer on symbolic tensors: the layer, the arguments (with the symbolic tensors
    in place) and the symbolic outputs. Creation order is a topological order."""

    __slots__ = ("layer", "args", "kwargs", "inputs", "outputs", "flat_outputs", "index", "order")

    def __init__(self, layer, args, kwargs, shapes_and_rebuild):
        shapes, rebuild = shapes_and_rebuild
        self.layer, self.args, self.kwargs = layer, tuple(args), dict(kwargs)
        self.inputs = [t for t in flatten([list(args), dict(kwargs)])[0] if isinstance(t, KerasTensor)]
        self.index = len(layer._inbound_nodes)
        self.order = next(_node_order)
        several = len(shapes) > 1
        self.flat_outputs = []
        for i, (shape, dtype) in enumerate(shapes):
            name = layer.name if self.index == 0 else f"{layer.name}_{self.index}"
            self.flat_outputs.append(KerasTensor(shape, dtype, f"{name}:{i}" if several else name, (self, i)))
        self.outputs = rebuild(self.flat_outputs)
        layer._inbound_nodes.append(self)
        _symbolic_layers.add(layer)

    def __repr__(self):
        return f"<call {self.index} of {self.layer.name} on {[t.name for t in self.inputs]}>"


class InputSpec:
    """An input shape for a Sequential model (kept for old code; ``Input(shape)`` does the same)."""

    def __init__(self, shape, dtype=None, name=None):
        self.shape = (None,) + tuple(shape)
        self.dtype = dtype
        self.name = name

    def __repr__(self):
        return f"<InputSpec shape={self.shape}>"


def _only(new):
    return new[0]


_PLAIN = frozenset({Tensor, Variable, np.ndarray, bool, int, float, str, type(None)})


_SCALARS = (int, float, complex, np.generic, str, bytes, type(None))


def _python_array(obj) -> bool:
    """Is ``obj`` an array written in Python: a list or tuple of scalars, or of such lists, at any depth?

    Such a list is converted as one array (and a string or None in it gets
    the error that says tensors hold numbers); a list that holds tensors or
    numpy arrays is a structure of inputs.
    """
    if type(obj) is not list and type(obj) is not tuple:
        return False
    for o in obj:
        if not isinstance(o, _SCALARS) and not _python_array(o):
            return False
    return True


def _has_symbolic(args, kwargs) -> bool:
    for a in itertools.chain(args, kwargs.values()) if kwargs else args:
        if type(a) in _PLAIN:
            continue
        if isinstance(a, KerasTensor):
            return True
        if isinstance(a, (list, tuple, dict)) and any(isinstance(t, KerasTensor) for t in flatten(a)[0]):
            return True
    return False


def _has_unknown_sizes(args) -> bool:
    """Does a symbolic input have an unknown size besides the batch (so larger placeholders could help)?"""
    return any(isinstance(t, KerasTensor) and None in tuple(t.shape)[1:] for t in flatten(list(args))[0])


def _symbolic_shapes(obj):
    if isinstance(obj, KerasTensor):
        return obj.shape
    if isinstance(obj, (list, tuple)):
        return [_symbolic_shapes(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _symbolic_shapes(v) for k, v in obj.items()}
    return None


def _describe_symbolic(args, kwargs) -> str:
    leaves = [t for t in flatten([list(args), dict(kwargs)])[0] if isinstance(t, KerasTensor)]
    parts = [f"{t.name} of shape {t.shape} ({t.dtype})" for t in leaves]
    return ("the symbolic input " if len(parts) == 1 else "the symbolic inputs ") + ", ".join(parts)


def _placeholders(structure, size):
    """The structure with each symbolic tensor replaced by a constant batch (unknown sizes -> ``size``)."""
    leaves, rebuild = flatten(structure)
    out = []
    for t in leaves:
        if isinstance(t, KerasTensor):
            shape = tuple(size if s is None else s for s in t.shape)
            kind = np.dtype(t.dtype).kind
            out.append(constant(np.zeros(shape, t.dtype) if kind in "iub" else np.ones(shape, t.dtype)))
        else:
            out.append(t)
    args, kwargs = rebuild(out)
    return args, kwargs


def keras_layer_order(inputs, outputs) -> list:
    """The layers of the functional graph from ``inputs`` to ``outputs`` (flat lists of symbolic tensors), in
    Keras' order: deepest first (a layer's depth is its longest distance from an output, so each ``Input``
    comes just before the first layer it feeds), and the layers of one depth in the order a depth-first walk
    from the outputs first meets them. ``model.layers``, the summary's rows and ``get_weights()`` follow it,
    so weights pass between a functional model here and the same model in Keras."""
    given, index, post, done = {id(t) for t in inputs}, {}, [], set()

    def visit(t):
        node = t._keras_history[0]
        if id(node) in done or (id(t) in given and node.inputs):     # an input that is not an Input: the edge
            return
        index.setdefault(id(node.layer), len(index))
        for parent in ([] if id(t) in given else node.inputs):
            visit(parent)
        done.add(id(node))
        post.append(node)

    for t in outputs:
        visit(t)
    node_depth, layer_depth, layers = {}, {}, {}
    for node in reversed(post):                                        # from the outputs back to the inputs
        depth = max(node_depth.get(id(node), 0), layer_depth.get(id(node.layer), 0))
        node_depth[id(node)] = layer_depth[id(node.layer)] = depth
        layers[id(node.layer)] = node.layer
        for parent in node.inputs:
            above = parent._keras_history[0]
            node_depth[id(above)] = max(depth + 1, node_depth.get(id(above), 0))
    return sorted(layers.values(), key=lambda layer: (-layer_depth[id(layer)], index[id(layer)]))
