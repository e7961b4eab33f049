"""The kinds of a dying or non-finite gradient: what an edge's op and its recorded values say happened there.

:mod:`autodiff_viz.diagnosis.flow` finds the edge; this module names its
kind from three things every trace has, whatever framework made it: the op
(``relu``, torch's ``clamp``, TensorFlow's ``SelectV2`` — one canonical name,
:func:`op_kind`), the forward values (the op's inputs and output) and the
gradients on the edge (``ḡ_y`` and ``ḡ_x``, whose ratio is the local factor
``∂y/∂x`` entry by entry for an elementwise op). Each kind has a reason a
learner can check against their numbers and one fix (:data:`FIXES`).
"""
from __future__ import annotations

import math

import numpy as np

DEAD_MARK = "gradient dies: "      # marks of an edge where the gradient dies start so (views draw them dashed)

_ALIASES = {
    "mul": "multiply", "realdiv": "divide", "div": "divide", "truediv": "divide", "divnonan": "divide",
    "selectv2": "where", "select": "where", "clamp": "clip", "clipbyvalue": "clip", "clamp_min": "clip",
    "clamp_max": "clip", "hardtanh": "clip", "relu6": "clip", "acos": "arccos", "asin": "arcsin", "pow": "power",
    "mm": "matmul", "bmm": "matmul", "batchmatmulv2": "matmul", "batchmatmulv3": "matmul", "linear": "matmul",
    "amax": "max", "amin": "min", "reducemax": "max", "maxpool": "max_pool", "max_pool1d": "max_pool",
    "max_pool2d": "max_pool", "max_pool3d": "max_pool", "maxpool3d": "max_pool", "adaptive_max_pool2d": "max_pool",
    "gatherv2": "take", "resourcegather": "take", "embedding": "take", "index_select": "take", "gather": "take",
    "linalg_vector_norm": "norm", "linalg_norm": "norm", "euclideannorm": "norm", "frobenius_norm": "norm",
    "gt": "greater", "lt": "less", "ge": "greater_equal", "le": "less_equal", "eq": "equal", "ne": "not_equal",
    "greaterequal": "greater_equal", "lessequal": "less_equal", "notequal": "not_equal", "sub": "subtract",
    "rsub": "subtract", "add": "add", "addv2": "add", "neg": "negative", "conv1d": "conv", "conv2d": "conv",
    "conv3d": "conv", "conv2dbackpropinput": "conv", "std_mean": "std", "var_mean": "var",
    "hardsigmoid": "hard_sigmoid",    "logsoftmax": "log_softmax", "reducelogsumexp": "logsumexp",
    "leakyrelu": "leaky_relu", "rint": "round", "fix": "trunc", "heaviside": "sign", "cast": "cast",
}
SATURATING = {"sigmoid", "tanh", "hard_sigmoid", "softsign", "erf", "log_sigmoid", "arctan", "gelu", "silu", "elu",
              "selu", "softplus"}     # elementwise: ḡ_x / ḡ_y is their derivative, entry by entry
PIECEWISE_CONSTANT = {"sign", "round", "floor", "ceil", "trunc", "floor_divide", "greater", "less",
                      "greater_equal", "less_equal", "equal", "not_equal", "argmax", "argmin", "cast", "mod"}
PRODUCTS = {"multiply", "matmul", "dot", "einsum", "conv", "tensordot", "outer", "inner", "bias_add"}
ROUTING = {"stack", "concatenate", "cat", "getitem", "split", "take", "take_along_axis", "pad", "tile", "repeat",
           "reshape", "view", "transpose", "permute", "expand_dims", "squeeze", "broadcast_to", "flatten",
           "unsqueeze", "identity", "stridedslice", "slice", "pack", "concatv2", "unstack", "unpack"}
ROOTS = {"sqrt", "rsqrt", "cbrt", "norm", "power", "std", "hypot"}

