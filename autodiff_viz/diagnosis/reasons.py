"""The one table of reasons why a gradient is None, and the fix chosen by the cut's kind *and* where it happened.

Every diagnosis (the engine's :mod:`~autodiff_viz.diagnosis.walk`, the PyTorch
and TensorFlow bridges) names one of the reasons of :data:`TABLE`; a new reason
is added here, once, with the frameworks where it exists. The words of a
reason's fix depend on the *context* of the line that caused it, read from the
user's source (:func:`context_of`): the same unrecorded value calls for
"move the line into the ``with`` block" at the top level, but for "compute it
in ``call()``: ``build`` runs once" in a Keras layer's ``build``, and for
"accumulate the tensor, not its ``.item()``" in a loop. :func:`fix` looks the
pair up in :data:`FIXES`, the general fix being the fallback.

When a walk cannot establish a cause it says so (:func:`unexplained`): "the
recording does not show why", with what it did see — never a confident reason
that is wrong.
"""
from __future__ import annotations

import ast
import functools
import linecache
from dataclasses import dataclass

import numpy as np

from ..base.naming import code_line, file_line
from .explanation import Explanation

E, T, F = "engine", "torch", "tf"
#: reason -> (the frameworks that use it, what it means)
TABLE = {
    "connected": ((E, T, F), "the gradient is not None"),
    "not_watched": ((E, F), "the source is a constant the tape never watched"),
    "computed_outside_tape": ((E, F), "the target or a value on the path was computed while the tape did not record"),
    "left_the_tape": ((E, F), "a value on the path left as numpy / a Python number and came back as a constant"),
    "non_differentiable_op": ((E, T, F), "an op without a gradient on the path (argmax, comparisons, round)"),
    "integer_dtype": ((E, T, F), "the source or a value on the path is integer-valued"),
    "not_used": ((E, T, F), "the target does not depend on the source at all"),
    "partly_lost": ((E,), "connected, but a path through an escape to numpy is missing from the gradient"),
    "unexplained": ((E, T, F), "the recording shows a cut but not how it joins the source: said plainly"),
    "requires_grad_false": ((T,), "the parameter does not require grad (frozen, or made without it)"),
    "no_grad": ((T,), "an op on the path ran under torch.no_grad() (the user's, or a library's)"),
    "inference_mode": ((T,), "an op on the path ran under torch.inference_mode()"),
    "detached": ((T,), ".detach() or .data on the path"),
    "left_the_graph": ((T,), "a value became a Python number / numpy and came back through torch.tensor(...)"),
    "new_parameter": ((T,), "nn.Parameter(value) assigned onto a module: a new leaf, its value is copied"),
    "non_leaf": ((T,), "the tensor is not a leaf: autograd keeps no .grad unless retain_grad()"),
    "read_before_backward": ((T,), ".grad was read before backward() filled it"),
    "non_scalar_target": ((T,), "backward() on a non-scalar target needs gradient="),
    "graph_cut": ((T,), "(without a recording) the target does not require grad"),
    "computed_outside_recording": ((T,), "the target was not computed inside the recording"),
    "optimizer_other_instance": ((T,), "the optimizer holds the parameters of another build of the model"),
    "unregistered_parameter": ((T,), "a parameter kept where nn.Module does not register it"),
    "made_in_forward": ((E, T, F), "a weight or layer made inside call()/forward(): a new one on every call"),
    "rebound_parameter": ((T,), "w = w - lr * w.grad made a new tensor named w"),
    "unseen_leaf": ((T,), "a new leaf re-made from values the recording did not see"),
    "custom_backward_none": ((T,), "the only path runs through a custom autograd.Function whose backward gave None"),
    "unrecorded_op": ((T,), "autograd's graph reaches the parameter but the recording misses a step"),
    "new_variable": ((F,), "a tf.Variable was made from a value on the path: its initial value is copied"),
    "assigned_variable": ((F,), "v.assign(value) on the path: reading v has no gradient to value"),
    "not_a_tensor": ((F,), "the target is a numpy array or a Python number"),
    "unconnected_output_gradients": ((F,), "tape.gradient(y, x, output_gradients=g) with ∂y/∂x cut"),
    "non_trainable": ((F,), "a non-trainable weight (moving statistics, a frozen layer) asked for"),
    "frozen_layer": ((F,), "the weight's layer is frozen (layer.trainable = False): not in trainable_variables"),
}


