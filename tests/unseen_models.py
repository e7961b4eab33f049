"""What the tests of issue 42 on real architectures share (``tests/test_figure_unseen_architectures*.py``).

A recorded whole training step beside its plain twin (:class:`TorchCase`, :class:`KerasCase`, and
:func:`record_torch_case` / :func:`record_keras_case` for the usual case), how a figure is read (fold keys, group
titles, named parts, "× N" labels, the budget) and the checks every batch makes the same way (bit for bit, every
module / layer reachable by ``expanded=``, state without gradient, the labels' edge by role).

A test module imports what it uses: ``from unseen_models import keras, tf, torch, hf, group_key, …``. Importing
this module skips the test module when torch, transformers, TensorFlow or Keras is not usable. A fixture that
needs the learner's own variable names in the figure (``x_left``, ``y_digit``: ``rec.trace`` names tensors made
before the recording by its caller's variables) records and traces in its own frame and hands the traces to
:meth:`TorchCase.traced` / :meth:`KerasCase.traced`; the ``record_*`` helpers keep the names the fixtures used
(``inputs``, ``images``, ``labels``).
"""
from __future__ import annotations

import copy
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import re  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
try:
    import transformers as hf
except Exception as exc:   # noqa: BLE001 - a broken torchvision beside it raises RuntimeError, not ImportError
    pytest.skip(f"transformers is not usable ({type(exc).__name__}: {exc})", allow_module_level=True)
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from test_figure_real_models import _boxes, _labels, _readable  # noqa: E402

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.tf  # noqa: E402,F401
import autodiff_viz.torch  # noqa: E402,F401
from autodiff_viz.views import folding, render  # noqa: E402

__all__ = ["hf", "keras", "tf", "torch"]     # the frameworks imported here for the test modules

VALUES = 10 ** 8        # value_limit: keep every entry, so values compare bit for bit
STATE_LEGEND = "state (running statistics, seeds, counters): no gradient, no formula"
LOSS_CALLS = {"cross_entropy"}      # the loss the code calls by its name (``F.cross_entropy(logits, y)``)


# ---------------------------------------------------------------------------
# reading a figure (as tests/test_figure_real_models.py reads one)
# ---------------------------------------------------------------------------
def group_key(tr, title):
    """The fold key of the (first) group titled ``title``."""
    return next(k for k, g in folding.hierarchy(tr).groups.items() if g.title == title)


def opens_by_expanded(tr, key) -> bool:
    """``key``'s nodes are drawn open: none sits in a box that also holds nodes outside ``key``, and no box is
    ``key`` itself."""
    h = folding.hierarchy(tr)
    lay = folding.layout(tr, expanded={key})
    inside = {nid for nid, path in h.paths.items() if key in path}
    return all(set(lay.boxes[lay.owner[nid]].members) <= inside for nid in inside) and \
        not any(b.key == key for b in lay.boxes.values())


def group_titles(lay) -> list:
    """Each group box's title as drawn: with which call it is when one module ran at several places."""
    return [b.title + (f" · {b.call[2]} {b.call[0]} of {b.call[1]}" if b.call else "")
            for b in sorted(lay.boxes.values(), key=lambda b: b.order) if b.kind == "group"]


def op_named_nodes(tr, lay, loss_calls=LOSS_CALLS) -> list:
    """Op nodes drawn alone whose name is the library's op (``__setitem__``, ``mean``, ``AddV2``), not a name from
    the code or what they act on; ``loss_calls``: ops the code calls by that name (``F.cross_entropy``)."""
    out = []
    for b in lay.boxes.values():
        n = tr.node(b.id) if b.kind == "node" else None
        if n is not None and n.kind == "op" and (n.title == n.op or n.title.startswith("__")) and \
                n.title not in loss_calls:
            out.append(n.title)
    return out


def plumbing(tr, lay) -> list:
    """Ops drawn alone at the top of the default figure that carry no gradient and are not the labels' own
    preparation (BART's and GPT-Neo's shifting of ``labels``): masks, index arithmetic, casts."""
    out = []
    for b in sorted(lay.boxes.values(), key=lambda b: b.order):
        n = tr.node(b.id) if b.kind == "node" else None
        if n is not None and n.kind == "op" and n.grad is None and \
                not n.title.startswith(("labels", "y_digit", "y_parity")):
            out.append(n.title)
    return out


