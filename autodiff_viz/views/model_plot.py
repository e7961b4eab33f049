"""``plot_model``: a model's layers and their connections as a picture (Keras 3's ``keras.utils.plot_model``).

    >>> adv.utils.plot_model(model, show_shapes=True)   # one box per layer, as SVG in a notebook

The drawing shows layers, not ops (for those, draw a trace); it is returned
as a :class:`ModelPlot` that a notebook shows as SVG and whose ``.source`` is
the DOT text.
"""
from __future__ import annotations

import os
import textwrap

import numpy as np

from ..base.files import check_folder
from ..base.structure import flatten
from ..core.tensor import Tensor
from ..layers.base import Layer
from ..layers.input_layer import InputLayer
from ..layers.keras_tensor import _symbolic_shapes
from ..models import Functional, Model, Sequential
from . import dot as _dot
from . import minidot, render

__all__ = ["plot_model", "ModelPlot"]


# ---------------------------------------------------------------------------
# plot_model
# ---------------------------------------------------------------------------
RANKDIRS = ("TB", "LR", "BT", "RL")
PLOT_FORMATS = (".png", ".svg", ".dot")

PLOT_STYLES = {
    "graph": {"fontname": "Helvetica", "fontsize": "10", "nodesep": "0.3", "ranksep": "0.35"},
    "node": {"fontname": "Helvetica", "fontsize": "10", "shape": "box", "style": "rounded,filled",
             "fillcolor": "white", "color": "#444444", "margin": "0.12,0.06"},
    "edge": {"color": "#444444", "arrowsize": "0.7"},
    "input": {"fillcolor": "#d6e6f5"},
    "model": {"shape": "box3d", "style": "filled", "fillcolor": "#e6def5"},
    "cluster": {"style": "dashed,rounded", "color": "#7a6a9a", "fontname": "Helvetica", "fontsize": "10",
                "labeljust": "l"},
}

PLOT_INSTALL_HINT = (
    "plot_model: writing {path!r} needs Graphviz's `dot` program, which was not found on PATH. Install it with "
    "one of:\n"
    "  Debian/Ubuntu:  sudo apt-get install graphviz\n"
    "  macOS:          brew install graphviz\n"
    "  conda:          conda install -c conda-forge graphviz\n"
    "then restart the kernel. Meanwhile to_file='model.dot' writes the DOT text, and the returned plot still "
    "shows in a notebook, laid out by autodiff_viz's built-in renderer."
)


class ModelPlot:
    """What :func:`plot_model` returns: the drawing of a model's layers.

    A notebook shows it as SVG (``_repr_svg_``); ``source`` is the DOT text,
    ``svg()`` the SVG text (Graphviz), ``save(path)`` writes ``.svg``,
    ``.dot`` or ``.png``. Without Graphviz's ``dot`` program the notebook
    still shows it, laid out by the built-in renderer, with a note that says
    how to install Graphviz.
    """

    def __init__(self, source: str, model_name: str, boxes: int, edges: int):
        self.source = source
        self.model_name = model_name
        self.boxes = boxes
        self.edges = edges
        self._svg = None

    def svg(self) -> str:
        """The drawing as SVG text, laid out by Graphviz (``GraphvizNotFound`` when ``dot`` is missing)."""
        if self._svg is None:
            self._svg = render.svg(self.source)
        return self._svg

    def _repr_svg_(self) -> str:
        try:
            return self.svg()
        except render.GraphvizNotFound:
            note = textwrap.wrap(minidot.FALLBACK_NOTE, 70)
            body = self.source.rstrip()
            return minidot.svg(body[:-1].rstrip() + "\n  label=" + _dot._label(note) + "\n}\n")

    def save(self, path) -> str:
        """Write the drawing to ``path``; its extension (``.svg``, ``.dot`` or ``.png``) chooses the format."""
        path = _plot_path(path)
        ext = os.path.splitext(path)[1].lower()
        if ext == ".dot":
            data = self.source.encode("utf-8")
        elif ext == ".svg":
            try:
                data = self.svg().encode("utf-8")
            except render.GraphvizNotFound:
                raise render.GraphvizNotFound(PLOT_INSTALL_HINT.format(path=path)) from None
        else:
            data = self._png(path)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def _png(self, path) -> bytes:
        import graphviz

        try:
            return graphviz.Source(self.source).pipe(format="png")
        except graphviz.ExecutableNotFound:
            raise render.GraphvizNotFound(PLOT_INSTALL_HINT.format(path=path)) from None
        except graphviz.CalledProcessError as exc:
            said = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
            raise RuntimeError(f"plot_model: Graphviz's dot on this machine cannot write PNG, so {path!r} was not "
                               f"written (dot said: {said[0] if said else exc}). Write an SVG instead "
                               "(to_file='model.svg', any browser opens it), or install a Graphviz built with "
                               "cairo: sudo apt-get install graphviz | brew install graphviz | conda install -c "
                               "conda-forge graphviz.") from None

    def __repr__(self):
        return f"<ModelPlot of {self.model_name!r}: {self.boxes} boxes, {self.edges} edges; .source is the DOT text>"