FIXES = {
    "dead_relu": "use LeakyReLU / ELU (a small slope for x < 0), a He (kaiming) initialisation with zero biases, a "
                 "smaller learning rate (a large step can push every unit negative), and normalised inputs.",
    "flat_loss": "nothing to fix if the model is right on every example (the loss is at its minimum). If that is "
                 "not expected, check the labels' sign and scale (a hinge wants ±1) or use a loss that keeps a "
                 "slope, e.g. the logistic loss softplus(−y·f).",
    "saturated": "normalise the inputs (zero mean, unit variance), use a smaller initialisation (Glorot/Xavier) "
                 "or BatchNormalization before the activation, lower the learning rate; for a classifier's "
                 "output use a loss with from_logits=True instead of sigmoid/softmax then log.",
    "branch_never_selected": "check the condition of the where (is the mask the one you meant?); if the branch "
                             "is meant to be unused for this batch, the zero is correct.",
    "clipped_probability": "give the loss the logits, not probabilities: from_logits=True (Keras), "
                           "BCEWithLogitsLoss / cross_entropy on logits (PyTorch), or log_sigmoid / log_softmax; "
                           "a logit never saturates to exactly 0 or 1 as its sigmoid or softmax does.",
    "clipped": "widen the bounds or rescale the input so it falls inside them; for a gradient at the bound itself, "
               "clamp / clip_by_value (derivative 1 there); for one through the bound, a smooth stand-in "
               "(tanh-scaled) or a straight-through estimator x + stop_gradient(clip(x) − x).",
    "never_picked": "if you need a gradient for every input, use a smooth maximum (logsumexp, or softmax "
                    "weights) instead of max; otherwise the zero is correct: max sends ḡ to the winner only.",
    "zero_almost_everywhere": "use a differentiable stand-in: softmax probabilities instead of argmax/one-hot, "
                              "sigmoid(k·x) instead of a step or sign, or a straight-through estimator "
                              "x + stop_gradient(round(x) − x).",
    "zero_operand": "the other factor is all zeros: initialise weights with random values (all-zero weights "
                    "give zero gradients to the layer below), or check the mask / constant it is multiplied by.",
    "constant_sum": "differentiate something that depends on how the probabilities split: the log-probability "
                    "of the right class (a cross-entropy), or one entry (output_gradients / a one-hot seed), "
                    "not their sum.",
    "zero_upstream": "pass a non-zero upstream gradient (output_gradients / gradient=): ones for the gradient "
                     "of the sum.",
    "zero_derivative": "this op's derivative is 0 at these inputs; change its input range or use a "
                       "differentiable stand-in.",
    "cancelled_shift": "nothing is broken: the term is redundant where it is added (bias=False / use_bias=False "
                       "drops the parameter), or add it after the operation that removes shifts.",
    "stationary_point": "nothing, if these values are where training should end (a minimum); if they are a "
                        "starting point (weights initialised to exactly 0), start elsewhere: a random "
                        "initialisation (adv.initializers.GlorotUniform) moves them off the flat point.",
    "near_uniform_softmax": "usually nothing: attention starts near-uniform while the query and key projections "
                            "are small (at initialisation), and their gradients grow as the scores spread. If it "
                            "stays so, check the scores' scale (divide by √d once) and the q/k initialisation, "
                            "or warm the learning rate up.",
    "small_factor": "if the weights are meant to be small (an initialisation such as std 0.02), the gradient "
                    "below them is small too, and an optimizer that normalises its steps (Adam) copes; otherwise "
                    "use a variance-preserving initialisation (He / Glorot) or a residual connection around it.",
    "shrinks_at_op": "look at this op's inputs: its local derivative is small at these values; move them into "
                     "its sensitive range (normalise them) or route the gradient around the op (a residual).",
    "vanishing_depth": "use ReLU-family activations, a variance-preserving initialisation (He / Glorot), "
                       "residual connections or normalisation layers; for recurrent nets, LSTM/GRU cells and "
                       "shorter sequences (truncated backprop).",
    "unselected_where_branch": "the double-where: make the input safe before the op as well as after it, "
                               "x_safe = where(cond, x, 1); y = where(cond, f(x_safe), 0), so the unselected "
                               "entries never see the point where f′ is infinite.",
    "zero_times_inf": "avoid multiplying by an infinite value: mask the input before the op (where(mask, x, "
                      "safe)) rather than the output, or keep the value finite (clamp, epsilon).",
    "sqrt_at_zero": "put an epsilon inside the root: sqrt(x + 1e-12) (for a norm, sqrt(sum(x²) + 1e-12)), or "
                    "guard it with the double-where.",
    "log_of_zero": "clamp before the log, log(clip(x, 1e-7, None)), or compute in log space: log_softmax / "
                   "logsumexp, or a loss with from_logits=True.",
    "exp_overflow": "subtract the maximum before exp (softmax(x − max x)), or use logsumexp / log_softmax / "
                    "softplus, which never overflow.",
    "acos_at_one": "clip the argument into the open interval: arccos(clip(x, −1 + 1e-7, 1 − 1e-7)).",
    "division_by_zero": "add an epsilon to the denominator, (x − mean) / (std + 1e-8), or mask the entries "
                        "where it is 0.",
    "domain_error": "keep the input inside the op's domain (clamp it), or check the values that reach it.",
    "nonfinite_derivative": "look at the op's inputs printed above: its derivative is infinite there; move "
                            "them away from that point (epsilon, clamp).",
    "fully_masked_row": "make sure no row is masked entirely (keep one key unmasked, or drop the fully padded "
                        "examples), or mask with a large finite negative number instead of −inf, and zero those "
                        "rows' outputs afterwards.",
    "nonfinite_forward": "find where the forward pass first holds nan/inf (adv.detect_anomaly() names the op).",
}


def op_kind(op: str) -> str:
    """The canonical (rule-table) name of a recorded op, whatever framework spelled it: ``"SelectV2"`` →
    ``"where"``, ``"__mul__"`` → ``"multiply"``, ``"clamp"`` → ``"clip"``, ``"relu_"`` → ``"relu"``."""
    s = (op or "").strip("_").lower()
    s = s[1:] if s.startswith("r") and s[1:] in ("mul", "truediv", "sub", "pow", "matmul", "div") else s
    return _ALIASES.get(s, s)


def fix_of(kind: str) -> str | None:
    return FIXES.get(kind)


def _data(s):
    if s is None or s.data is None or s.data.dtype.kind not in "fiub":
        return None
    return np.asarray(s.data, dtype=np.float64)


def _num(v: float) -> str:
    return f"{v:.3g}" if math.isfinite(v) else str(v)


def describe(s) -> str:
    """A value in one phrase: ``3 entries, min -0.5, max 2`` (statistics; counts of nan/inf when there are)."""
    d = _data(s)
    if d is None:
        st = s.stats
        return f"{s.size} entries, min {_num(st['min'])}, max {_num(st['max'])}"
    bad = f", {int(np.isnan(d).sum())} nan, {int(np.isinf(d).sum())} inf" if not np.isfinite(d).all() else ""
    fin = d[np.isfinite(d)]
    rng = f", min {_num(fin.min())}, max {_num(fin.max())}" if fin.size else ""
    return f"{d.size} entr{'y' if d.size == 1 else 'ies'}{rng}{bad}"