def named_parts(tr, lay) -> list:
    """The named parts the figure shows: each group box's title, and each instance of a "× N" box."""
    h = folding.hierarchy(tr)
    out = []
    for b in sorted(lay.boxes.values(), key=lambda b: b.order):
        if b.kind == "group":
            out.append(b.title)
        elif b.kind == "repeat":
            rep = h.repeats[b.key]
            first = rep.groups.index(b.key) if b.key in rep.groups else 0
            out.extend(h.groups[k].title for k in rep.groups[first:first + b.count])
    return out


def the_repeat(tr, title, count):
    """The repeat ``title × count``."""
    return next(r for r in folding.hierarchy(tr).repeats.values() if r.title == title and r.count == count)


def repeat_inside(tr, where, title, count):
    """The repeat ``title × count`` inside the group titled ``where`` (CLIP has one in each tower)."""
    inside = group_key(tr, where) + "/" if where else ""
    return next(r for r in folding.hierarchy(tr).repeats.values()
                if r.title == title and r.count == count and r.key.startswith(inside))


def each_norms(label: str) -> list:
    """The numbers after "‖ḡ‖ each:" on a "× N" box's label."""
    line = next(ln for ln in label.split("\n") if ln.startswith("‖ḡ‖ each:"))
    return re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]?\d+)?", line.split(":", 1)[1])


def each_bars(label: str) -> int:
    """The bars of the spark line after "‖ḡ‖ each:" (one per instance; the numbers after it stop at six)."""
    line = next(ln for ln in label.split("\n") if ln.startswith("‖ḡ‖ each:"))
    return len(re.match(r"\s*([▁▂▃▄▅▆▇█·]*)", line.split(":", 1)[1]).group(1))


def repeat_label(tr, head, **kw) -> str:
    return next(lab for lab in _labels(tr.to_dot("backward", **kw)) if lab.startswith(head))


def within_budget(lay) -> bool:
    """At most the budget of boxes and no "fold" box (a note that weights are kept inside their layers' boxes is
    how an opened figure stays within it)."""
    return len(lay.boxes) <= folding.NODE_BUDGET and not any(b.kind == "fold" for b in lay.boxes.values())


def fits_budget(lay) -> bool:
    """Within the budget, nothing folded into the "fold" box, no note about folding."""
    return len(lay.boxes) <= folding.NODE_BUDGET and not lay.notes and \
        not any(b.kind == "fold" for b in lay.boxes.values())


# ---------------------------------------------------------------------------
# PyTorch: a recorded training step beside its plain twin
# ---------------------------------------------------------------------------
class TorchCase:
    """A recorded step and its plain twin: traces (figure and bit-for-bit), gradients, weights before/after.

    ``TorchCase(kind, plain)`` copies ``plain`` (``.model``, the one recorded), makes an AdamW for each
    (``.opt_p``, ``.opt``), keeps the weights before the step and notes every module of ``plain`` whose forward
    runs until :meth:`ran_plain`; :meth:`traced` takes the recording and its two traces."""

    def __init__(self, kind, plain):
        self.kind, self.plain = kind, plain
        self.model = copy.deepcopy(plain)
        self._ran: dict = {}

        def ran(module, args, output):        # a hook returning a value would replace the output
            self._ran.setdefault(id(module), module)

        self._hooks = [m.register_forward_hook(ran) for m in plain.modules()]
        self.opt_p = torch.optim.AdamW(plain.parameters(), lr=1e-2)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-2)
        self.before = {n: p.detach().clone() for n, p in self.model.named_parameters()}

    def ran_plain(self, loss_p):
        """The plain step ran and gave ``loss_p``: stop noting modules."""
        self.loss_p = loss_p
        for hk in self._hooks:
            hk.remove()

    def traced(self, rec, loss, exact, tr):
        """The recorded step: ``rec``, its ``loss``, its trace with every value (``exact``) and the figure's
        (``tr``)."""
        self.rec, self.loss, self.exact, self.tr = rec, loss, exact, tr
        self.updates = [op.kind for op in rec.ops].count("update")
        plain = self.plain
        # every module whose forward ran, by all the names it has (T5's embedding is shared, encoder.embed_tokens …)
        self.called = [[n for n, m in plain.named_modules(remove_duplicate=False) if m is mod and n]
                       for mod in self._ran.values() if not isinstance(mod, torch.nn.Identity) and mod is not plain]
        self.ran_bn = [names[0] for names in self.called
                       if isinstance(plain.get_submodule(names[0]), torch.nn.modules.batchnorm._BatchNorm)]
        return self