def reasons_of(framework: str) -> tuple:
    """The reasons one framework's diagnosis may give, in table order."""
    return tuple(r for r, (where, _) in TABLE.items() if framework in where)


# ---------------------------------------------------------------------------
# Where a line is: top level, a function, a layer's build/call, a forward, a Lambda, a loop
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Context:
    """Where a line of the user's code sits. ``kind`` is one of ``top``, ``function``, ``forward``, ``call``,
    ``build``, ``init``, ``lambda``; ``loop`` says a ``for``/``while`` holds the line; ``function`` names the
    enclosing function (``None`` at the top level)."""

    kind: str
    function: str | None = None
    loop: bool = False


_KINDS = {"build": "build", "call": "call", "forward": "forward", "__init__": "init"}


@functools.lru_cache(maxsize=64)
def _tree(filename: str, size: int):
    try:
        return ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return None


def context_of(location) -> Context:
    """The :class:`Context` of ``location`` (``(file, line)`` or ``"file:line"``); ``top`` when unknown."""
    if location is None:
        return Context("top")
    if isinstance(location, str):
        filename, _, line = location.rpartition(":")
        location = (filename, int(line)) if line.isdigit() else None
        if location is None:
            return Context("top")
    filename, line = location[0], location[1]
    lines = linecache.getlines(filename)
    tree = _tree(filename, len(lines)) if lines else None
    if tree is None:
        return Context("top")
    function, loop, lam = None, False, False
    stack = [(tree, False)]
    while stack:
        node, in_lambda_call = stack.pop()
        for child in ast.iter_child_nodes(node):
            start, end = getattr(child, "lineno", None), getattr(child, "end_lineno", None)
            if start is None or not (start <= line <= (end or start)):
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                function, loop = child.name, False
            elif isinstance(child, (ast.For, ast.While, ast.AsyncFor)) and child.body and \
                    child.body[0].lineno <= line:
                loop = True
            elif isinstance(child, ast.Lambda) and in_lambda_call:
                lam = True
            called = isinstance(child, ast.Call) and _callee(child.func) == "Lambda"
            stack.append((child, in_lambda_call or called))
    if lam:
        return Context("lambda", function, loop)
    return Context(_KINDS.get(function, "function") if function else "top", function, loop)


def _callee(func) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


