"""A recorded model's tree: its modules and weights named as ``print(net)`` names them, found once per model.

When a recording first sees a model called (a module called outside every other), it names the whole tree:

* each module by its path of scope segments, one per level, each the name ``named_modules()`` gives it
  (``net/features/features.0``), so a box is titled as ``print(net)`` shows it and two modules called ``0`` in
  different blocks stay apart; a module two parents hold (XLM's one GELU in every ``ffns[i]``) keeps each path;
* each scope segment by its class (``"features.0" → "Conv2d"``), which says which formula a box carries;
* each parameter by its qualified name (``features.0.weight``); a layer called on its own (``model[0](x)``) has
  bare names, so its scope segment prefixes them (``linear.weight``).

The model itself is the segment of its class (``sequential``; the second model of a class ``sequential_1``).

A training loop records every step afresh, and walking a model's modules and parameters cost more than the
rest of entering it (0.1–0.2 ms on a tiny ViT). What the first model of a recording is named depends on its
tree alone, so :func:`name_model` keeps it per model (weakly: a model dropped is forgotten) with a signature of
the tree — each module's class, its children and parameters by name and identity — and names a model whose
signature still holds by copying. Anything that changes the names changes the signature: a module or weight
added, removed, replaced or renamed, a class swapped (``torch.nn.utils.parametrize``).
"""
from __future__ import annotations

import itertools
import operator
import weakref

_KNOWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # model -> _Named of its tree


class _Named:
    """What naming a model's tree as a recording's first model wrote, and the tree's signature then."""

    __slots__ = ("signature", "root", "kinds", "names", "aliases", "weights")

    def __init__(self, signature, root, kinds, names, aliases, weights):
        self.signature, self.root, self.kinds, self.names = signature, root, kinds, names
        self.aliases, self.weights = aliases, weights


def tree(module) -> tuple:
    """``(modules, parameters, signature)``: ``list(module.named_modules(remove_duplicate=False))`` and
    ``list(module.named_parameters())`` in one walk, and the tree's signature (see :func:`_unchanged`; None for
    a tree with TorchScript's containers, which are not dicts)."""
    mods, params, signature, seen, kept = [], [], [], set(), set()
    stack = [("", module)]
    while stack:
        qual, m = stack.pop()
        mods.append((qual, m))
        children = m._modules
        if id(m) not in seen:               # a module held twice lists its parameters under its first path
            seen.add(id(m))
            own = m._parameters
            if signature is not None and isinstance(children, dict) and isinstance(own, dict):
                signature.append((None if m is module else m, type(m), tuple(children), tuple(children.values()),
                                  tuple(own), tuple(own.values())))
            else:                   # a TorchScript module's own containers: not remembered
                signature = None
            for k, p in own.items():
                if p is not None and id(p) not in kept:
                    kept.add(id(p))
                    params.append((f"{qual}.{k}" if qual else k, p))
        stack.extend(reversed([(f"{qual}.{k}" if qual else k, c) for k, c in children.items() if c is not None]))
    return mods, params, signature


def _unchanged(model, signature) -> bool:
    """Whether ``model``'s tree is still the one ``signature`` describes: every module of the same class, with the
    same children and parameters under the same names (the very objects: compared by identity; the signature
    holds them, so no new object can take an old one's id)."""
    same = operator.is_
    for m, cls, kids, kid_objs, names, weights in signature:
        m = model if m is None else m
        children, own = m._modules, m._parameters
        if type(m) is not cls or tuple(children) != kids or tuple(own) != names or \
                not all(map(same, children.values(), kid_objs)) or not all(map(same, own.values(), weights)):
            return False
    return True


def name_model(rec, module) -> tuple:
    """Name ``module``'s tree into recording ``rec`` (a model seen called for the first time, outside every other
    module): its scope segment, each module's path and class, each parameter's name. Returns ``(segment, the
    model's {id(parameter): name})``."""
    first = not rec._modules
    try:
        known = _KNOWN.get(module) if first else None
    except TypeError:           # a model class that defines __eq__ without __hash__: not remembered
        first, known = False, None
    if known is not None and _unchanged(module, known.signature):
        rec._modules.append(module)
        rec.module_kinds.update(known.kinds)
        rec._module_names.update(known.names)
        rec._aliases.update({k: list(v) for k, v in known.aliases.items()})
        rec._param_names.update(known.weights)     # the model's weights were all the names a first model wrote
        return known.root, dict(known.weights)
    mods, params, signature = tree(module)
    root = type(module).__name__.lower()
    roots = [m for m in rec._modules if type(m).__name__.lower() == root]
    quals = {q for q, _ in mods}
    for k in itertools.count(len(roots)):
        # the second model of a class is sequential_1; a class named as one of its own
        # modules (class Attn holding self.attn) gets attn_1, so the two boxes stay apart
        name = f"{root}_{k}" if k else root
        if name not in quals and name not in rec.module_kinds:
            root = name
            break
    rec._modules.append(module)
    kinds, names, aliases = rec.module_kinds, rec._module_names, rec._aliases
    kinds.setdefault(root, type(module).__name__)
    paths = {"": root}
    for qual, m in mods:    # named_modules() lists a parent before its children: the parent's path is known
        if qual:
            path = paths[qual] = f"{paths[qual.rpartition('.')[0]]}/{qual}"
            kinds.setdefault(qual, type(m).__name__)
        else:
            path = root
        if names.setdefault(id(m), path) != path:
            aliases.setdefault(id(m), []).append(path)
    prefix = "" if next(module.children(), None) is not None else root + "."
    for qual, p in params:
        rec._param_names.setdefault(id(p), prefix + qual)
    weights = {id(p): rec._param_names[id(p)] for _, p in params}
    if first and signature is not None:     # every dict was empty: what was written is what the tree names
        _KNOWN[module] = _Named(signature, root, dict(kinds), dict(names),
                                {k: list(v) for k, v in aliases.items()}, weights)
    return root, dict(weights)


def apart(rec, root: str) -> None:
    """Two models of one class (``encoder = MLP(4, 2)``, ``decoder = MLP(2, 4)``) name their parameters alike
    (``l1.weight``): when the model just seen (scope segment ``root``) shares a parameter name with another one,
    the parameters of both are named by the learner's variable for their model (``encoder.l1.weight``), or by
    their scope segments when one variable held both (a loop's ``block``)."""
    names = rec._param_names
    label, first = rec._root_params[root]
    for other, (other_label, firsts) in rec._root_params.items():
        if other == root or not set(firsts.values()) & {n for i, n in first.items() if i not in firsts}:
            continue
        same = other_label == label
        for who, given in ((other if same else other_label, firsts), (root if same else label, first)):
            for i, n in given.items():
                if i not in firsts or i not in first:       # a weight both models hold (tied) keeps its name
                    names[i] = f"{who}.{n}"