class _Edge:
    """One edge's op, names and values, read once: what every test below looks at."""

    def __init__(self, trace, e):
        self.trace, self.e = trace, e
        self.src, self.dst = trace.node(e.src), trace.node(e.dst)
        self.kind = op_kind(self.dst.op)
        self.x, self.y = _data(self.src.value), _data(self.dst.value)
        self.u, self.c = _data(e.upstream), _data(e.contribution)
        self.others = [(i, trace.node(i.src)) for i in trace.edges_into(e.dst) if i.id != e.id]
        self.name = self.dst.describe()
        self.line = f" at {self.dst.location}" if self.dst.location is not None else ""

    def same_shape(self, a) -> bool:
        return a is not None and self.x is not None and a.shape == self.x.shape

    def other(self, index):
        return next((n for i, n in self.others if i.input_index == index), None)

    def other_values(self):
        return [(i, n, _data(n.value)) for i, n in self.others]


def _n(k: int, one: str, many: str) -> str:
    return f"{k} {one if k == 1 else many}"


def _pct(k: int, n: int) -> str:
    return "all" if k == n else f"{100 * k / max(n, 1):.0f}% of the"


# ---------------------------------------------------------------------------
# Zero (or tiny): why did ḡ_x die on this edge
# ---------------------------------------------------------------------------
def classify_zero(trace, e, mask=None, tiny: bool = False):
    """``(kind, why, mark)`` of the edge ``e`` where ḡ dies (``mask``: the entries of ``x`` where it does; None:
    wherever ``ḡ_y ≠ 0``; ``tiny``: dies to below ``flow.TINY`` rather than to 0)."""
    ed = _Edge(trace, e)
    if ed.kind in ROUTING and not tiny:
        deeper = _routed(trace, ed)
        if deeper is not None:
            return deeper
    if mask is None and ed.same_shape(ed.u) and ed.same_shape(ed.c):
        mask = (ed.u != 0) & ((np.abs(ed.c) < 1e-6 * np.abs(ed.u)) if tiny else (ed.c == 0))
    for test in (_flat_loss, _relu, _where, _clip, _saturated, _softmax_sum, _picked, _piecewise, _zero_operand,
                 _stationary):
        found = test(ed, mask, tiny)
        if found is not None:
            return found
    n = int(mask.sum()) if mask is not None else None
    where = f" on {n} entries where ḡ is not" if n is not None else " where ḡ is not"
    return ("zero_derivative", f"The local derivative of {ed.dst.op} ({ed.e.factor or 'not shown'}) is "
            f"{'below 1e-6' if tiny else '0'}{where}.", f"{DEAD_MARK}∂y/∂{ed.e.input_name} = 0")


def _routed(trace, ed):
    """A zero through a routing op (stack, slice, reshape …): the zeros came from the op that read its output.

    ``ḡ_x = 0`` for ``x`` inside ``stack([x, …])`` only says the entries of ḡ_y
    that belong to ``x`` were 0; the op that made them so is the consumer of
    the stack whose contribution is partly 0 (a ``max`` picking another entry).
    """
    for out in trace.edges_from(ed.dst.id):
        u, c = _data(out.upstream), _data(out.contribution)
        if u is None or c is None or u.shape != c.shape:
            continue
        mask = (u != 0) & (c == 0)
        if mask.any():
            return classify_zero(trace, out, mask)
    return None


def _flat_loss(ed, mask, tiny):
    if tiny or ed.kind not in ("relu", "maximum", "clip") or ed.y is None:
        return None
    tgt = _data(ed.trace.node(ed.trace.target).value)
    if tgt is None or tgt.size != 1 or float(tgt.ravel()[0]) != 0.0 or (ed.y != 0).any() \
            or not _is_the_loss(ed.trace, ed.dst.id):
        return None
    return ("flat_loss", f"The loss is flat at its minimum: max(0, …) in {ed.name}{ed.line} is 0 on all "
            f"{ed.y.size} entries (every margin is met), so the loss is 0 and so is its slope.",
            f"{DEAD_MARK}max(0, ·)′ = 0: loss at its minimum")


_TO_LOSS = {"sum", "mean", "add", "subtract", "negative", "divide", "multiply", "reshape", "squeeze",
            "expand_dims", "identity"}


def _is_the_loss(trace, nid) -> bool:
    """Whether ``nid`` reaches the target only through sums, means and constant scalings: it *is* the loss
    (``mean(max(0, 1 − y·f))``), not a hidden layer whose zeros a later layer turns into a loss of 0."""
    while nid != trace.target:
        outs = trace.edges_from(nid)
        if len(outs) != 1:
            return False
        dst = trace.node(outs[0].dst)
        if op_kind(dst.op) not in _TO_LOSS or any(
                trace.node(i.src).kind == "op" and i.src != nid for i in trace.edges_into(dst.id)):
            return False
        nid = dst.id
    return True


def _relu_like(ed) -> bool:
    if ed.kind == "relu":
        return True
    if ed.kind == "maximum":
        vals = [d for _, _, d in ed.other_values()]
        return bool(vals) and vals[0] is not None and not (vals[0] != 0).any()
    return False


def _relu_input(ed):
    """A ReLU's input as far as its output tells it, when only the output was kept whole (autograd saves a
    ReLU's output; ``record(exact_values=False)`` lets the input go, and a trace summarises a large one): where
    ``y > 0`` the input was ``y``; where ``y = 0`` it was ``≤ 0``, and its largest value there is at most the
    kept maximum of the input (exactly it when every entry is ``≤ 0``). Enough for which units are dead."""
    y = ed.y
    stats = getattr(ed.src.value, "stats", None) or {}
    top = stats.get("max")
    if y is None or top is None or not math.isfinite(top):
        return None
    return np.where(y > 0, y, min(float(top), 0.0))