# ---------------------------------------------------------------------------
# Fixes by reason and context
# ---------------------------------------------------------------------------
#: (reason, context) -> the fix; context ``loop``, ``before`` (made before the tape or recording),
#: ``library`` (a library's function set the state) or a :class:`Context` kind.
FIXES = {
    ("computed_outside_tape", "minimize"):
        "Fix: minimize(loss, var_list) calls loss() inside its own tape, so the function must compute the loss "
        "itself: loss = lambda: <the computation> (or a def that computes it), not a function that returns a value "
        "computed before minimize was called.",
    ("computed_outside_tape", "build"):
        "Fix: compute it in call(), not in build(): build runs once, on the first call, so what it computes "
        "is a constant to every tape after it (keep only the weights in build: self.mu = self.add_weight(...), "
        "and compute self.mu + self.sigma * eps in call()).",
    ("computed_outside_tape", "init"):
        "Fix: compute it in call() / forward(), not in __init__: __init__ runs once, before any tape, so what "
        "it computes is a constant; keep only the weights there.",
    ("computed_outside_tape", "before"):
        "Fix: move that line into the `with tf.GradientTape() as tape:` block (run the forward pass, "
        "model(x), inside it), so the tape records it.",
    ("not_watched", "before"):
        "Fix: it was made before the tape: call tape.watch({x}) inside the `with` block before using it, or "
        "make it a Variable (tapes watch trainable variables by themselves).",
    ("integer_dtype", "lookup"):
        "Fix: these values are ids, the indices of a lookup{layer}, and an index has no gradient: no cast or dtype "
        "gives one. Differentiate with respect to the looked-up vectors instead, the embedding's output: compute "
        "emb = embedding(ids), watch emb, run the rest of the model on it and ask for tape.gradient(out, emb) "
        "(integrated gradients and saliency on text interpolate between embeddings, not between ids).",
    ("left_the_tape", "loop"):
        "Fix: inside the loop keep the tensor: accumulate total = total + loss_i (or collect the tensors and "
        "stack them), and call float()/.item()/.numpy() only to print, after the gradient.",
    ("left_the_graph", "loop"):
        "Fix: inside the loop keep the tensor: accumulate total = total + loss_i (or torch.stack the "
        "tensors), and call .item() only to log, after backward().",
    ("no_grad", "library"):
        "Fix: {rule}",
    ("inference_mode", "library"):
        "Fix: {rule}",
    ("non_differentiable_op", "lambda"):
        "Fix: that op inside the Lambda layer has no gradient: replace it with a differentiable one (softmax "
        "weights instead of argmax), or move it out of the path you train (compute it on the outputs, for "
        "metrics).",
    ("made_in_forward", "call"):
        "Fix: create the weight once, in build(): self.w = self.add_weight(shape=..., initializer=...) (build runs "
        "on the first call), and only read self.w in call(); then ask for layer.trainable_variables.",
    ("made_in_forward", "forward"):
        "Fix: build the layer or parameter once in __init__ (self.fc = nn.Linear(...), self.w = "
        "nn.Parameter(...)) and only use it in forward(); then model.parameters() holds it.",
    ("requires_grad_false", "before"):
        "Fix: it was frozen before the recording (the usual fine-tuning order: load, freeze, train): unfreeze "
        "it with {name}.requires_grad_(True) and pass it to the optimizer if it should learn; leave it frozen "
        "if it should not.",
}

#: what a library's function does with grad mode, and how to get a gradient through it
LIBRARY_RULES = {
    "checkpoint": "the reentrant checkpoint (use_reentrant=True) runs the function without grad and gives a "
                  "gradient only through inputs that require grad: pass use_reentrant=False (recommended by "
                  "PyTorch), or give it an input that requires grad.",
    "no_grad": "it is decorated @torch.no_grad(): it never builds a graph; call the module itself (its forward) "
               "for training.",
}


def fix(reason: str, context: Context | str | None, default: str, **words) -> str:
    """The fix for ``reason`` in ``context`` (a :class:`Context` or one of ``before``, ``library``,
    ``loop``), else ``default``; ``words`` fill the fix's blanks ({x}, {name}, {rule})."""
    keys = []
    if isinstance(context, Context):
        keys = [context.kind] + (["loop"] if context.loop else [])
    elif context:
        keys = [context]
    for k in keys:
        text = FIXES.get((reason, k))
        if text is not None:
            try:
                return text.format(**words)
            except (KeyError, IndexError):
                return text
    return default


