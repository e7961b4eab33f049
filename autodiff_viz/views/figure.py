"""The textbook figure of a model: which boxes open by default, what a layer's box says, what its edges say.

:mod:`~autodiff_viz.views.dot` folds a trace by meaning; this module gives the folded boxes what a course's
figure shows (CS231n's backprop notes, Keras' ``plot_model``, torchview):

* **the model open one level** (:func:`model_keys`): a model (``Sequential``, functional, subclassed) is a
  scope around its layers; drawn as one box it teaches nothing, so by default its layers are the boxes and a
  nested model or block opens on click. A loss stays one box.
* **a layer's box** (:func:`box_lines`): ``summary()``'s name ``dense (Dense)``, the output shape, and the
  output's value (forward) or ``ḡ`` (backward) — no op counts.
* **a layer's edges** (:func:`edge_lines`): the layer's backward formula, written once per layer class as
  ``backward_text`` next to the layer (``Dense``: ``ḡ_x = (ḡ_y ⊙ f′(z)) · Wᵀ``, ``ḡ_W = xᵀ · (ḡ_y ⊙ f′(z))``),
  with the learner's names put in for ``x`` and ``y``; a class without one gets :data:`GENERIC`. A loss states
  what it sends back to the prediction (``ḡ_logits = (softmax(logits) − onehot(y)) / N``), written once per loss
  in ``losses.BACKWARD_TEXT`` (:func:`loss_formula`); PyTorch's names reach both tables through :data:`ALIASES`.
* **weights** (:func:`drawn_alone`): a trainable variable read inside a folded layer is drawn as its own small
  node beside it, so ``ḡ_W`` — what the training step exists to compute — is in the picture; inside a folded
  block, a "× N" box, or when the budget needs it, the box keeps its weights and says how many, their
  parameters and ``‖ḡ‖`` of the largest (:func:`box_lines`).
* **real models** (:func:`model_keys`, :func:`made_of`, :func:`residual`): a model's backbone opens with it, a
  block says what it is made of and how ``ḡ`` splits at its residual connection.
"""
from __future__ import annotations

import math
import re

# PyTorch's (and other) layer classes whose backward formula is a Keras layer's: the same figure for a bridge.
ALIASES = {"Linear": "Dense", "Conv1d": "Conv1D", "Conv2d": "Conv2D", "MaxPool1d": "MaxPooling1D",
           "MaxPool2d": "MaxPooling2D", "AvgPool1d": "AveragePooling1D", "AvgPool2d": "AveragePooling2D",
           "AdaptiveAvgPool2d": "GlobalAveragePooling2D", "BatchNorm1d": "BatchNormalization",
           "BatchNorm2d": "BatchNormalization", "LayerNorm": "LayerNormalization", "RNN": "SimpleRNN",
           "MultiheadAttention": "MultiHeadAttention", "Tanh": "Activation", "Sigmoid": "Activation",
           "GELU": "Activation",
           # losses: PyTorch's functions and modules, Keras' classes -> the entry of losses.BACKWARD_TEXT
           "cross_entropy": "sparse_categorical_crossentropy", "CrossEntropyLoss": "sparse_categorical_crossentropy",
           "nll_loss": "nll", "NLLLoss": "nll", "mse_loss": "mean_squared_error", "MSELoss": "mean_squared_error",
           "l1_loss": "mean_absolute_error", "L1Loss": "mean_absolute_error", "huber_loss": "huber",
           "HuberLoss": "huber", "smooth_l1_loss": "smooth_l1", "SmoothL1Loss": "smooth_l1",
           "binary_cross_entropy": "binary_crossentropy (probabilities)",
           "BCELoss": "binary_crossentropy (probabilities)",
           "binary_cross_entropy_with_logits": "binary_crossentropy", "BCEWithLogitsLoss": "binary_crossentropy",
           "MeanSquaredError": "mean_squared_error", "MeanAbsoluteError": "mean_absolute_error", "Huber": "huber",
           "BinaryCrossentropy": "binary_crossentropy", "CategoricalCrossentropy": "categorical_crossentropy",
           "SparseCategoricalCrossentropy": "sparse_categorical_crossentropy",
           # TensorFlow's functions (tf.nn.…), each a box of its ops when called in a learner's step
           "sigmoid_cross_entropy_with_logits": "binary_crossentropy",
           "softmax_cross_entropy_with_logits": "categorical_crossentropy",
           "sparse_softmax_cross_entropy_with_logits": "sparse_categorical_crossentropy"}