def _relu(ed, mask, tiny):
    if tiny or not _relu_like(ed):
        return None
    x = ed.x if ed.x is not None else _relu_input(ed)
    if x is None:
        return None
    dead = mask if mask is not None and mask.shape == x.shape else np.ones(x.shape, bool)
    units = x.shape[-1] if x.ndim >= 2 else x.size
    per_unit = (x <= 0).reshape(-1, units).all(axis=0) if x.ndim >= 2 else (x <= 0)
    k = int(per_unit.sum())
    biggest = float(x[dead].max()) if dead.any() else float(x.max())
    who = f"units of {ed.name}{ed.line}"
    if k == units:
        why = (f"All {units} {who} are inactive for this batch: their inputs are ≤ 0 (the largest is "
               f"{_num(biggest)}), and relu′ = 0 there, so no gradient reaches anything before it (a dead ReLU).")
        return "dead_relu", why, f"{DEAD_MARK}relu′ = 0 on all entries"
    idx = ", ".join(str(int(i)) for i in np.flatnonzero(per_unit)[:10]) + (" …" if k > 10 else "")
    why = (f"{k} of the {units} {who} are inactive on every example of this batch (units {idx}): their inputs "
           "are ≤ 0, relu′ = 0 there, so the weights feeding them get no gradient (dead ReLUs).") if k else \
        (f"relu′ = 0 on {int(dead.sum())} of {x.size} entries of {ed.name}{ed.line} (inputs ≤ 0).")
    return "dead_relu", why, f"{DEAD_MARK}relu′ = 0 on {k} of {units} units"


def _where(ed, mask, tiny):
    if ed.kind != "where" or ed.e.input_index == 0:
        return None
    cond = ed.other(0)
    cv = _data(cond.value) if cond is not None else None
    if cv is None:
        return None
    chosen = cv != 0 if ed.e.input_index == 1 else cv == 0
    if chosen.any() and mask is None:
        return None
    branch = "first (where the condition is True)" if ed.e.input_index == 1 else "second (where it is False)"
    never = "False" if ed.e.input_index == 1 else "True"
    picked = int(chosen.sum())
    why = (f"The where{ed.line} never selects this branch, the {branch}: its condition is {never} on all "
           f"{cv.size} entries, so the branch gets ḡ = 0." if not picked else
           f"The where{ed.line} selects this branch, the {branch}, on only {picked} of {cv.size} entries: "
           "the others get ḡ = 0.")
    return "branch_never_selected", why, f"{DEAD_MARK}[cond] = 0 on {'all' if not picked else 'some'} entries"


def _bound(ed) -> bool:
    """A clip, or a maximum/minimum against a constant (TensorFlow's clip_by_value is Minimum(Maximum(x, lo), hi))."""
    if ed.kind == "clip":
        return ed.e.input_index == 0
    other = ed.other(1 - ed.e.input_index) if ed.kind in ("maximum", "minimum") else None
    return other is not None and other.kind == "constant"


def _clip(ed, mask, tiny):
    if not _bound(ed) or ed.x is None or ed.y is None or ed.x.shape != ed.y.shape:
        return None
    at = ed.x != ed.y
    dead = mask if mask is not None and mask.shape == at.shape else np.ones(at.shape, bool)
    on = np.zeros(at.shape, bool)
    if ed.kind == "clip" and ed.y.size:     # exactly on a bound: hardtanh counts x ≤ min as clipped, clamp not
        on = dead & ~at & ((ed.x <= ed.y.min()) | (ed.x >= ed.y.max()))
    if not (at | on)[dead].any():
        return None
    bounds = sorted({float(v) for v in np.unique(ed.y[dead & (at | on)])[:3]})
    k, n = int((dead & (at | on)).sum()), ed.x.size
    exact = (f" {_n(int(on.sum()), 'entry sits', 'entries sit')} exactly on a bound, where {ed.dst.op} takes "
             "the derivative to be 0 (torch.clamp / tf.clip_by_value take it to be 1 there)") if on.any() else ""
    why = (f"The clip{ed.line} is at its bound on {_pct(k, n)} {n} entries: x lies outside the "
           f"interval or on its edge (x from {_num(float(ed.x.min()))} to {_num(float(ed.x.max()))}, clipped to "
           f"{', '.join(_num(b) for b in bounds)}), and a clipped entry's derivative is 0.{exact}")
    mark = f"{DEAD_MARK}clip′ = 0: at its bound on {'all' if k == n else k} entries"
    if 0 <= ed.y.min() and ed.y.max() <= 1 and _feeds_log(ed.trace, ed.dst.id):
        return ("clipped_probability", why + " The clip keeps a probability away from 0 and 1 before a log (a "
                "cross-entropy computed from probabilities): the probability it gets is saturated — exactly 0 or "
                "1 in floating point — so the loss is flat there.", mark)
    return "clipped", why, mark


def _feeds_log(trace, nid, hops: int = 3) -> bool:
    """Whether the value of ``nid`` reaches a log within ``hops`` ops (``log(clip(p))``, ``log(1 − clip(p))``,
    through the other half of a clip written as minimum then maximum)."""
    return any(op_kind(n.op) in ("log", "log1p", "log2", "log10", "xlogy") for _, n in _after(trace, nid, hops))


def _saturated(ed, mask, tiny):
    if ed.kind not in SATURATING or ed.x is None or not (ed.same_shape(ed.u) and ed.same_shape(ed.c)):
        return None
    live = ed.u != 0
    if not live.any():
        return None
    f = np.zeros_like(ed.u)
    f[live] = np.abs(ed.c[live] / ed.u[live])
    sat = live & (f < 1e-6)
    if not sat.any():
        return None
    p = 100 * sat.sum() / live.sum()
    t = math.floor(float(np.abs(ed.x[sat]).min()) * 10) / 10
    op = ed.dst.op
    return ("saturated", f"{op} is saturated{ed.line}: |x| > {_num(t)} on {p:.0f}% of entries, where "
            f"{op}′ < 1e-6 (its output is pinned at its limits), so the gradient through it "
            f"{'all but ' if tiny else ''}vanishes.", f"{DEAD_MARK}{op}′ < 1e-6 on {p:.0f}% of entries")