def torch_step(model, opt, inputs, labels):
    """One step as a learner writes it (``labels=None``: the model makes its own, as CLIP's contrastive loss);
    dropout and drop-path draw the same masks in every run."""
    opt.zero_grad()
    torch.manual_seed(1)
    outputs = model(**inputs) if labels is None else model(**inputs, labels=labels)
    loss = outputs.loss
    loss.backward()
    opt.step()
    return loss


def record_torch_case(kind, plain, inputs, labels, step=torch_step) -> TorchCase:
    """``step(model, opt, inputs, labels) -> loss`` run on ``plain``, then recorded on its copy and traced."""
    c = TorchCase(kind, plain)
    c.ran_plain(step(plain, c.opt_p, inputs, labels))
    recorded = c.model
    with adv.torch.record() as rec:
        loss = step(recorded, c.opt, inputs, labels)
    return c.traced(rec, loss, rec.trace(loss, recorded, value_limit=VALUES), rec.trace(loss, recorded))


def assert_torch_step_bit_for_bit(c, buffers=True):
    """The recorded step's loss, ``.grad`` and updated weights are the plain step's (and its ``buffers``), one
    update record, and the trace shows the weights before the update with autograd's ḡ."""
    assert torch.equal(c.loss, c.loss_p)
    grads = {n: p.grad for n, p in c.plain.named_parameters() if p.grad is not None}
    assert len(grads) > 10
    plain = dict(c.plain.named_parameters())
    for n, p in c.model.named_parameters():
        assert (p.grad is None) == (n not in grads), n
        if p.grad is not None:
            assert torch.equal(p.grad, grads[n]), f"{c.kind}: .grad of {n} differs from the plain step's"
            assert torch.equal(p.detach(), plain[n].detach()), f"{c.kind}: {n} after the update"
    if buffers:
        for n, b in c.model.named_buffers():                 # BatchNorm's statistics move as in the plain step
            assert torch.equal(b, dict(c.plain.named_buffers())[n]), f"{c.kind}: buffer {n} after the step"
    assert c.updates == 1                               # opt.step(): one record
    shown = {n.name: n for n in c.exact.nodes if n.kind == "variable"}
    assert set(grads) <= set(shown), sorted(set(grads) - set(shown))[:5]
    for name, g in grads.items():
        assert np.array_equal(shown[name].value.data, c.before[name].numpy()), f"{name}: updated weights shown"
        assert np.array_equal(shown[name].grad.data, g.numpy()), f"{name}: the trace's ḡ is not autograd's"
    assert np.array_equal(c.exact.node(c.exact.target).value.data, c.loss_p.detach().numpy())


def assert_every_module_opens(c):
    """Every module whose forward ran is a group (by one of its names), and every group opens by ``expanded=``."""
    h = folding.hierarchy(c.tr)
    by_title: dict = {}
    for k, g in h.groups.items():
        by_title.setdefault(g.title, []).append(k)
    missing = [names for names in c.called if not any(n in by_title for n in names)]
    assert not missing, missing[:5]
    closed = [g.title for k, g in h.groups.items() if k not in h.transparent and not opens_by_expanded(c.tr, k)]
    assert not closed, closed[:5]


def assert_default_figure_is_named_parts(c, parts):
    """The default figure shows each of ``parts`` (a box, or an instance of a "× N" box), not the model's own
    class, each once, within the budget."""
    lay = folding.layout(c.tr)
    shown = named_parts(c.tr, lay)
    for part in parts:
        assert part in shown, (part, shown)
    titles = group_titles(lay)
    outer = type(c.model).__name__.lower()
    assert outer not in titles, titles
    assert fits_budget(lay), (len(lay.boxes), lay.notes)
    assert len(titles) == len(set(titles)), titles         # each part drawn once


def assert_keras_default_figure_is_the_papers_blocks(c, parts, repeats):
    """The default figure of a Keras model shows each of ``parts`` (a box, or an instance of a "× N" box) and each
    "× N" box of ``repeats``, each group once, within the budget and readable at the notebook's width."""
    lay, boxes = _boxes(c.tr)
    shown = named_parts(c.tr, lay)
    for part in parts:
        assert part in shown, (part, shown)
    for rep in repeats:
        assert rep in boxes, (rep, sorted(boxes))
    titles = group_titles(lay)
    assert len(titles) == len(set(titles)) and all(titles), titles
    assert fits_budget(lay), (len(lay.boxes), lay.notes)
    assert _readable(c.tr) >= render.MIN_LABEL_PX