# PyTorch's cross-entropy with class probabilities as its target (float labels): the categorical form
_SOFT_LABELS = {"cross_entropy": "categorical_crossentropy", "CrossEntropyLoss": "categorical_crossentropy"}
# A bridge's weight name -> the names of the entries of ``backward_text`` that state its gradient (a tuple inside:
# one weight that packs several, PyTorch's ``in_proj_weight`` = [W_q; W_k; W_v], gets each entry on its own line).
WEIGHT_ALIASES = {"weight": ("kernel", "gamma", "embeddings"), "bias": ("bias", "beta"),
                  "weight_ih": ("kernel",), "weight_hh": ("recurrent_kernel",),
                  "bias_ih": ("bias",), "bias_hh": ("bias",),
                  "in_proj_weight": (("query/kernel", "key/kernel", "value/kernel"),),
                  "in_proj_bias": (("query/bias", "key/bias", "value/bias"),),
                  "out_proj/weight": ("attention_output/kernel",), "out_proj/bias": ("attention_output/bias",)}
# A box without a formula (a loss, a scope, your function, a layer class without one): what the chain rule does.
GENERIC = "ḡ_x = ḡ_y back through {box}, op by op (chain rule)"
GENERIC_WEIGHT = "ḡ_W = Σ ḡ_y · ∂y/∂W over {box}'s uses of W"
# A block that adds its input back (``y = branch(x) + x``): the gradient splits at the addition and adds up at x.
RESIDUAL = "ḡ_x = ḡ through the branch + ḡ_y (skip)"
# N blocks in a row ("× N"): the chain rule runs back through each in turn.
REPEATED = "ḡ_x = ḡ_y back through the {n} {box} blocks in turn (chain rule)"


def shape_text(shape, dtype) -> str:
    """``(2, 10) float32``, or ``scalar float32``: how every box writes a shape."""
    return f"{'scalar' if not shape else tuple(shape)} {dtype}"


def layer_class(trace, title: str):
    """The class that made the scope ``title`` (``"dense_1"`` → ``Dense``), or None when unknown — and for a
    class the learner wrote (:attr:`Trace.own`): its name may be a library's, what it computes is its own."""
    name = getattr(trace, "kinds", {}).get(title)
    if not name or title in getattr(trace, "own", ()):
        return None
    from .. import layers
    from ..models import Model, Sequential
    known = {"Sequential": Sequential, "Functional": Model, "Model": Model}
    return known.get(name) or getattr(layers, ALIASES.get(name, name), None)


def _is_model(trace, h, g) -> bool:
    cls = layer_class(trace, g.title)
    from ..models import Model
    if isinstance(cls, type) and issubclass(cls, Model):
        return True
    name = getattr(trace, "kinds", {}).get(g.title)
    if cls is not None or name is None:
        return False
    # a class the package does not know (a subclassed model, a torch.nn.Module): a model when it holds layers,
    # counted through what opens with it (Segformer's backbone holds only the list of its stages; PoolFormerModel
    # only its encoder) and through its one part (SEW's feature encoder: a list of two different conv layers)
    parts = _parts(h, g.key)
    while len(parts) == 1:
        parts = _parts(h, parts[0].key)
    return len({c.base.rsplit("/", 1)[-1] for c in parts}) >= 2


def _parts(h, key, boxes=False) -> list:
    """The layers the group ``key`` is made of, seen through containers: a list the code only indexes
    (:attr:`Hierarchy.with_parent`, it opens with its parent), the one part of a group holding only that part
    (:attr:`Hierarchy.transparent`, it opens with the group) and — unless ``boxes``, which asks for the layers
    drawn as boxes when ``key`` opens — such a group itself."""
    kids = h.memo.get("layer kids")
    if kids is None:                  # asked for every candidate model: the map is made once per hierarchy
        kids = h.memo["layer kids"] = {}
        for c in h.groups.values():
            if c.what == "layer" and c.parent is not None:
                kids.setdefault(c.parent, []).append(c)
    out, todo = [], [key]
    while todo:
        parent = todo.pop()
        for c in kids.get(parent, ()):
            if kids.get(c.key) and (c.key in h.with_parent or parent in h.transparent
                                    or (not boxes and c.key in h.transparent)):
                todo.append(c.key)
            else:
                out.append(c)
    return out