def _softmax_sum(ed, mask, tiny):
    """softmax's VJP is y ⊙ (ḡ − Σ y ḡ): 0 exactly when ḡ is the same for every class, as for the sum of the
    probabilities (a non-scalar target is differentiated as its sum), which is always 1."""
    if ed.kind != "softmax" or ed.u is None or ed.u.ndim == 0:
        return None
    if not np.allclose(ed.u, ed.u[..., :1]):
        return None
    return ("constant_sum", f"The softmax{ed.line} gets the same ḡ for every class: what is differentiated is the "
            "sum of its probabilities (a non-scalar target counts as its sum), and that is always 1, whatever "
            "the input, so its gradient is 0.", f"{DEAD_MARK}Σ softmax = 1: constant")


def _picked(ed, mask, tiny):
    if ed.kind in ("maximum", "minimum"):
        word = "larger" if ed.kind == "maximum" else "smaller"
        other = ed.other(1 - ed.e.input_index)
        return ("never_picked", f"{ed.dst.op}{ed.line} never picks this input: the other one "
                f"({other.describe() if other else 'its other input'}) is {word} on every entry where ḡ is not 0, "
                f"so ∂y/∂{ed.e.input_name} = 0 there.", f"{DEAD_MARK}never picked by {ed.dst.op}")
    if ed.kind in ("max", "min", "max_pool", "reduce_max", "reduce_min"):
        return ("never_picked", f"{ed.dst.op}{ed.line} sends ḡ only to the entry it picked (the largest of each "
                "window or axis); the entries of this input are never picked, so their gradient is 0.",
                f"{DEAD_MARK}never picked by {ed.dst.op}")
    return None


def _piecewise(ed, mask, tiny):
    if ed.kind not in PIECEWISE_CONSTANT:
        return None
    return ("zero_almost_everywhere", f"{ed.dst.op}{ed.line} is piecewise constant: its derivative is 0 almost "
            "everywhere (the framework defines it as 0, and between the jumps it is), so nothing flows back "
            "through it.", f"{DEAD_MARK}{ed.dst.op}′ = 0 almost everywhere")


def _zero_operand(ed, mask, tiny):
    if ed.kind not in PRODUCTS or tiny:
        return None
    for i, n, d in ed.other_values():
        if d is not None and d.size and not (d != 0).any() and i.input_index != ed.e.input_index:
            return ("zero_operand", f"{ed.src.describe()} is multiplied{ed.line} by {n.describe()}, which is zero "
                    f"on every entry: ∂(a·b)/∂a = b = 0, so the gradient dies at this product.",
                    f"{DEAD_MARK}multiplied by 0")
    return None


#: smooth ops and where their derivative is 0: the input's entries that sit exactly on a flat point
_FLAT_AT = {
    "square": (lambda a: a == 0, "∂(a²)/∂a = 2a"),
    "cosh": (lambda a: a == 0, "∂cosh(a)/∂a = sinh(a)"),
    "cos": (lambda a: np.isclose(np.sin(a), 0, atol=1e-12), "∂cos(a)/∂a = −sin(a)"),
    "sin": (lambda a: np.isclose(np.cos(a), 0, atol=1e-12), "∂sin(a)/∂a = cos(a)"),
}


def _stationary(ed, mask, tiny):
    """A smooth op whose input sits exactly where its slope is 0 — the bottom of ``a²`` at ``a = 0`` (also
    ``a ** b`` with ``b > 1``, and ``a · a``), a crest of ``cos``: a stationary point, where 0 is the right
    gradient. Not a fault of the op: the fix depends on whether the values are an end (a minimum) or a start."""
    if tiny or ed.x is None:
        return None
    test, formula = _FLAT_AT.get(ed.kind, (None, None))
    if ed.kind == "power":
        b = next((d for i, _, d in ed.other_values() if i.input_index != ed.e.input_index), None)
        if ed.e.input_index != 0 or b is None or not (b > 1).all():
            return None
        test, formula = (lambda a: a == 0), "∂(aᵇ)/∂a = b·aᵇ⁻¹"
    elif ed.kind == "multiply" and any(n.id == ed.src.id for _, n in ed.others):
        test, formula = (lambda a: a == 0), "∂(a·a)/∂a = 2a"
    if test is None:
        return None
    flat = np.asarray(test(ed.x), dtype=bool)
    dead = mask if mask is not None and mask.shape == flat.shape else np.ones_like(flat)
    if not dead.any() or not flat[dead].all():
        return None
    k = int(dead.sum())
    return ("stationary_point", f"{ed.name}{ed.line} is a smooth function whose input sits exactly on a flat point "
            f"on {_n(k, 'entry', 'entries')} ({formula} = 0 there): a stationary point, such as the bottom of "
            f"x² at x = 0. A zero gradient is the right answer there, not a lost one.",
            f"{DEAD_MARK}{formula} = 0")


# ---------------------------------------------------------------------------
# Small: why does ḡ fall sharply at one op
# ---------------------------------------------------------------------------
ATTENTION = {"scaled_dot_product_attention", "dot_product_attention", "multi_head_attention"}