def _plot_path(path) -> str:
    """``path`` as a string, checked before anything is drawn: a known extension in an existing folder."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"plot_model: to_file must be a file name (str or pathlib.Path), got "
                        f"{type(path).__name__}.") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if os.path.splitext(path)[1].lower() not in PLOT_FORMATS:
        raise ValueError(f"plot_model: cannot tell the format of {path!r}; use a name ending in .png, .svg or .dot "
                         "(e.g. to_file='model.png').")
    check_folder("plot_model", path)
    return path


def plot_model(model, to_file=None, show_shapes=False, show_dtype=False, show_layer_names=True, rankdir="TB",
               expand_nested=False, dpi=None, show_layer_activations=False, show_trainable=False):
    """Draw a model's layers and how they connect (``keras.utils.plot_model``).

    One box per layer (``name (Class)``; with the flags also Keras' lines
    ``Activation: relu``, ``Input shape: …``, ``Output shape: (None, 8)``,
    ``Output dtype: float32``, ``Trainable`` / ``Non-trainable``) and an edge
    per connection: a Sequential's chain (without a box for its ``Input``, as
    Keras 3), a functional model's graph with a box per ``Input``, a shared
    layer drawn once with an edge from each place it is called, a nested
    model as one box, or with ``expand_nested=True`` as a dashed cluster of
    its own layers. A subclassed model is one box (its ``call`` is Python
    code; draw a trace to see its ops).

        >>> x = adv.layers.Input(shape=(4,), name="x")
        >>> model = adv.Model(x, adv.layers.Dense(1)(adv.layers.Dense(8, activation="relu")(x)))
        >>> plot = adv.utils.plot_model(model, show_shapes=True, to_file="model.png")
        >>> print(plot.source)          # the DOT text; a notebook shows plot as SVG

    A functional model, or a Sequential that starts with an ``Input``, shows
    its shapes before it is ever called. A Sequential with no input shape
    knows them only once it has been built or called; until then
    ``show_shapes=True`` raises an error that says how to give it one.

    Args:
        to_file: ``None`` (default: nothing written), or a path ending in
            ``.png`` (needs Graphviz's ``dot``), ``.svg`` (needs ``dot``) or
            ``.dot`` (the text).
        rankdir: ``"TB"`` (top to bottom), ``"LR"``, ``"BT"`` or ``"RL"``.
        dpi: the resolution Graphviz draws at (``None``: its default).

    Returns:
        A :class:`ModelPlot`: shown as SVG in a notebook; ``.source`` is the DOT.
    """
    if not isinstance(model, Layer):
        raise TypeError(f"plot_model: expects a model (adv.Sequential, adv.Model) or a layer, got "
                        f"{type(model).__name__}.")
    if rankdir not in RANKDIRS:
        raise ValueError(f"plot_model: rankdir={rankdir!r} is not one of {RANKDIRS}; 'TB' draws top to bottom, "
                         "'LR' left to right.")
    if dpi is not None and (isinstance(dpi, bool) or not isinstance(dpi, (int, float, np.integer, np.floating))
                            or not dpi > 0):
        raise ValueError(f"plot_model: dpi must be a positive number (e.g. 96 or 200) or None, got {dpi!r}.")
    path = None if to_file is None else _plot_path(to_file)
    drawing = _ModelDrawing(show_shapes=bool(show_shapes), show_dtype=bool(show_dtype),
                            show_layer_names=bool(show_layer_names), expand_nested=bool(expand_nested),
                            show_layer_activations=bool(show_layer_activations),
                            show_trainable=bool(show_trainable))
    source = drawing.dot(model, rankdir, dpi)
    plot = ModelPlot(source, model.name, drawing.boxes, len(drawing.edges))
    if path is not None:
        plot.save(path)
    return plot


class _ModelDrawing:
    """The DOT of one model: boxes by layer (each layer once), clusters for expanded models, edges."""

    def __init__(self, **flags):
        self.flags = flags
        self.ids = {}           # id(layer) -> DOT node id (None for an expanded model: a cluster)
        self.boxes = 0
        self.clusters = 0
        self.edges = []
        self._edge_set = set()
        self.unknown = []       # layers whose output shape is not known (show_shapes)

    # ----- structure ---------------------------------------------------------
    def dot(self, model, rankdir, dpi) -> str:
        body = self.body(model, "  ")
        if self.unknown:
            raise ValueError(_unknown_shapes_message(model, self.unknown))
        graph = dict(PLOT_STYLES["graph"], rankdir=rankdir, dpi=None if dpi is None else f"{dpi:g}")
        lines = ["digraph model {", "  graph" + _dot._attrs(graph), "  node" + _dot._attrs(PLOT_STYLES["node"]),
                 "  edge" + _dot._attrs(PLOT_STYLES["edge"]), *body]
        lines += [f"  {_dot._q(a)} -> {_dot._q(b)}" for a, b in self.edges]
        lines.append("}")
        return "\n".join(lines) + "\n"

    def expands(self, layer) -> bool:
        return self.flags["expand_nested"] and isinstance(layer, (Functional, Sequential)) and bool(layer.layers)

    def body(self, model, indent) -> list:
        """Boxes of ``model``'s layers and the edges between them (a lone box for a subclassed model)."""
        if isinstance(model, Sequential):
            layers = list(model.layers)
            spec = getattr(model, "_input_spec", None)
            shape_in = spec.shape if spec is not None else _model_input_shape(model)
            lines = []
            for layer in layers:
                shape_out = _output_shape(layer)
                if shape_out is None and self.flags["show_shapes"] and not self.expands(layer):
                    self.unknown.append((layer, model))
                lines += self.box(layer, indent, [shape_in], [shape_out], _sequential_dtypes(layer))
                shape_in = shape_out
            for a, b in zip(layers, layers[1:]):
                self.edge(self.exit(a, 0), self.entry(b, 0))
            return lines
        if isinstance(model, Functional):
            mine = {id(n) for n in model._nodes}
            lines = []
            for layer in model.layers:
                nodes = layer._inbound_nodes[:1] if isinstance(layer, InputLayer) else \
                    [n for n in layer._inbound_nodes if id(n) in mine]
                ins = [_shape_of([t.shape for t in n.inputs]) for n in nodes]
                outs = [_symbolic_shapes(n.outputs) for n in nodes]
                dtypes = [t.dtype for n in nodes for t in n.flat_outputs]
                lines += self.box(layer, indent, ins, outs, dtypes)
            for node in model._nodes:
                for i, t in enumerate(node.inputs):
                    if t._keras_history is None:
                        continue
                    src, k = t._keras_history
                    self.edge(self.exit(src.layer, k), self.entry(node.layer, i))
            return lines
        shape_out = _output_shape(model)
        if shape_out is None and self.flags["show_shapes"]:
            self.unknown.append((model, None))
        return self.box(model, indent, [None], [shape_out], _sequential_dtypes(model))

    def box(self, layer, indent, ins, outs, dtypes) -> list:
        if id(layer) in self.ids:
            return []
        if self.expands(layer):
            self.ids[id(layer)] = None
            self.clusters += 1
            title = f"{layer.name} ({type(layer).__name__})" if self.flags["show_layer_names"] else \
                type(layer).__name__
            head = [f"{indent}subgraph cluster_{self.clusters} {{",
                    f"{indent}  graph" + _dot._attrs(dict(PLOT_STYLES["cluster"], label=title))]
            return head + self.body(layer, indent + "  ") + [f"{indent}}}"]
        node_id = f"L{self.boxes}"
        self.boxes += 1
        self.ids[id(layer)] = node_id
        style = PLOT_STYLES["input"] if isinstance(layer, InputLayer) else \
            PLOT_STYLES["model"] if isinstance(layer, Model) else {}
        attrs = dict(style, label=_dot._label(self.label(layer, ins, outs, dtypes)),
                     tooltip=f"{layer.name} ({type(layer).__name__})")
        return [f"{indent}{_dot._q(node_id)}" + _dot._attrs(attrs)]

    def exit(self, layer, k):
        """The drawn layer where output ``k`` of ``layer`` comes from (inside an expanded model)."""
        while self.expands(layer):
            if isinstance(layer, Functional):
                node, k = layer.outputs[min(k, len(layer.outputs) - 1)]._keras_history
                layer = node.layer
            else:
                layer, k = layer.layers[-1], 0
        return layer

    def entry(self, layer, i):
        """The drawn layer that input ``i`` of ``layer`` goes to (an expanded model's Input or first layer)."""
        while self.expands(layer):
            if isinstance(layer, Functional):
                layer = layer.inputs[min(i, len(layer.inputs) - 1)]._keras_history[0].layer
            else:
                layer, i = layer.layers[0], 0
        return layer

    def edge(self, src, dst) -> None:
        key = (self.ids.get(id(src)), self.ids.get(id(dst)))
        if None not in key and key not in self._edge_set:
            self._edge_set.add(key)
            self.edges.append(key)

    # ----- labels --------------------------------------------------------------
    def label(self, layer, ins, outs, dtypes) -> list:
        f = self.flags
        kind = type(layer).__name__
        lines = [f"{layer.name} ({kind})" if f["show_layer_names"] else kind]
        activation = getattr(layer, "activation", None)
        if f["show_layer_activations"] and activation is not None:
            lines.append(f"Activation: {_activation_name(activation)}")
        if f["show_shapes"]:
            if not isinstance(layer, InputLayer):
                lines.append(f"Input shape: {_one(ins)}")
            lines.append(f"Output shape: {_one(outs)}")
        if f["show_dtype"]:
            lines.append(f"Output dtype: {', '.join(dict.fromkeys(dtypes)) or '?'}")
        if f["show_trainable"] and layer.weights:
            lines.append("Trainable" if layer.trainable else "Non-trainable")
        return lines


def _activation_name(fn) -> str:
    return str(getattr(fn, "name", None) or getattr(fn, "__name__", None) or fn)


def _shape_of(shapes):
    return shapes[0] if len(shapes) == 1 else shapes


def _format_shape(shape) -> str:
    if shape is None:
        return "?"
    if isinstance(shape, dict):
        return ", ".join(f"{k}: {_format_shape(v)}" for k, v in shape.items())
    return str(shape)


def _one(shapes) -> str:
    """The shape of a layer's calls: one text if every call agrees, ``multiple`` if they differ."""
    texts = list(dict.fromkeys(_format_shape(s) for s in shapes))
    return texts[0] if len(texts) == 1 else "multiple" if texts else "?"


def _output_shape(layer):
    try:
        return layer.output_shape
    except AttributeError:
        return None


def _model_input_shape(model):
    """The input shape of a Sequential with no ``Input``, from the first call that put it in a functional graph."""
    nodes = getattr(model, "_inbound_nodes", [])
    return _shape_of([t.shape for t in nodes[0].inputs]) if nodes and nodes[0].inputs else None


def _sequential_dtypes(layer) -> list:
    """Output dtypes of a layer outside a functional graph: its latest output's, else its own dtype."""
    out = getattr(layer, "_output", None)
    found = [t.dtype for t in flatten(out)[0] if isinstance(t, Tensor)] if out is not None else []
    return found or [layer.dtype]


def _unknown_shapes_message(model, unknown) -> str:
    """Why ``show_shapes=True`` cannot be drawn yet, and what to do: give a Sequential an input shape, or call."""
    names = ", ".join(layer.name for layer, _ in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
    container = next((c for _, c in unknown if c is not None), None)
    if container is not None:
        return (f"plot_model(show_shapes=True): the output shapes of {container.name}'s layers ({names}) are not "
                f"known yet: {container.name} has no input shape and has never been called. Give it one, then "
                "plot again: start it with an Input, adv.Sequential([adv.layers.Input(shape=(4,)), ...]), or "
                "call model.build((None, 4)) or model(x) on a batch once. Or plot without show_shapes.")
    return (f"plot_model(show_shapes=True): the output shape of {names} is not known yet: {model.name} has "
            "never been called. Call it on a batch once (model(x)), then plot again; or plot without show_shapes.")