def model_keys(trace, h, backbones=True) -> frozenset:
    """Keys of the outermost groups that are models, and of their backbones: drawn open by default.

    A model's layers are its boxes. A **backbone** is a model's child that is itself a model (it holds two or
    more layers), holds more than half of the model's ops, and runs before every other model among its siblings:
    the rest are heads reading its output. Hugging Face's ``BertForSequenceClassification`` wraps ``bert``
    (``BertModel``) beside ``dropout`` and ``classifier``, so the figure a paper draws shows ``bert``'s parts
    (embeddings, encoder, pooler) beside the classifier, not one box ``bert``. A backbone may sit in a container
    that opens with its model (``OPTForCausalLM`` calls ``self.model.decoder`` past ``OPTModel``). Models in a
    row in a list (stages) are the model's parts, none of them a backbone; so is a model run before one that
    reads data of its own (LED's encoder before its decoder, which reads the target tokens), however large. A
    model that another model runs before (BERT's or ALBERT's encoder after the embeddings, T5's decoder after its
    encoder) is one of the architecture's parts, drawn as its box.

    Several different models called by the learner's own step (keras.io's VAE calls ``vae.encoder`` then
    ``vae.decoder``; a GAN its generator and its discriminator) are the parts of the architecture the step
    writes: each is one box, as the paper's figure draws "encoder → z → decoder", and opens on a click. One
    model called several times (a siamese tower) still opens.
    """
    keys = {k for k, g in h.groups.items() if g.parent is None and g.what == "layer" and _is_model(trace, h, g)}
    if len({h.groups[k].base for k in keys}) > 1:
        keys = set()
    if not backbones:
        return frozenset(keys)
    size: dict = {}
    members: dict = {}
    for nid, path in h.paths.items():
        op = trace.node(nid).kind == "op"
        for k in path:
            members.setdefault(k, set()).add(nid)
            size[k] = size.get(k, 0) + op

    def own_data(m, g) -> bool:       # m reads data of its own (a decoder its tokens), not only g's output
        inside, first = members.get(m.key, set()), members.get(g.key, set())
        return any(s.kind not in ("variable", "state") and s.grad is None and s.id not in first
                   for nid in inside for s in (trace.node(e.src) for e in trace.edges_into(nid))
                   if s.id not in inside)
    todo = list(keys)
    while todo:
        parent = todo.pop()
        models = [g for g in _parts(h, parent, boxes=True) if _is_model(trace, h, g)]
        for g in models:
            if 2 * size.get(g.key, 0) > size.get(parent, 0) and g.key not in keys \
                    and not any(m.order < g.order for m in models) \
                    and not any(m.parent == g.parent != parent or own_data(m, g) for m in models if m is not g):
                keys.add(g.key)
                todo.append(g.key)
    return frozenset(keys)


def drawn_alone(node) -> bool:
    """A trainable variable (a layer's kernel, bias …) is drawn as its own node beside its layer's box."""
    return node.kind == "variable"


def _output(trace, lay, box):
    """The node a box hands on (the target, else the last member read outside the box)."""
    if trace.target in box.members:
        return trace.node(trace.target)
    inside = set(box.members)
    index = trace._edge_index()[2]
    out = None
    for m in box.members:
        if any(e.dst not in inside for e in index.get(m, ())):
            out = m
    return trace.node(out) if out is not None else None