def classify_shrink(trace, e, factor: float):
    """``(kind, why, mark)`` of the op where ḡ falls most on its way back: ``‖ḡ_x‖ = factor · ‖ḡ_y‖`` on ``e``.

    The fall is a property of the op's local derivative at the recorded values: a softmax (or a fused attention)
    whose scores barely differ passes on only the part of ḡ that differs between its entries, a saturated
    activation multiplies by a derivative near 0, and a product multiplies by its other factor.
    """
    ed = _Edge(trace, e)
    times = f"×{_num(factor)}"
    for test in (_near_uniform, _saturated_mean, _small_factor):
        found = test(ed, times)
        if found is not None:
            return found
    return ("shrinks_at_op", f"{ed.dst.op}{ed.line} scales ḡ by {times} on its way back to {ed.src.describe()}: "
            f"its local derivative ({ed.e.factor or 'not shown'}) is small at these values.",
            f"ḡ {times} at {ed.dst.op}")


def _near_uniform(ed, times):
    """softmax's VJP is ``p ⊙ (ḡ − Σ p ḡ)``: with near-equal scores (p ≈ 1/n) only the part of ḡ that differs
    between the n entries passes, scaled by about 1/n. A fused attention's scores are ``q·kᵀ/√d`` (inputs 0, 1)."""
    if ed.kind == "softmax" and ed.y is not None and ed.y.ndim and ed.y.shape[-1] > 1:
        n = ed.y.shape[-1]
        if float(np.mean(ed.y.max(axis=-1))) > 2.0 / n:
            return None
        what = f"its {n} probabilities per row are near-uniform (largest {float(ed.y.max()):.3g}, 1/n = {1 / n:.3g})"
    elif ed.kind in ATTENTION and ed.e.input_index in (0, 1):
        q, k = (_data(n.value) if n is not None else None for n in (
            ed.src if ed.e.input_index == 0 else ed.other(0), ed.src if ed.e.input_index == 1 else ed.other(1)))
        if q is None or k is None or q.ndim < 2 or q.shape[-1] != k.shape[-1]:
            return None
        scores = (q @ np.swapaxes(k, -1, -2)) / math.sqrt(q.shape[-1])
        spread = float(np.mean(scores.std(axis=-1)))
        if spread > 0.5:
            return None
        what = (f"its scores q·kᵀ/√d barely differ (std {spread:.3g} across the {scores.shape[-1]} keys), so every "
                "query attends near-uniformly")
    else:
        return None
    return ("near_uniform_softmax",
            f"{ed.dst.op}{ed.line} scales ḡ by {times} on its way back to {ed.src.describe()}: {what}. Softmax's "
            "backward pass is ḡ_s = p ⊙ (ḡ_p − Σ p ḡ_p): it keeps only the part of ḡ that differs between the "
            "entries, times p ≈ 1/n, so the loss hardly depends on the scores yet.",
            f"ḡ {times}: near-uniform softmax")


def _saturated_mean(ed, times):
    if ed.kind not in SATURATING or ed.x is None or not (ed.same_shape(ed.u) and ed.same_shape(ed.c)):
        return None
    live = ed.u != 0
    if not live.any():
        return None
    f = float(np.median(np.abs(ed.c[live] / ed.u[live])))
    if f > 0.1:
        return None
    return ("saturated", f"{ed.dst.op}{ed.line} is saturated on most entries: its derivative has median {f:.3g} "
            f"(|x| median {float(np.median(np.abs(ed.x[live]))):.3g}), so ḡ leaves it {times}.",
            f"ḡ {times}: {ed.dst.op}′ small")


def _small_factor(ed, times):
    """A product passes ḡ times its other factor (``ḡ_x = ḡ_y · Wᵀ``): small weights give a small ḡ below them."""
    if ed.kind not in PRODUCTS:
        return None
    others = [(n, v) for _, n, v in ed.other_values() if v is not None and v.size > 1]
    if not others:
        return None
    n, w = max(others, key=lambda nv: nv[1].size)
    return ("small_factor", f"{ed.dst.op}{ed.line} multiplies ḡ by its other factor, {n.describe()}, on the way back; "
            f"that factor is small (rms {float(np.sqrt(np.mean(w * w))):.3g} over {w.size} entries), so ḡ leaves "
            f"it {times}.", f"ḡ {times}: small factor")


# ---------------------------------------------------------------------------
# NaN / inf: why is ḡ_x not finite on this edge while ḡ_y and the inputs are
# ---------------------------------------------------------------------------
def classify_nan(trace, e, forward: bool = False):
    """``(kind, why, mark)`` of the edge ``e`` whose contribution is the first not finite (``forward``: of the op
    whose forward output is the first not finite)."""
    ed = _Edge(trace, e)
    bad = None
    if forward and ed.y is not None:
        bad = ~np.isfinite(ed.y)
    elif ed.c is not None:
        bad = ~np.isfinite(ed.c)
    on_x = bad if bad is not None and ed.x is not None and bad.shape == ed.x.shape else None
    if forward and ed.kind in SOFTMAXES:
        row = _all_masked_row(ed)
        if row is not None:
            return row
    own = _own_nan(ed, on_x)
    if not forward and bad is not None and ed.u is not None and ed.u.shape == bad.shape and bad.any() \
            and not (ed.u[bad] != 0).any():
        masker = _masker(trace, ed.dst.id)
        inner = f" There {own[1][0].lower()}{own[1][1:]} For that cause: {FIXES[own[0]]}" if own is not None else ""
        n = int(bad.sum())
        if masker is not None and op_kind(masker.op) == "where":
            return ("unselected_where_branch",
                    f"{ed.dst.op}{ed.line} is computed on {_n(n, 'entry', 'entries')} that the where"
                    f"{' at ' + str(masker.location) if masker.location else ''} does not select. The where "
                    f"sends ḡ = 0 to them, but the chain rule still multiplies: 0 · ∞ (or 0 · nan) = nan.{inner}",
                    "nan: 0 · ∞ in the unselected branch")
        masked = masker is not None
        if own is not None and own[0] != "zero_times_inf" and not masked:
            # no mask after it: the op's own singularity is the cause (cos′ = 0 where acos′ = ∞)
            return (own[0], f"{own[1]} The gradient arriving at {ed.dst.op}{ed.line} is 0 on "
                    f"{_n(n, 'that entry', 'those entries')}, but 0 · ∞ = nan: the zero does not cancel the "
                    "infinity.", own[2])
        by = f" (they are masked by {masker.op} later)" if masked else ""
        return ("zero_times_inf", f"{ed.dst.op}{ed.line} has an infinite derivative on {n} entries whose "
                f"upstream ḡ is 0{by}: 0 · ∞ = nan.{inner}", "nan: 0 · ∞")
    if own is not None:
        return own[0], own[1], own[2]
    return ("nonfinite_derivative", f"The local derivative of {ed.dst.op}{ed.line} ({ed.e.factor or 'not shown'}) "
            f"is not finite at these inputs: {describe(ed.src.value)}.", "nan: ∂y/∂x not finite")