def library_rule(function: str | None, what: str, callback: bool = False) -> str:
    """How to get a gradient through the library call that turned gradients off (``checkpoint``, a decorated
    method), or the rule for that mode: ``callback`` when the cut ran in the user's own code that the library
    called under it (a ``test_step`` in an evaluation loop), else the library computed it itself (a metric)."""
    if function in LIBRARY_RULES:
        return LIBRARY_RULES[function]
    if what.startswith("CheckpointFunction."):
        return LIBRARY_RULES["checkpoint"]
    if what.startswith("@torch."):
        decorator, _, decorated = what.partition(" on ")
        return (f"{decorated or function} is decorated {decorator}: it never builds a graph, so nothing it returns "
                "carries a gradient back, whatever called it. Call an undecorated path for training (the module "
                "itself, its forward), or, in the library's code, remove the decorator from that function.")
    if what.endswith(".forward"):
        return (f"{what} is an autograd.Function's forward, which always runs without grad: its backward gives "
                "the gradient; an input that requires grad makes the Function part of the graph.")
    name = function or "the library"
    if what == "set_grad_enabled(False)":
        return (f"{name} called torch.set_grad_enabled(False), which turns gradients off for the whole thread "
                "and stays in effect after it returns (a utility that loads a model for inference often does): "
                "call torch.set_grad_enabled(True) right after it, or load the model another way.")
    if what == "inference_mode":
        return (f"{name} ran {'your code' if callback else 'it'} under torch.inference_mode(), which "
                "torch.enable_grad() does not lift: wrap the lines that need gradients in "
                "`with torch.inference_mode(False):` (inside your function that the library calls), or turn the "
                "library's inference mode off (an option such as Trainer(inference_mode=False)).")
    if callback:
        return (f"{name} calls your code under torch.{what}() (evaluation and test loops do): wrap the lines "
                "that need gradients in `with torch.enable_grad():` inside your function. Switching the model "
                "to train mode does not turn gradients on: train mode is not grad mode.")
    return (f"{name} computes without gradients (torch.{what}() inside it), so what it returns is not "
            f"differentiable: it is a measurement, not a loss. Train on a differentiable loss (cross-entropy, "
            f"BCE, MSE) and use {name} to measure.")


def array_source(array, framework: str, used=None, watched=None, nodes=()) -> Explanation:
    """``not_watched`` for a source that is a numpy array (an input image for a saliency map): every op converts
    it to a new tensor, so no tensor the tape recorded is the array, and a ``watch`` of a conversion watched a
    tensor nobody used. ``used``/``watched``: the lines where a conversion was read / watched, if recorded."""
    convert, var = {"tf": ("tf.convert_to_tensor(x)", "tf.Variable(x)"),
                    "engine": ("adv.constant(x)", "adv.Variable(x)")}[framework]
    lines = ""
    if used is not None:
        lines += f"\nA conversion of it was used here (a new tensor each time it is passed in):{code_line(used)}"
    if watched is not None and watched != used:
        lines += f"\nand the tape watched another conversion, which nothing used:{code_line(watched)}"
    return Explanation(
        "not_watched",
        f"The source is a numpy array of shape {tuple(np.shape(array))}, not a tensor: each op that reads it "
        f"converts it to a new constant, so the tape never recorded the array itself and there is no gradient "
        f"with respect to it.{lines}\nFix: convert it once before the tape, x = {convert}, then inside the "
        f"`with` block call tape.watch(x), compute the loss from that same x (model(x)), and ask for "
        f"tape.gradient(loss, x) — or make it {var}, which tapes watch by themselves.",
        file_line(used) if used is not None else None, nodes=tuple(nodes))


def symbolic(obj) -> bool:
    """A Keras symbolic tensor (``keras.Input``, ``layer.output`` of a functional model): it describes the
    model's graph and holds no value, so no tape ever computes it."""
    return type(obj).__name__ == "KerasTensor" or getattr(obj, "_keras_history", None) is not None


_SPELLING = {"tf": ("tf.convert_to_tensor", "tf.Variable"), "engine": ("adv.constant", "adv.Variable")}