def _name(trace, lay, node) -> str:
    """The learner's name of a tensor, else the name of the layer whose output it is."""
    if node.name or (node.title and node.title != node.op):
        return node.title
    if node.is_leaf:
        return "input"         # data fed to the model that the learner's code does not name
    box = lay.boxes.get(lay.owner.get(node.id))
    rep = _repeat_of(lay, box) if box is not None else None
    if rep is not None:        # what the last instance of the run hands on
        first = rep.groups.index(box.key) if box.key in rep.groups else 0
        return lay.hierarchy.groups[rep.groups[first + box.count - 1]].title
    if box is not None and box.kind != "node" and box.title:
        return learners_name(trace, box.title)
    return node.title[2:-2] if node.title.startswith("__") and node.title.endswith("__") else node.title


def _names(trace, lay, ids) -> list:
    """:func:`_name` of each node; values handed on by one folded box (the VAE's encoder gives ``z_mean`` and
    ``z_log_var``) that would all be called by the box are called by the layer inside it that made each."""
    names = [_name(trace, lay, trace.node(i)) for i in ids]
    if len(set(names)) == len(names):
        return names
    h = lay.hierarchy
    twice = {n for n in names if names.count(n) > 1}
    for k, i in enumerate(ids):
        inner = h.paths.get(i, ()) if h is not None and names[k] in twice else ()
        if inner:
            names[k] = h.groups[inner[-1]].title
    return names


def learners_name(trace, title: str) -> str:
    """``title`` of a group as the learner's code calls it: an outermost model by the variable that holds it
    (:attr:`Trace.roots`: ``decoder`` for the scope ``mlp_1``), any other group as it is."""
    return getattr(trace, "roots", {}).get(title, title)


def titled(trace, box) -> str:
    """A layer's box as ``summary()`` names it, ``dense_1 (Dense)``, when the trace knows the layer's class; an
    outermost model by the learner's variable for it (``decoder (MLP)``, :attr:`Trace.roots`); one run of a module
    called at several places with which call it is (``transformer.dropout (Dropout) · call 2 of 3``)."""
    cls = getattr(trace, "kinds", {}).get(box.title) if box.what != "block" else None   # a block is no layer,
    title = learners_name(trace, box.title) if box.kind != "repeat" else box.title
    call = f" · {box.call[2]} {box.call[0]} of {box.call[1]}" if getattr(box, "call", None) else ""
    return (f"{title} ({cls})" if cls else title) + call                 # even when named as its first (Conv_1)


def box_lines(trace, lay, box, view) -> list:
    """A folded box: its name and class, the output's shape, its value (forward) or ḡ (backward), then what it holds.

    A repeat says ``BertLayer × 12``, the instances it spans and ``‖ḡ‖`` of each instance's output (a bar and the
    numbers: where the gradient shrinks); one block applied again with its weights (ALBERT) says ``(shared
    weights)`` and how many times; a box that keeps weights inside says how many, their parameters and
    ``‖ḡ‖`` of the largest; state inside (running statistics) is named as carrying no gradient; a composite box
    (a block of layers) says what it is made of (:func:`made_of`).
    """
    head = titled(trace, box)
    rep = _repeat_of(lay, box)
    if box.kind == "loop":
        head += f" × {box.count} steps (rolled)"
    elif box.kind == "fold":
        head = f"⋯ folded middle of the tape ({len(box.members)} nodes)"
    elif rep is not None:
        head = f"{rep.title} × {box.count}" + (" (shared weights)" if rep.shared else "")
    out = _output(trace, lay, box)
    lines = [head]
    if rep is not None:
        first = rep.groups.index(box.key) if box.key in rep.groups else 0
        names = [lay.hierarchy.groups[k].title for k in rep.groups[first:first + box.count]]
        if rep.shared:           # one block applied again and again (ALBERT's layer): the same name each time
            lines.append(f"{names[0]}, applied {box.count} times")
        else:
            lines.append(names[0] + (f" … {names[-1]}" if len(names) > 1 else ""))
    if out is None:
        return lines
    lines.append("→ " + shape_text(out.shape, out.dtype))
    if view == "forward":
        lines.append(out.value.brief())
    elif out.grad is not None:
        lines.append(f"ḡ_{_name(trace, lay, out)} = " + out.grad.brief())
    if rep is not None and view != "forward":
        first = rep.groups.index(box.key) if box.key in rep.groups else 0
        norms = rep.grad_norms[first:first + box.count]
        shown = ", ".join("–" if v is None else f"{v:.3g}" for v in norms[:6]) + (" …" if len(norms) > 6 else "")
        lines.append(f"‖ḡ‖ each: {_spark(norms)} {shown}")
    lines.extend(_inside(trace, lay, box))
    if view != "forward" and box.kind in ("group", "repeat"):
        parts = made_of(trace, lay.hierarchy, rep.groups[0] if rep is not None else box.key)  # a repeat: of one
        if parts:
            lines.append("made of " + parts)
    return lines