def assert_buffers_are_state(c, used_buffer, legend=True):
    """Buffers are drawn as state without gradient; the ones the forward read (``used_buffer(name)``, and every
    BatchNorm's running statistics) are all there, none drawn as a weight; the legend says what state is."""
    buffers = dict(c.model.named_buffers())
    state = [n for n in c.tr.nodes if n.kind == "state"]
    assert state and {n.name for n in state} <= set(buffers)
    for n in state:
        assert n.grad is None and all(not e.differentiable for e in c.tr.edges_from(n.id))
    used = {k for k in buffers if used_buffer(k)}
    if c.ran_bn:                      # every BatchNorm that ran read its running statistics
        assert {f"{bn}.{s}" for bn in c.ran_bn for s in ("running_mean", "running_var")} <= used
    assert used and used <= {n.name for n in state}, sorted(used - {n.name for n in state})[:5]
    variables = {n.name for n in c.tr.nodes if n.kind == "variable"}
    assert not used & variables                                       # never drawn as a weight
    if legend:
        assert STATE_LEGEND in c.tr.to_dot("backward")


def assert_repeated_stage_is_one_box(tr, where, head, names):
    """With ``where`` opened (None: the default figure), ``head`` ("Class × N") is a box whose label names the
    instances ``names`` and gives ‖ḡ‖ of each, all of them > 0."""
    kw = {"expanded": {group_key(tr, where)}} if where else {}
    _, boxes = _boxes(tr, **kw)
    assert head in boxes, sorted(boxes)
    label = repeat_label(tr, head, **kw)
    assert names in label, label
    n = int(head.rsplit("× ", 1)[1])
    assert len(each_norms(label)) == n, label
    rep = folding.hierarchy(tr).repeats[boxes[head].key]
    assert all(v is not None and v > 0 for v in rep.grad_norms)


def assert_repeated_stage_opens_to_one_instance(tr, where, head):
    """With ``where`` (None: nothing) and the repeat ``head`` ("Class × N") opened, instance 0 is drawn open and
    the others one box ("Class × N−1", or the one other instance of a pair), within the budget and readable."""
    title, n = head.rsplit(" × ", 1)
    rep = repeat_inside(tr, where, title, int(n))
    opened = {rep.key} | ({group_key(tr, where)} if where else set())
    lay, boxes = _boxes(tr, expanded=opened)
    assert f"{title} × {int(n) - 1}" in boxes or int(n) == 2 and rep.groups[1] in {
        b.key for b in lay.boxes.values()}, sorted(boxes)           # instance 0 open, the others one box
    assert not any(b.key == rep.groups[0] for b in lay.boxes.values())
    assert within_budget(lay), (len(lay.boxes), lay.notes)
    assert _readable(tr, expanded=opened) >= render.MIN_LABEL_PX


def assert_torch_loss_edges_by_role(c, labels=("labels", "target")):
    """The labels' edge says "no gradient: labels"; each prediction's edge carries cross-entropy's formula in
    the code's names, against one of ``labels``."""
    texts = _labels(c.tr.to_dot("backward"))
    assert "no gradient: labels" in texts
    formulas = [lab for lab in texts if "softmax(" in lab]
    assert formulas
    for lab in formulas:
        assert re.match(rf"ḡ_(\S+) = \(softmax\(\1\) − onehot\(({'|'.join(labels)})", lab), lab


# ---------------------------------------------------------------------------
# Keras: a recorded training step beside its plain twin
# ---------------------------------------------------------------------------
def keras_step(model, opt, images, labels):
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    with tf.GradientTape() as tape:
        probs = model(images, training=True)
        loss = loss_fn(labels, probs)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss, grads


class KerasCase:
    """A recorded Keras step and its plain twin.

    ``KerasCase(kind, build, step, inputs, labels, optimizer)`` builds a model (``build()``, which seeds), runs
    ``step(model, opt, inputs, labels) -> (loss, grads)`` on it plainly, then builds the one to record (``.model``,
    its weights before the step, its optimizer ``.opt``); :meth:`traced` takes the recording and its traces."""

    def __init__(self, kind, build, step, inputs, labels, optimizer):
        self.kind = kind
        self.plain = build()
        self.loss_p, self.grads_p = step(self.plain, optimizer(), inputs, labels)
        self.model = build()
        self.before = [v.numpy().copy() for v in self.model.trainable_variables]
        self.opt = optimizer()

    def traced(self, rec, loss, grads, exact, tr):
        self.rec, self.loss, self.grads, self.exact, self.tr = rec, loss, grads, exact, tr
        return self