def wrong_source(obj, framework: str) -> str | None:
    """What a source that no tape can differentiate with respect to is, and what to pass instead — or None
    for a tensor or variable. A tape knows the tensors it computed or watched, so: a functional model's
    symbolic input (``model.inputs``) is replaced by the batch itself, watched; a layer's symbolic output by
    the output of a call made inside the tape; a layer or model by its ``trainable_variables``; a numpy array
    by one tensor made from it before the tape."""
    convert, variable = _SPELLING[framework]
    kind = type(obj).__name__
    if symbolic(obj):
        history = getattr(obj, "_keras_history", None)
        maker = getattr(history, "operation", None) or getattr(history[0], "layer", None) if history else None
        name = getattr(obj, "name", None) or "a KerasTensor"
        if maker is None or type(maker).__name__ == "InputLayer":
            return (f"the source {name!r} is a model's symbolic input (model.inputs / keras.Input): a placeholder "
                    "that describes the model and holds no value, not the batch this tape saw, so there is no "
                    f"gradient with respect to it. Fix: x = {convert}(batch); inside the tape call "
                    "tape.watch(x) and loss = loss_fn(model(x)); then ask for tape.gradient(loss, x).")
        layer = f"model.get_layer({getattr(maker, 'name', '...')!r}).output"
        fix = (f"call the model inside the tape, then ask for the gradient with respect to {layer} read after "
               "that call (here it is then the real output of the call)" if framework == "engine" else
               f"build a model that also outputs that layer (keras.Model(model.inputs, [{layer}, "
               "model.output])), call it inside the tape, and differentiate with respect to the tensor that "
               "call returns")
        return (f"the source {name!r} is a layer's symbolic output (layer.output of a functional model): a "
                "placeholder that describes the model and holds no value, so there is no gradient with respect "
                f"to it. Fix: {fix}.")
    if hasattr(obj, "trainable_variables"):
        what = "model" if any(c.__name__ == "Model" for c in type(obj).__mro__) else "layer"
        return (f"the source {getattr(obj, 'name', kind)!r} is a {kind} object, not a tensor or variable: a tape "
                f"differentiates with respect to tensors and variables only. Fix: tape.gradient(loss, "
                f"{what}.trainable_variables) gives one gradient per weight, in the order an optimizer's "
                "apply_gradients expects.")
    if isinstance(obj, np.ndarray):
        return (f"the source is a numpy array of shape {obj.shape}, not a tensor: each op converts it to a new "
                f"constant, so the tape never saw the array itself. Fix: x = {convert}(array) before the tape, "
                "tape.watch(x) inside it, compute the loss from that same x, then tape.gradient(loss, x).")
    return (f"sources must be tensors or variables, got {kind}: give a {variable}, or a tensor you "
            f"tape.watch (x = {convert}(value)).")


def not_a_tensor_source(source, framework: str) -> Explanation:
    """``explain`` asked about a source that is not a tensor: a Keras symbolic tensor is explained (it is a
    real question: "why is the gradient with respect to model.inputs None?"); anything else is a misuse of
    ``explain`` and raises a TypeError that says what to pass."""
    said = wrong_source(source, framework)
    if not symbolic(source):
        raise TypeError(f"explain: {said}")
    return Explanation("not_used", said[:1].upper() + said[1:])


def unexplained(seen: list, nodes=(), location=None) -> Explanation:
    """The walk found no cause it can stand behind: say so, with what the recording did show."""
    shown = "\n".join(f"  - {s}" for s in seen) or "  - nothing on the way from the target to the source"
    return Explanation("unexplained",
                       "The recording does not show why the gradient is None: it saw these steps on the target's "
                       f"history, but not how they join the source:\n{shown}\n"
                       "Something ran that the recording could not see (a C extension, another thread, a "
                       "library's copy of the values). Check those lines first.",
                       location, nodes=tuple(nodes))


def calls_on_line(location) -> list:
    """The dotted names of the functions called on the user's line (``['tf.argsort']``), outermost first.

    A framework's op type is not always what the user wrote (``tf.argsort``
    records ``Shape``, ``TopKV2``, ``Cast``): the diagnosis names the user's call.
    """
    if location is None:
        return []
    filename, line = location[0], location[1]
    lines = linecache.getlines(filename)
    tree = _tree(filename, len(lines)) if lines else None
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node, "lineno", None) == line:
            name = _dotted(node.func)
            if name and name not in found:
                found.append(name)
    return found


def _dotted(func) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        head = _dotted(func.value)
        return f"{head}.{func.attr}" if head else func.attr
    return None