def _spark(values) -> str:
    from .blocks import spark
    return spark(values)


def _repeat_of(lay, box):
    """The :class:`~.blocks.Repeat` a box draws (all of it or a run of it), or None."""
    h = getattr(lay, "hierarchy", None)
    if box.kind != "repeat" or h is None:
        return None
    if box.key in h.repeats:
        return h.repeats[box.key]
    g = h.groups.get(box.key)
    return h.repeats.get(g.repeat) if g is not None else None


def _inside(trace, lay, box) -> list:
    """What a folded box keeps inside: its weights (count, parameters, ‖ḡ‖ of the largest) and its state."""
    if box.kind == "node":
        return []
    weights = [trace.node(m) for m in box.members if trace.node(m).kind == "variable"]
    state = [trace.node(m) for m in box.members if trace.node(m).kind == "state"]
    lines = []
    if weights:
        size = sum(w.value.size for w in weights)
        big = max(weights, key=lambda w: w.value.size)
        g = f"; ‖ḡ‖ {big.grad.stats['norm']:.3g} of the largest ({_short(big.title)})" if big.grad is not None else ""
        lines.append(f"{len(weights)} weight{'s' if len(weights) > 1 else ''}, {size:,} parameters{g}")
    if state:
        names = ", ".join(dict.fromkeys(_short(n.title).rsplit(".", 1)[-1].rsplit("/", 1)[-1] for n in state))
        lines.append(f"state (no gradient): {names if len(names) <= 40 else names[:39] + '…'}")
    return lines


def _short(name: str) -> str:
    return name if len(name) <= 32 else "…" + name[-31:]


def made_of(trace, h, key) -> str | None:
    """What a composite box is made of, by its parts' short names (``conv1, bn1, relu, conv2, bn2``), and
    ``+ skip`` when its input also reaches an addition directly (a residual connection), or None for a leaf layer."""
    if h is None or key not in h.groups:
        return None
    while key in h.transparent:                   # encoder → encoder.layer (a ModuleList) → its layers
        key = next(g.key for g in h.groups.values() if g.parent == key)
    kids = [g for g in h.groups.values() if g.parent == key]
    with_parent = getattr(h, "with_parent", frozenset())
    while any(g.key in with_parent for g in kids):      # a list of like modules that never ran: through it
        kids = [c for g in kids for c in ([x for x in h.groups.values() if x.parent == g.key]
                                          if g.key in with_parent else [g])]
    kids = [g for g in kids if g.what != "constant"]     # the plumbing beside it (a loss's batch size): not a part
    if not kids:
        return None
    seen, names = set(), []
    for g in sorted(kids, key=lambda g: g.order):
        if g.repeat is not None:
            if g.repeat in seen:
                continue
            seen.add(g.repeat)
            names.append(f"{h.repeats[g.repeat].title} × {h.repeats[g.repeat].count}")
        else:
            names.append(short_name(g.title))
    text = ", ".join(names[:6]) + (" …" if len(names) > 6 else "")
    return text + (" (+ skip)" if residual(trace, h, key) else "")


def short_name(path: str) -> str:
    """A module's name without its parents: ``layer1.0.conv1`` → ``conv1``; a numbered list entry keeps its list,
    ``encoder.stages.0`` → ``stages.0``."""
    parts = path.split(".")
    return ".".join(parts[-2:]) if parts[-1].isdigit() and len(parts) > 1 else parts[-1]


_ADDS = {"add", "addv2", "iadd", "radd", "add_"}