SOFTMAXES = {"softmax", "log_softmax", "multi_head_attention_forward", "scaled_dot_product_attention",
             "multiheadattention", "attention", "dot_product_attention"}


def _all_masked_row(ed):
    """A softmax (or an attention, whose softmax is inside) given a score or mask input holding −inf: if a whole
    row is −inf, the softmax of that row is 0/0 = nan."""
    neg = [(n, d) for _, n, d in [(None, ed.src, ed.x)] + ed.other_values()
           if d is not None and d.dtype.kind == "f" and np.isneginf(d).any()]
    if not neg:
        return None
    node, d = neg[0]
    full = np.isneginf(d).all(axis=-1) if d.ndim else np.isneginf(d)
    rows = f"{_n(int(np.sum(full)), 'row', 'rows')} of it entirely −inf" if np.any(full) else "−inf entries"
    return ("fully_masked_row",
            f"{ed.dst.op}{ed.line} takes a softmax over scores masked with −inf ({node.describe()}: {rows}): "
            "when every key of a row is masked (an example that is all padding in key_padding_mask, an attention "
            "mask that hides everything), that softmax is e^−∞ / Σ e^−∞ = 0/0 = nan, and the nan reaches every "
            "weight.",
            "nan: softmax of a row of −inf")


def _own_nan(ed, on_x):
    """The op's own reason for an infinite derivative (or output) at the bad entries, or None."""
    k, x = ed.kind, ed.x
    xs = x[on_x] if x is not None and on_x is not None and on_x.any() else x
    if xs is None:
        return None
    if k == "power" and ed.e.input_index == 0 and (xs == 0).any():
        b = _exponent(ed)
        if b is not None and b == 0:
            return ("zero_times_inf", f"{ed.dst.op}′ = b·x^(b−1) is 0 · 0^(−1) = 0 · ∞ = nan at x = 0 with b = 0 "
                    f"({_n(int((xs == 0).sum()), 'entry is', 'entries are')} exactly 0), although x⁰ = 1 there.",
                    "nan: 0 · 0^(−1)")
        if b is not None and b != 0.5 and 0 < b < 1:
            return ("sqrt_at_zero", f"{ed.dst.op}′ = b·x^(b−1) is infinite at 0 for b = {_num(b)} < 1; "
                    f"{_n(int((xs == 0).sum()), 'entry', 'entries')} of its input "
                    f"{'is' if (xs == 0).sum() == 1 else 'are'} exactly 0.", f"nan: {ed.dst.op}′ = ∞ at 0")
    if k in ROOTS and ed.e.input_index == 0:
        if (xs == 0).any() or (k == "norm" and not (x != 0).any()):
            what = "the norm of an all-zero vector: x/‖x‖ = 0/0" if k in ("norm", "std") else \
                f"{ed.dst.op}′ is infinite at 0 (d√x/dx = 1/(2√x))"
            return ("sqrt_at_zero", f"{what}; {_n(int((xs == 0).sum()), 'entry', 'entries')} of its input "
                    f"{'is' if (xs == 0).sum() == 1 else 'are'} exactly 0.",
                    f"nan: {ed.dst.op}′ = ∞ at 0")
        if (xs < 0).any():
            return ("domain_error", f"{ed.dst.op} of a negative number is nan ({int((xs < 0).sum())} entries < 0).",
                    f"nan: {ed.dst.op} of x < 0")
    if k in ("log", "log2", "log10", "log1p", "reciprocal"):
        edge = -1.0 if k == "log1p" else 0.0
        if (xs == edge).any():
            return ("log_of_zero", f"{ed.dst.op}′ = 1/x is infinite at x = {_num(edge)} "
                    f"({_n(int((xs == edge).sum()), 'entry', 'entries')}), and log(0) = −inf.",
                    f"nan: {ed.dst.op}′ = ∞ at 0")
        if (xs < edge).any():
            return ("domain_error", f"{ed.dst.op} of a negative number is nan.", "nan: log of x < 0")
    if k in ("exp", "exp2", "expm1", "cosh", "sinh", "softmax", "logsumexp", "power") and ed.y is not None \
            and np.isinf(ed.y).any():
        return ("exp_overflow", f"{ed.dst.op} overflows: its input reaches {_num(float(np.max(x)))}, and "
                f"e^x is inf above ~709 (float64) / ~88 (float32); inf/inf or inf − inf then gives nan.",
                f"nan: {ed.dst.op} overflows")
    if k in ("arccos", "arcsin", "arctanh") and (np.abs(xs) >= 1).any():
        return ("acos_at_one", f"{ed.dst.op}′ = ∓1/√(1 − x²) is infinite at x = ±1 "
                f"({_n(int((np.abs(xs) == 1).sum()), 'entry is', 'entries are')} exactly ±1).",
                f"nan: {ed.dst.op}′ = ∞ at ±1")
    if k == "divide":
        den = ed.other(1) if ed.e.input_index == 0 else ed.src
        dv = _data(den.value) if den is not None else None
        if dv is not None and (dv == 0).any():
            std = op_kind(den.op) in ("std", "sqrt", "var", "norm")
            note = " (it is a standard deviation: the data it summarises is constant, so it is 0)" if std else ""
            return ("division_by_zero", f"The denominator {den.describe()} is 0 on {int((dv == 0).sum())} "
                    f"entries{note}: x/0 is inf and 0/0 nan.", "nan: division by 0")
    if k == "multiply":
        for _, n, d in ed.other_values():
            if d is not None and np.isinf(d).any():
                return ("zero_times_inf", f"{ed.dst.op}{ed.line} multiplies by {n.describe()}, which holds inf: "
                        "0 · inf = nan.", "nan: 0 · ∞")
    return None