def adam():
    return keras.optimizers.Adam(1e-2)


def record_keras_case(kind, build, images, labels, step=keras_step, optimizer=adam) -> KerasCase:
    """The plain step on one ``build()``, the recorded step on another, and its two traces."""
    c = KerasCase(kind, build, step, images, labels, optimizer)
    model, opt = c.model, c.opt
    with adv.tf.record() as rec:
        loss, grads = step(model, opt, images, labels)
    return c.traced(rec, loss, grads, rec.trace(loss, model, value_limit=VALUES), rec.trace(loss, model))


def dense(g) -> np.ndarray:
    return tf.convert_to_tensor(g).numpy()


def assert_keras_step_bit_for_bit(c, state=True):
    """The recorded step's loss, gradients and updated weights are the plain step's (and its non-trainable
    ``state``), one update record, and the trace shows the weights before the update with TensorFlow's ḡ."""
    assert np.array_equal(c.loss.numpy(), c.loss_p.numpy())
    for v, g, gp in zip(c.model.trainable_variables, c.grads, c.grads_p):
        assert np.array_equal(dense(g), dense(gp)), f"{c.kind}: the gradient of {v.path} differs"
    assert [op.kind for op in c.rec.ops].count("update") == 1          # apply_gradients: one record
    for v, w in zip(c.model.trainable_variables, c.plain.trainable_variables):
        assert np.array_equal(v.numpy(), w.numpy()), f"{v.path} after the update"
    if state:
        for v, w in zip(c.model.non_trainable_variables, c.plain.non_trainable_variables):
            assert np.array_equal(v.numpy(), w.numpy()), f"{v.path} (state) after the step"
    shown = {n.name: n for n in c.exact.nodes if n.kind == "variable"}
    for v, w0, gp in zip(c.model.trainable_variables, c.before, c.grads_p):
        node = shown.get(v.path)
        assert node is not None, f"{v.path} is not in the trace"
        assert np.array_equal(node.value.data, w0), f"{v.path}: the trace shows the updated weights"
        assert np.array_equal(node.grad.data, dense(gp)), f"{v.path}: the trace's ḡ is not TensorFlow's"
    assert np.array_equal(c.exact.node(c.exact.target).value.data, c.loss_p.numpy())


def returns_its_input(layer) -> bool:
    """A layer that computes nothing (``Identity``, ``Activation('linear')`` — ConvNeXtTiny's ``…_identity``): no
    op, so no step of the backward pass to draw."""
    return type(layer).__name__ == "Identity" or \
        isinstance(layer, keras.layers.Activation) and layer.activation is keras.activations.linear


def assert_every_layer_opens(c):
    """Every layer that ran (not an input, not one that returns its input) is a group, and every group opens by
    ``expanded=``."""
    h = folding.hierarchy(c.tr)
    titles = {g.title for g in h.groups.values()}
    ran = [layer.name for layer in c.model.layers
           if not isinstance(layer, keras.layers.InputLayer) and not returns_its_input(layer)]
    assert not [n for n in ran if n not in titles]
    closed = [g.title for k, g in h.groups.items() if k not in h.transparent and not opens_by_expanded(c.tr, k)]
    assert not closed, closed[:5]


def assert_keras_state_without_gradient(c):
    """Every non-trainable variable is drawn as state (by its path) without gradient, none as a weight, and the
    legend says what state is."""
    state = {n.name: n for n in c.tr.nodes if n.kind == "state"}
    for n in state.values():
        assert n.grad is None and all(not e.differentiable for e in c.tr.edges_from(n.id))
    missing = [v.path for v in c.model.non_trainable_variables if v.path not in state]
    assert c.model.non_trainable_variables and not missing, missing[:5]
    variables = {n.name for n in c.tr.nodes if n.kind == "variable"}
    assert not variables & {v.path for v in c.model.non_trainable_variables}
    assert STATE_LEGEND in c.tr.to_dot("backward")


def assert_keras_labels_edge_by_role(c):
    """The labels' edge says "no gradient: labels"; the prediction's edge carries the loss formula."""
    labels = _labels(c.tr.to_dot("backward"))
    assert "no gradient: labels" in labels
    formula = next(lab for lab in labels if "softmax(" in lab)
    assert "onehot(labels)" in formula, formula