def residual(trace, h, key, _memo=None) -> bool:
    """Whether group ``key`` adds its input back to what its branch made (``out = branch(x) + x``, or through a
    downsample): an addition inside it whose two inputs both depend on one tensor entering the box. Additions
    inside a part that is itself residual are that part's (a stage of residual blocks is not one itself)."""
    memo = {} if _memo is None else _memo
    if key in memo:
        return memo[key]
    memo[key] = False
    inside = [nid for nid, path in h.paths.items() if key in path]
    members = set(inside)
    for nid in inside:
        n = trace.node(nid)
        if n.kind != "op" or n.op.lower().strip("_") not in _ADDS:
            continue
        path = h.paths[nid]
        if any(residual(trace, h, k, memo) for k in path[path.index(key) + 1:]):
            continue                              # the addition of a residual part inside
        ins = [e.src for e in trace.edges_into(nid)]
        if len(ins) >= 2 and _entries(trace, members, ins[0]) & _entries(trace, members, ins[1]):
            memo[key] = True
            break
    return memo[key]


def _entries(trace, members, nid, limit=400) -> set:
    """The tensors from outside ``members`` that ``nid`` depends on through ops inside ``members``."""
    out, todo, seen = set(), [nid], set()
    while todo and len(seen) < limit:
        k = todo.pop()
        if k in seen:
            continue
        seen.add(k)
        n = trace.node(k)
        if k not in members or n.kind != "op":
            if n.kind not in ("variable", "state") and n.grad is not None:     # a tensor the gradient reaches
                out.add(k)
            continue
        todo.extend(e.src for e in trace.edges_into(k))
    return out


def formula(trace, box, role: str, hierarchy=None) -> str:
    """The backward formula of ``box`` for its input ``role`` (``"x"`` or a weight's name), as its class writes it.

    A PyTorch module drawn by its Keras twin (``Linear`` → ``Dense``) reads the class's ``"… (torch)"`` entry
    first where torch's layout differs: ``y = x·Wᵀ + b`` with ``W`` of shape (out, in), so ``ḡ_W = ḡ_yᵀ · x``.
    """
    cls = layer_class(trace, box.title) if box.kind in ("group", "loop") and box.what != "block" else None
    texts = getattr(cls, "backward_text", None) or {}
    torch = getattr(trace, "kinds", {}).get(box.title) in ALIASES

    def text(entry):
        return (torch and texts.get(entry + " (torch)")) or texts.get(entry)

    if role == "x":
        if text("x"):
            return text("x")
        if box.kind == "repeat":
            first = box.key
            if hierarchy is not None and first in hierarchy.repeats:
                first = hierarchy.repeats[first].groups[0]
            skip = hierarchy is not None and first in hierarchy.groups and residual(trace, hierarchy, first)
            if box.count == 1:
                return RESIDUAL if skip else GENERIC.format(box=box.title)
            return REPEATED.format(n=box.count, box=box.title) + ("; in each: " + RESIDUAL if skip else "")
        if box.kind == "group" and hierarchy is not None and residual(trace, hierarchy, box.key):
            return RESIDUAL
        return GENERIC.format(box=learners_name(trace, box.title) or "the folded middle")
    for name in weight_roles(role):
        for entry in (name,) + WEIGHT_ALIASES.get(name, ()):
            entries = entry if isinstance(entry, tuple) else (entry,)
            if all(e in texts for e in entries):
                return "; ".join(text(e) for e in entries)
    return GENERIC_WEIGHT.format(box=learners_name(trace, box.title) or "the folded middle")


def states_weight(trace, title: str, weight: str) -> bool:
    """Whether the layer ``title``'s class writes the gradient of its weight ``weight`` (``mha`` and
    ``mha/query/kernel``): then the weight is drawn beside the folded layer, its edge stating that formula."""
    texts = getattr(layer_class(trace, title), "backward_text", None) or {}
    return any(all(e in texts for e in (entry if isinstance(entry, tuple) else (entry,)))
               for name in weight_roles(weight) for entry in (name,) + WEIGHT_ALIASES.get(name, ()))


def is_loss(name: str) -> bool:
    """Whether ``name`` (a torch function or module, a Keras loss) is a loss with a text in ``losses.BACKWARD_TEXT``."""
    from ..losses import BACKWARD_TEXT
    return ALIASES.get(name, name) in BACKWARD_TEXT