_MASKS = PRODUCTS | {"maximum", "minimum", "clip", "relu", "max", "min", "max_pool", "nan_to_num", "getitem", "take",
                     "gather", "gathernd", "index_select", "stridedslice", "slice", "masked_fill"}


def _exponent(ed):
    """The exponent of a power op as one number (its second input's value, or the op's ``exponent`` parameter), or
    None when it varies or is not known."""
    other = ed.other(1)
    b = _data(other.value) if other is not None else None
    if b is None:
        raw = (ed.dst.params or {}).get("exponent")
        try:
            return float(raw) if raw is not None else None
        except ValueError:
            return None
    return float(b.reshape(-1)[0]) if b.size and np.all(b == b.reshape(-1)[0]) else None


def _masker(trace, nid, hops: int = 8):
    """The op after ``nid`` (within a few ops) that zeroed its gradient: a ``where``, else the first op that can
    send back 0 (maximum, clip, an index that takes some entries, a product by a factor holding zeros …), else
    None. A product by a factor with no zero (``2 · θ``) masks nothing."""
    product = None
    for e, n in _after(trace, nid, hops):
        kind = op_kind(n.op)
        if kind == "where":
            return n
        if product is None and kind in _MASKS and (kind not in PRODUCTS or any(
                d is not None and (d == 0).any() for d in (_data(trace.node(i.src).value)
                                                            for i in trace.edges_into(n.id) if i.id != e.id))):
            product = n
    return product


def _after(trace, nid, hops: int):
    """``(edge, node it reads into)`` for the ops within ``hops`` ops after ``nid``, nearest first."""
    frontier, seen = [nid], {nid}
    for _ in range(hops):
        nxt = []
        for f in frontier:
            for e in trace.edges_from(f):
                yield e, trace.node(e.dst)
                if e.dst not in seen:
                    seen.add(e.dst)
                    nxt.append(e.dst)
        frontier = nxt



# ---------------------------------------------------------------------------
# Layers, for the per-layer ‖ḡ‖ of a vanishing gradient
# ---------------------------------------------------------------------------
def layer_keys(trace, nodes) -> dict:
    """``{node id: layer name}``: a node's scope (``sequential/dense_2``) when the trace has scopes, else the
    product op (matmul, conv …) that starts its layer in forward order, named by its line."""
    if any(n.scope for n in nodes):
        return {n.id: n.scope or "(outside the layers)" for n in nodes}
    keys, current, count = {}, "(before the first layer)", 0
    wanted = {n.id for n in nodes}
    for n in trace.nodes:
        if n.kind == "op" and op_kind(n.op) in PRODUCTS - {"multiply", "bias_add"}:
            count += 1
            current = f"layer {count}" + (f" ({n.location})" if n.location is not None else "")
        if n.id in wanted:
            keys[n.id] = current
    return keys


# ---------------------------------------------------------------------------
# Exercise mode: a hand gradient that is zero or NaN where the tape's is not
# ---------------------------------------------------------------------------
def hand_hint(hand, tape) -> str:
    """What a learner's zero or non-finite hand gradient means when the tape's is neither ("" otherwise).

    The tape's gradient is the reference: when it is finite, no edge of the real backward pass made a
    NaN, so the kinds that make one (``sqrt_at_zero``, ``log_of_zero``, ``division_by_zero``,
    ``zero_times_inf``) happened in the learner's formula; when it is not zero, nothing on the path
    dies (``dead_relu``, ``clipped`` …), so a zero the learner got came from a mask or factor of theirs.
    """
    h, t = np.asarray(hand, dtype=np.float64), np.asarray(tape, dtype=np.float64)
    if h.shape != t.shape or not np.isfinite(t).all():
        return ""
    if not np.isfinite(h).all():
        return (" The tape's gradient is finite everywhere, so the nan/inf comes from your formula, not from the "
                "function: look for a division by a value that is 0 there (division_by_zero; a √ or norm at 0: "
                "sqrt_at_zero; 1/x of log at 0: log_of_zero), or 0 · ∞ (zero_times_inf).")
    if t.any() and not h.any():
        return (" Yours is 0 on every entry, but the tape's is not: nothing on the real backward pass kills it "
                "(no dead ReLU, clip at its bound or unselected branch here). A zero hand gradient usually "
                "comes from a mask that is never true (relu′ written as (x < 0), or taken from the output y "
                "after an in-place change) or a factor that is 0.")
    return ""