def plain_loss(params: dict) -> bool:
    """Whether a recorded loss call is the plain loss its text states: no label smoothing, no class weights."""
    return (str(params.get("label_smoothing", 0.0)).strip("'") in ("0", "0.0")
            and all(str(params.get(k)) == "None" for k in ("weight", "pos_weight")))


def loss_formula(name: str, x: str, t: str, reduction="mean", soft_labels=False, probabilities=False):
    """What loss ``name`` sends back to its prediction ``x`` (labels ``t``), or None when no text fits.

    ``name`` is a loss as any side calls it (``"sparse_categorical_crossentropy"``, Keras'
    ``SparseCategoricalCrossentropy``, PyTorch's ``cross_entropy`` or ``nn.CrossEntropyLoss``), mapped through
    :data:`ALIASES` to its one text in ``losses.BACKWARD_TEXT``: ``ḡ_logits = (softmax(logits) − onehot(y)) / N``
    for the mean over the batch (N rows; n entries for a per-entry loss such as MSE), without the division for
    ``reduction="sum"``. ``soft_labels``: PyTorch's cross-entropy against class probabilities;
    ``probabilities``: the engine's loss computed from probabilities (it clipped them), not logits.
    ``reduction="none"``: the box's output is a loss per sample or per entry (``keras.losses.binary_crossentropy``
    called as a function), so what reaches ``x`` is the loss's factor times ``ḡ_y`` of each output:
    ``ḡ_x = ḡ_y ⊙ (σ(x) − t)``; ``"none / n"`` when each output may be the mean of ``n`` entries of ``x`` (a Keras
    loss function averages a per-entry loss over the last axis; a cross-entropy's row is a sum, not divided).
    ``reduction=None``: a loss no text states (label smoothing, class weights).
    """
    from ..losses import BACKWARD_TEXT
    key = ALIASES.get(name, name)
    if soft_labels:
        key = _SOFT_LABELS.get(name, key)
    if probabilities and not key.endswith("(probabilities)"):
        key += " (probabilities)"
    text = BACKWARD_TEXT.get(key)
    if text is None or reduction not in ("mean", "sum", "none", "none / n"):
        return None
    head, _, note = text.partition("  (")
    notes = [note[:-1]] if note else []
    if reduction.startswith("none"):
        per_entry = head.endswith(" / n")           # MSE, BCE: a mean over entries; cross-entropy sums a row
        lhs, _, rhs = head.replace(" / N", "").replace(" / n", "").partition(" = ")
        head = f"{lhs} = ḡ_y ⊙ {rhs}" if rhs.startswith("(") and rhs.endswith(")") else f"{lhs} = ḡ_y ⊙ ({rhs})"
        if reduction == "none / n" and per_entry:
            head += " / n"
            notes.append("n: the entries each output averages")
    elif reduction == "sum":
        head = head.replace(" / N", "").replace(" / n", "")
    else:
        notes.append("N: the batch size" if head.endswith(" / N") else "n: the number of entries")
    return (head + (f"  ({'; '.join(notes)})" if notes else "")).format(x=x, t=t)


def _loss_of(trace, lay, box):
    """``(name, reduction, probabilities)`` when ``box`` is a loss that :func:`loss_formula` knows, else None."""
    if box.kind != "group":
        return None
    names = (getattr(trace, "kinds", {}).get(box.title), re.sub(r"#\d+$", "", box.title or ""))
    if box.title in getattr(trace, "own", ()):       # a loss module of yours: its ops say what it computes
        return None
    name = next((n for n in names if n and is_loss(n)), None)
    if name is None:
        return None
    ops = [trace.node(m) for m in box.members if trace.node(m).kind == "op"]
    out = _output(trace, lay, box)
    called = next((n for n in ops if is_loss(n.op)), None)          # PyTorch's F.mse_loss … inside its module
    if called is not None and (not plain_loss(called.params or {}) or len(trace.edges_into(called.id)) > 2):
        return name, None, False               # label smoothing, class weights: no text states them
    if out is None or tuple(out.shape):
        return name, "none", any("clip" in n.op.lower() for n in ops)
    if called is not None:
        reduction = (called.params or {}).get("reduction", "'mean'").strip("'\"")
    else:          # the engine's (divide, mean) or TensorFlow's (DivNoNan, Mean): a mean divides; a sum does not
        reduction = "mean" if any("div" in n.op.lower() or n.op.lower() == "mean" for n in ops) else "sum"
    return name, reduction, any("clip" in n.op.lower() for n in ops)       # from probabilities: clipped first


def weight_roles(name: str) -> list:
    """The names a weight may go by in a ``backward_text``, most specific first.

    ``mha/query/kernel`` → ``query/kernel``, ``kernel``; PyTorch's ``attn.out_proj.weight`` → ``out_proj/weight``,
    ``weight``; ``lstm.weight_ih_l0`` → ``weight_ih`` (the layer index and ``_reverse`` of a stacked or
    bidirectional RNN do not change the formula).
    """
    parts = [p for p in re.split(r"[/.]", name) if p]
    parts[-1:] = [re.sub(r"_l\d+(_reverse)?$", "", parts[-1])] if parts else []
    return ["/".join(parts[k:]) for k in range(max(len(parts) - 2, 0), len(parts))]


def edge_lines(trace, lay, s, d, es, norm) -> list:
    """The backward label of the edges from folded box ``d`` back to ``s``: ``d``'s formula in the learner's names.

    ``ḡ_x`` becomes ``ḡ_<what crosses>`` (the learner's name, else the producing layer's name) and ``ḡ_y``
    ``ḡ_<d's output>``; a weight keeps its formula's ``ḡ_W``. ``norm`` is the norm line (or None).
    """
    box = lay.boxes[d]
    srcs = list(dict.fromkeys(e.src for e in es))
    first = trace.node(srcs[0])
    out = _output(trace, lay, box)
    y = _name(trace, lay, out) if out is not None else box.title
    loss = _loss_of(trace, lay, box) if first.kind != "variable" else None
    if loss is not None and first.grad is None and not any(e.contribution is not None for e in es):
        return ["no gradient: labels"]           # the loss's other input: its gradient goes to the prediction only
    if all(trace.node(i).grad is None and str(trace.node(i).dtype).startswith(("int", "uint", "bool"))
           for i in srcs):
        return [f"no gradient: {trace.node(srcs[0]).dtype} values"]     # token ids, indices, masks
    if loss is not None:
        text = _loss_edge(trace, lay, box, first, loss)
        if text is not None:
            return [text] + ([norm] if norm else [])
    if first.kind == "variable" and len(srcs) == 1:
        text = formula(trace, box, first.name or first.title).replace("ḡ_y", "ḡ_" + y)
    else:
        x = ", ".join(_names(trace, lay, srcs[:2])) + (" …" if len(srcs) > 2 else "")
        text = formula(trace, box, "x", lay.hierarchy).replace("ḡ_y", "ḡ_" + y)   # ḡ_y first: x may be called y
        for head in ("ḡ_xᵢ", "ḡ_x"):            # ḡ_xᵢ: a merge's formula for each of its inputs
            if text.startswith(head):
                text = "ḡ_" + x + text[len(head):]
                break
    text = text.replace("{box}", box.title or "")
    lines = [part for part in text.split("; ")]
    return lines + ([norm] if norm else [])


def _loss_edge(trace, lay, box, pred, loss):
    """A loss box's edge back to its prediction ``pred``: :func:`loss_formula` in the learner's names."""
    name, reduction, probabilities = loss
    inside = set(box.members)
    labels = next((trace.node(e.src) for m in box.members for e in trace.edges_into(m)
                   if e.src not in inside and e.src != pred.id and not e.differentiable), None)
    soft = labels is not None and str(labels.dtype).startswith(("float", "bfloat"))
    out = _output(trace, lay, box)
    if reduction == "none" and (out is None or math.prod(tuple(pred.shape)) != math.prod(tuple(out.shape))):
        reduction = "none / n"
    text = loss_formula(name, _name(trace, lay, pred), _name(trace, lay, labels) if labels is not None else "y",
                        reduction, soft, probabilities)
    return text.replace("ḡ_y", "ḡ_" + _name(trace, lay, out)) if text is not None and out is not None else text
