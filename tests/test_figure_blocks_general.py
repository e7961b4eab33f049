"""Blocks of a paper figure found by general rules, on small models written here (no architecture names).

* name blocks: consecutive layers of a flat model grouped by the common token prefixes of their names, nested
  where a block is still crowded; a numbered list of instances is no block of its own (its instances are, so
  they fold as "× N"); an op written between layers (a residual ``x + y``) joins the block that feeds it;
* a PyTorch ``ModuleList`` of like modules (never called itself) opens with its parent; one of different modules
  stays one box;
* loops and repeats: runs of one name with separate weights are blocks "× N", one block applied N times with
  shared weights is one repeat holding those weights, one cell called over time steps stays a loop;
* a long computation a model's own ``forward`` writes after its parts (a contrastive head) is one box, its loss
  drawn; the ops a module computes itself (an attention's) stay that module's.
"""
from __future__ import annotations

import pytest

from autodiff_viz.views import blocks, folding


def _kids(names):
    """Each layer's scope split into parts, as folding reads a flat functional model."""
    return [["model", n] for n in names]


def test_numbered_instances_are_the_blocks_and_a_crowded_block_splits_again():
    names = ["stem_conv", "stem_bn"]
    for b in range(1, 4):
        names += [f"conv2_block{b}_{k}" for k in ("0_bn", "0_relu", "1_conv", "1_bn", "2_conv", "concat")]
    names += ["pool2_bn", "pool2_conv", "head"]
    names += [f"big1a_{k}" for k in ("expand_conv", "expand_bn", "dw", "bn", "act", "se_squeeze", "se_reduce",
                                     "se_expand", "se_excite", "project_conv", "project_bn", "drop", "add")]
    named = blocks.name_blocks(_kids(names))
    block = {c: b for (_, c), b in named.items()}
    assert block["stem_bn"] == ("stem",) and block["pool2_conv"] == ("pool2",) and "head" not in block
    assert block["conv2_block2_1_conv"] == ("conv2_block2",)            # no "conv2" box around the instances
    assert block["big1a_se_reduce"] == ("big1a", "big1a_se") and block["big1a_bn"] == ("big1a",)


def test_a_block_is_named_at_its_own_level_even_when_it_holds_one_unit():
    """EfficientNetV2's fused ``block1a`` (expand ratio 1) has only ``block1a_project_conv``, ``_bn`` and
    ``_activation``: it is the block ``block1a`` beside ``block2a``, not ``block1a_project``."""
    names = ["stem_conv", "stem_bn", "stem_activation",
             "block1a_project_conv", "block1a_project_bn", "block1a_project_activation"]
    for b in ("2a", "2b", "3a"):
        names += [f"block{b}_{k}" for k in ("expand_conv", "expand_bn", "expand_activation", "project_conv",
                                            "project_bn")]
    names += ["top_conv", "top_bn", "top_activation"]
    block = {c: b for (_, c), b in blocks.name_blocks(_kids(names)).items()}
    assert block["block1a_project_bn"] == ("block1a",) and block["block2a_project_bn"] == ("block2a",)
    assert block["stem_bn"] == ("stem",)


def test_a_prefix_shared_by_every_layer_is_no_block():
    names = [f"net_stage_{s}_block_{b}_{k}" for s in (0, 1) for b in range(3) for k in ("dw", "norm", "pw")]
    block = {c: b for (_, c), b in blocks.name_blocks(_kids(names)).items()}
    assert block["net_stage_1_block_2_pw"] == ("net_stage_1_block_2",)


def test_an_instance_number_after_what_a_layer_does_makes_the_blocks():
    """keras.applications' MobileNet names its depthwise separable block K ``conv_pad_K``, ``conv_dw_K``,
    ``conv_dw_K_bn`` … ``conv_pw_K_relu``: the number comes after the layer's role, so the shared prefix
    ``conv`` holds all 13 blocks. The number is what makes the blocks, titled ``conv_*_K``; the classifier
    ``conv_preds`` has no number and is in none."""
    names = ["conv1", "conv1_bn", "conv1_relu"]
    for b in range(1, 14):
        names += [f"conv_pad_{b}"] if b in (2, 4, 6, 12) else []
        names += [f"conv_{u}_{b}{s}" for u in ("dw", "pw") for s in ("", "_bn", "_relu")]
    names += ["global_average_pooling2d", "dropout", "conv_preds", "reshape_2", "predictions"]
    block = {c: b for (_, c), b in blocks.name_blocks(_kids(names), lambda c: c in names[-5:-3]).items()}
    assert block["conv1_bn"] == ("conv1",) and block["conv_dw_1_bn"] == ("conv_*_1",)
    assert block["conv_pad_2"] == block["conv_pw_2_relu"] == ("conv_*_2",) and block["conv_dw_13"] == ("conv_*_13",)
    assert "conv_preds" not in block and "predictions" not in block


def test_a_number_that_comes_back_is_no_instance():
    """Names whose numbers repeat along the run (``unit_1``, ``unit_2``, ``unit_1`` …) are not instances in a
    row: no blocks by number."""
    names = ["stem"] + [f"unit_{r}_{k}" for r in ("a", "b", "c", "d") for k in range(4)] + ["head"]
    assert not any(b and "*" in b[0] for b in blocks.name_blocks(_kids(names)).values())
    names = ["stem"] + [f"unit_{r}_{k}" for k in range(4) for r in ("a", "b", "c", "d")] + ["head"]
    assert blocks.name_blocks(_kids(names))[(("model",), "unit_c_2")] == ("unit_*_2",)      # in a row: blocks


def test_a_numbered_block_of_numbered_units_is_one_block_and_an_unnamed_merge_closes_the_block_before_it():
    names = ["stem_conv", "stem_bn"]
    order = list(names)
    reads = {}
    for b in range(1, 4):
        units = [f"part{b}_unit{u}_{k}" for u in (1, 2, 3) for k in ("act", "conv", "bn")]
        order += units + [f"add_{b}"]            # a residual addition Keras names only after its class
        reads[(("model",), f"add_{b}")] = {units[-1], f"add_{b - 1}" if b > 1 else "stem_bn"}
    order += ["flatten", "head"]
    reads[(("model",), "flatten")] = {"add_3"}
    auto = {f"add_{b}" for b in range(1, 4)} | {"flatten"}
    named = blocks.name_blocks(_kids(order), lambda c: c in auto, reads)
    block = {c: b for (_, c), b in named.items()}
    assert block["part2_unit3_bn"] == ("part2",)           # not part2_unit1 … part2_unit3 side by side
    assert block["add_2"] == ("part2",)                    # it adds part2's output to the shortcut: part2's
    assert "flatten" not in block and "head" not in block  # one input: after the block, not in it


def test_branches_of_unnamed_layers_are_the_module_of_the_merge_that_ends_them():
    """An Inception-like flat model: a stem, then modules of parallel branches of unnamed layers concatenated by
    a named merge (one module with a merge inside); the stem is no module: every path passes its last layer."""
    order, reads, k = [], {}, 0

    def layer(name, *srcs):
        order.append(name)
        reads[(("model",), name)] = set(srcs)
        return name

    def unnamed(*srcs):
        nonlocal k
        k += 1
        return layer(f"conv2d_{k}", *srcs)

    x = unnamed()
    x = layer("max_pooling2d", unnamed(x))                       # the stem: a chain
    for m in range(3):
        a, b = unnamed(x), unnamed(unnamed(x))
        if m == 2:                                               # a merge inside the module (mixed9_0)
            b = layer("mixed2_0", unnamed(b), unnamed(b))
        x = layer(f"mixed{m}", a, b)
    layer("predictions", x)
    auto = {c for c in order if c.startswith(("conv2d_", "max_pooling2d"))}
    block = {c: b for (_, c), b in blocks.name_blocks(_kids(order), lambda c: c in auto, reads).items()}
    assert "conv2d_1" not in block and "max_pooling2d" not in block     # the stem
    assert block["conv2d_3"] == block["conv2d_5"] == block["mixed0"] == ("mixed0",)
    assert block["mixed2_0"] == block["mixed2"] == ("mixed2",) and "predictions" not in block


def test_cells_named_branch_first_are_the_cells_their_named_merges_end():
    """A NASNet-like flat model: each cell reads the two cells before it, runs parallel branches named by kind
    first and cell last (``sep_1_left_3``, ``sep_2_left_3``), adds each to its input and ends in a named
    concatenation ``concat_3``; Keras runs the layers depth by depth, the branches side by side. Name prefixes
    would make blocks of branch kinds across cells (``relu``, ``sep`` in every cell); the cells are what the
    merges after which few values cross end. The stem before the first cell and the head after the last are no
    cell."""
    order, reads = [], {}

    def layer(name, *srcs):
        order.append(name)
        reads[(("model",), name)] = set(srcs)
        return name

    stem = layer("stem_bn", layer("stem_conv"))
    prev, cur = stem, stem
    for c in range(4):
        sides = {"left": cur, "mid": cur, "right": prev}
        x = {side: src for side, src in sides.items()}
        for kind in ("relu", "sep_1", "sep_2"):
            x = {side: layer(f"{kind}_{side}_{c}", x[side]) for side in sides}
        adds = [layer(f"add_{side}_{c}", x[side], src) for side, src in sides.items()]
        prev, cur = cur, layer(f"concat_{c}", *adds, cur)
    layer("predictions", layer("pool", cur))
    block = {c: b for (_, c), b in blocks.name_blocks(_kids(order), reads=reads).items()}
    assert "stem_conv" not in block and "stem_bn" not in block and "pool" not in block
    for c in range(4):
        assert {x for x in order if x.endswith(f"_{c}")} == {x for x, b in block.items() if b == (f"concat_{c}",)}


def test_a_small_model_keeps_its_layers():
    assert blocks.name_blocks(_kids(["conv_1", "conv_1_bn", "dense"])) == {}


def test_a_statement_whose_source_cannot_be_read_is_titled_by_what_it_does():
    """Code run by ``python -c`` or ``exec`` has no source lines to read the assigned name from: the statement's
    box beside the model is titled by its ops (``square, mean``), never an empty box."""
    import numpy as np

    import autodiff_viz as adv

    code = (
        "cell = adv.layers.SimpleRNNCell(4, name='cell')\n"
        "rnn = adv.Sequential([adv.layers.RNN(cell, name='rnn'), adv.layers.Dense(1, name='head')], name='seq')\n"
        "with adv.GradientTape() as tape:\n"
        "    rnn_loss = adv.mean(adv.square(rnn(sequence)))\n"
    )
    ns = {"adv": adv, "sequence": adv.constant(np.random.default_rng(0).normal(size=(2, 6, 3)))}
    exec(compile(code, "<string>", "exec"), ns)
    tr = ns["tape"].trace(ns["rnn_loss"])
    titles = [g.title for g in folding.hierarchy(tr).groups.values() if g.parent is None]
    assert titles == ["seq", "square, mean"], titles


torch = pytest.importorskip("torch")
import autodiff_viz as adv  # noqa: E402
import autodiff_viz.torch  # noqa: E402,F401


class Block(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.fc = torch.nn.Linear(n, n)
        self.norm = torch.nn.LayerNorm(n)

    def forward(self, x):
        return x + self.norm(torch.tanh(self.fc(x)))


class Stage(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.down = torch.nn.ModuleList([torch.nn.LayerNorm(n), torch.nn.Linear(n, n)])
        self.items = torch.nn.ModuleList([Block(n) for _ in range(3)])

    def forward(self, x):
        for m in self.down:
            x = m(x)
        for m in self.items:
            x = m(x)
        return x


class Net(torch.nn.Module):
    def __init__(self, shared=False):
        super().__init__()
        self.stage = Stage()
        self.one = Block()
        self.shared = shared
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        x = self.stage(x)
        if self.shared:
            for _ in range(3):
                x = self.one(x)
        return self.head(x)


def _trace(model, x):
    with adv.torch.record() as rec:
        loss = model(x).pow(2).mean()
        loss.backward()
    return rec.trace(loss, model)


def _key(tr, title):
    return next(k for k, g in folding.hierarchy(tr).groups.items() if g.title == title)


def _titles(lay):
    return {b.title if b.kind != "repeat" else f"{b.title} × {b.count}": b for b in lay.boxes.values()}


def test_a_list_of_like_modules_opens_with_its_parent_a_list_of_different_modules_stays_one_box():
    torch.manual_seed(0)
    tr = _trace(Net(), torch.randn(2, 4))
    boxes = _titles(folding.layout(tr, expanded={_key(tr, "stage")}))
    assert "Block × 3" in boxes and "stage.down" in boxes, sorted(boxes)
    assert "stage.items" not in boxes


class Layers(torch.nn.ModuleList):
    """A library's own list class (not torch.nn's): it holds blocks, and nobody calls it."""


class Tower(torch.nn.Module):
    """A stage whose blocks sit in a ModuleDict and a ModuleList subclass, indexed by the stage's forward."""

    def __init__(self, n=4):
        super().__init__()
        self.named = torch.nn.ModuleDict({f"b{k}": Block(n) for k in range(2)})
        self.layers = Layers([Block(n) for _ in range(3)])
        self.head = torch.nn.Linear(n, 2)

    def forward(self, x):
        for k in range(2):
            x = self.named[f"b{k}"](x)
        for m in self.layers:
            x = m(x)
        return self.head(x)


def test_any_container_the_recording_saw_no_call_of_opens_with_its_parent_also_after_json():
    """Whether a module ran is what the recording saw (its forward hook), not a guess from its class: a
    ModuleDict and a library's own ModuleList subclass open with their parent, and the trace keeps it in JSON."""
    torch.manual_seed(0)
    tr = _trace(Tower(), torch.randn(2, 4))
    assert tr.idle == {"named", "layers"}
    for t in (tr, adv.Trace.from_json(tr.to_json())):
        boxes = _titles(folding.layout(t, expanded={_key(t, "tower")}))
        assert "Block × 2" in boxes and "Block × 3" in boxes and "head" in boxes, sorted(boxes)
        assert not {"named", "layers"} & set(boxes)


def test_one_block_applied_again_with_its_weights_is_one_box_holding_them():
    torch.manual_seed(0)
    tr = _trace(Net(shared=True), torch.randn(2, 4))
    h = folding.hierarchy(tr)
    assert not h.loops
    rep = next(r for r in h.repeats.values() if r.count == 3 and r.shared)
    assert {tr.node(w).name for w in rep.held} == {"one.fc.weight", "one.fc.bias", "one.norm.weight", "one.norm.bias"}
    lay = folding.layout(tr)
    drawn = {tr.node(b.id).name for b in lay.boxes.values() if b.kind == "node"}
    assert not drawn & {"one.fc.weight", "one.norm.weight"}
    assert all(v is not None for v in rep.grad_norms)


def _cell_over_five_steps():
    """The trace of an ``RNNCell`` called over five time steps, its last state summed."""
    torch.manual_seed(0)
    cell = torch.nn.RNNCell(3, 4)
    xs = torch.randn(5, 2, 3)
    with adv.torch.record() as rec:
        h = torch.zeros(2, 4)
        for t in range(5):
            h = cell(xs[t], h)
        loss = h.sum()
        loss.backward()
    tr = rec.trace(loss, cell)
    return tr


def test_a_cell_called_over_time_steps_stays_a_loop():
    tr = _cell_over_five_steps()
    assert [lp.count for lp in folding.hierarchy(tr).loops.values()] == [5]


def test_opening_one_step_of_a_rolled_loop_unrolls_the_loop_and_opens_that_step():
    """A step's own key (``rnncell#3``, what a learner copies from ``trace.groups()``) opens that step: the loop
    around it unrolls, as opening a box deep inside a model opens the boxes it is drawn in. Before, the step's key
    left the loop rolled, so nothing opened (Mamba2's mixer computes its masks four times, a rolled loop)."""
    tr = _cell_over_five_steps()
    hier = folding.hierarchy(tr)
    (loop,) = hier.loops.values()
    assert any(b.kind == "loop" for b in folding.layout(tr).boxes.values())          # rolled by default
    step = loop.groups[2]
    lay = folding.layout(tr, expanded={step})
    assert not any(b.kind == "loop" for b in lay.boxes.values())
    inside = {nid for nid, path in hier.paths.items() if step in path}
    assert inside and all(lay.boxes[lay.owner[nid]].kind == "node" for nid in inside)
    assert {b.key for b in lay.boxes.values() if b.kind == "group"} >= {k for k in loop.groups if k != step}


class Dropping(torch.nn.Module):
    """A block with stochastic depth: its first instance's rate is 0, so it holds ``nn.Identity`` (no op)."""

    def __init__(self, rate, n=4):
        super().__init__()
        self.fc = torch.nn.Linear(n, n)
        self.drop = torch.nn.Dropout(rate) if rate else torch.nn.Identity()

    def forward(self, x):
        return x + self.drop(torch.tanh(self.fc(x)))


class First(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.fc = torch.nn.Linear(n, n)
        self.norm = torch.nn.LayerNorm(n)

    def forward(self, x):
        return self.norm(self.fc(x))


class Level(torch.nn.Module):
    """A stage: a list of a different first block, then blocks of one class whose rates grow from 0."""

    def __init__(self, n=4, depth=3):
        super().__init__()
        self.blocks = torch.nn.ModuleList([First(n)] + [Dropping(0.1 * k, n) for k in range(depth)])

    def forward(self, x):
        for m in self.blocks:
            x = m(x)
        return x


class Encoder(torch.nn.Module):
    """A backbone that holds only the list of its stages (its parts), of different depths."""

    def __init__(self, n=4):
        super().__init__()
        self.stages = torch.nn.ModuleList([Level(n, 3), Level(n, 2)])

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x


class Segmenter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.encoder(x))


def test_a_backbone_holding_one_list_shows_its_stages_and_a_stage_its_blocks_times_n():
    """Counted through the list, the backbone holds two parts (it is a model, drawn open); a list of different
    blocks some of which repeat opens with its parent; instances of one class that differ only by a part without
    weight (a dropout of rate 0 is an Identity that runs nothing) are one "× N"."""
    torch.manual_seed(0)
    model = Segmenter().train()
    tr = _trace(model, torch.randn(2, 4))
    titles = {b.title for b in folding.layout(tr).boxes.values()}
    assert {"encoder.stages.0", "encoder.stages.1", "head"} <= titles, sorted(titles)
    boxes = _titles(folding.layout(tr, expanded={_key(tr, "encoder.stages.0")}))
    assert "encoder.stages.0.blocks.0" in boxes and "Dropping × 3" in boxes, sorted(boxes)


class TwoTowers(torch.nn.Module):
    """Two encoders and a head its own forward computes from their outputs (normalise, compare, scale), as a
    contrastive model writes it; the encoder's attention-like module computes its ops inside itself."""

    def __init__(self, n=4):
        super().__init__()
        self.left, self.right = torch.nn.Linear(n, n), torch.nn.Linear(n, n)
        self.scale = torch.nn.Parameter(torch.tensor(2.0))

    def forward(self, a, b):
        u, v = self.left(a), self.right(b)
        u = u / u.pow(2).sum(-1, keepdim=True).sqrt()
        v = v / v.pow(2).sum(-1, keepdim=True).sqrt()
        sim = (u @ v.t()) * self.scale.exp()
        labels = torch.arange(len(sim))
        return torch.nn.functional.cross_entropy(sim, labels)


class Mixer(torch.nn.Module):
    """A module whose own ops (a dozen of them) are its computation, as an attention's are."""

    def __init__(self, n=4):
        super().__init__()
        self.q, self.k = torch.nn.Linear(n, n), torch.nn.Linear(n, n)

    def forward(self, x):
        q, k = self.q(x), self.k(x)
        w = (q @ k.t() / 2).softmax(-1)
        h = w @ x
        return ((h - h.mean(-1, keepdim=True)) / (h.std(-1, keepdim=True) + 1)).tanh().relu()


def test_a_long_computation_in_a_models_own_forward_is_one_box_and_its_loss_stays_drawn():
    torch.manual_seed(0)
    model = TwoTowers()
    with adv.torch.record() as rec:
        loss = model(torch.randn(3, 4), torch.randn(3, 4))
        loss.backward()
    tr = rec.trace(loss, model)
    boxes = _titles(folding.layout(tr))
    computed = [t for t in boxes if t.endswith(" ops)")]
    assert computed == ["u, v, sim (12 ops)"], sorted(boxes)        # by the names its statements assign
    assert "left" in boxes and "right" in boxes and "scale" in boxes          # the parts and the weight stay
    ops = [t for t, b in boxes.items() if b.kind == "node" and tr.node(b.id).kind == "op"]
    assert any("cross_entropy" in t or t == "loss" for t in ops), ops           # the loss is drawn, not folded
    key = boxes[computed[0]].key
    opened = _titles(folding.layout(tr, expanded={key}))
    assert not any(t.endswith(" ops)") for t in opened)                      # a click shows the ops


def test_the_ops_a_module_computes_itself_stay_its_own():
    torch.manual_seed(0)
    tr = _trace(torch.nn.Sequential(Mixer(), torch.nn.Linear(4, 2)), torch.randn(3, 4))
    boxes = _titles(folding.layout(tr, expanded={_key(tr, "0")}))
    assert not any(t.endswith(" ops)") for t in boxes), sorted(boxes)


class Scan(torch.nn.Module):
    """A state-space layer written as a Python loop between two projections, as Mamba's reference path and a
    learner's hand-written RNN are: the loop's ops are the module's own, several dozen of them."""

    def __init__(self, n=4, steps=6):
        super().__init__()
        self.in_proj, self.out_proj = torch.nn.Linear(n, n), torch.nn.Linear(n, n)
        self.a = torch.nn.Parameter(torch.full((n,), -0.5))
        self.steps = steps

    def forward(self, x):
        u = self.in_proj(x)
        h, ys = torch.zeros(x.shape[0], x.shape[-1]), []
        for t in range(self.steps):
            h = h * self.a.exp() + u[:, t]
            ys.append(h.tanh() * torch.sigmoid(u[:, t]))
        return self.out_proj(torch.stack(ys, 1))


def test_a_long_loop_a_module_computes_itself_is_one_box_between_its_parts():
    """Opened, a module shows its parts and its own ops; a loop of several dozen ops between its parts is one
    box (titled by its ops and their count) that opens in turn — the picture stays within the budget and the
    projections stay boxes (hf's Mamba mixer: 155 boxes before, its scan drawn op by op)."""
    torch.manual_seed(0)
    tr = _trace(torch.nn.Sequential(Scan(), torch.nn.Linear(4, 2)), torch.randn(3, 6, 4))
    lay = folding.layout(tr, expanded={_key(tr, "0")})
    boxes = _titles(lay)
    loop = [t for t in boxes if t.endswith(" ops)")]
    assert len(loop) == 1 and "0.in_proj" in boxes and "0.out_proj" in boxes, sorted(boxes)
    count = int(loop[0].rsplit("(", 1)[1].split()[0])
    assert count > blocks.MODULE_COMPUTED_ABOVE and count == len(lay.boxes[boxes[loop[0]].id].members)
    inside = folding.layout(tr, expanded={_key(tr, "0"), boxes[loop[0]].key})
    assert not any(t.endswith(" ops)") for t in _titles(inside)) and len(inside.boxes) > len(lay.boxes) + 20


class Pair(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.a, self.b = torch.nn.Linear(n, n), torch.nn.Linear(n, n)

    def forward(self, x):
        return self.b(self.a(x).relu())


class Pooled(torch.nn.Module):
    """A list of blocks with the model's own op between them (Funnel pools between the layers of a block): each
    run of the list holds one block."""

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Pair(), Pair()])

    def forward(self, x):
        x = self.blocks[0](x)
        return self.blocks[1](x[:, ::2].repeat(1, 2))


def test_a_list_cut_by_the_models_own_ops_shows_each_block_as_a_box():
    torch.manual_seed(0)
    tr = _trace(Pooled(), torch.randn(3, 4))
    boxes = _titles(folding.layout(tr))
    assert "blocks.0" in boxes and "blocks.1" in boxes, sorted(boxes)
    assert not any(t.startswith(("blocks.0.", "blocks.1.")) for t in boxes), sorted(boxes)


class MLP(torch.nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.l1, self.l2 = torch.nn.Linear(a, 8), torch.nn.Linear(8, b)

    def forward(self, x):
        return self.l2(self.l1(x).relu())


def test_two_models_of_one_class_are_two_parts_by_the_learners_variables():
    """An autoencoder written as two instances of one class: the figure's boxes, the values between them and the
    weights are called as the learner's code calls them — not "MLP × 2", not ``mlp_1``, not two ``l1.weight``."""
    torch.manual_seed(0)
    encoder, decoder = MLP(4, 2), MLP(2, 4)
    x = torch.randn(3, 4)
    with adv.torch.record() as rec:
        z = encoder(x)
        recon = decoder(z)
        loss = ((recon - x) ** 2).mean()
        loss.backward()
    tr = rec.trace(loss)
    assert not folding.hierarchy(tr).repeats
    text = tr.to_dot("backward")
    assert 'label="encoder (MLP)\\n' in text and 'label="decoder (MLP)\\n' in text
    assert "ḡ_z = ḡ_recon back through decoder" in text
    weights = {n.name for n in tr.nodes if n.kind == "variable"}
    assert weights == {f"{m}.{layer}.{p}" for m in ("encoder", "decoder") for layer in ("l1", "l2")
                       for p in ("weight", "bias")}
    assert adv.Trace.from_json(tr.to_json()).to_dot("backward") == text
    from autodiff_viz.views.widgets import ExplorerState
    st = ExplorerState(tr)
    key = next(k for k, g in folding.hierarchy(tr).groups.items() if g.parent is None and tr.roots.get(g.title) ==
               "decoder")
    box = next(b.id for b in st.layout().boxes.values() if b.key == key)
    assert st.expand(box) and st.crumbs() == [(key, "decoder")]        # the breadcrumb says it as the code does


def test_one_variable_called_over_a_list_of_models_still_repeats():
    """``for block in blocks: h = block(h)`` with a Python list: one variable holds each model in turn, a stack
    of like blocks ("MLP × 3"); their weights are told apart by the models' scopes."""
    torch.manual_seed(0)
    blocks_ = [MLP(4, 4) for _ in range(3)]
    h = torch.randn(3, 4)
    with adv.torch.record() as rec:
        for block in blocks_:
            h = block(h)
        loss = h.pow(2).mean()
        loss.backward()
    tr = rec.trace(loss)
    assert [(r.title, r.count) for r in folding.hierarchy(tr).repeats.values()] == [("MLP", 3)]
    names = [n.name for n in tr.nodes if n.kind == "variable"]
    assert len(names) == len(set(names)) == 12


def test_single_layers_repeat_only_at_one_width():
    """Two layers of one class in a row are "× 2" only when they are alike as a paper draws them: a ``Linear``
    is its weight, so ``Linear(8, 8)`` three times is one box "Linear × 3", and the char-RNN tutorial's
    ``i2h`` (185 → 128) followed by ``h2o`` (128 → 18) are two boxes, each with its formula."""
    torch.manual_seed(0)
    same = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(3)])
    tr = _trace(same, torch.randn(2, 8))
    assert [(r.title, r.count) for r in folding.hierarchy(tr).repeats.values()] == [("Linear", 3)]

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.i2h = torch.nn.Linear(12, 8)
            self.h2o = torch.nn.Linear(8, 3)

        def forward(self, x):
            return self.h2o(self.i2h(x))

    tr = _trace(Head(), torch.randn(2, 12))
    assert not folding.hierarchy(tr).repeats
    boxes = _titles(folding.layout(tr))
    assert "i2h (Linear)" in boxes or "i2h" in boxes, list(boxes)
    assert "h2o (Linear)" in boxes or "h2o" in boxes, list(boxes)


class Staged(torch.nn.Module):
    """An encoder that runs a patch embedding before each stage's blocks (PoolFormer's, PVT's): one call whose
    list items come back in turn."""

    def __init__(self, n=4):
        super().__init__()
        self.embed = torch.nn.ModuleList([torch.nn.Linear(n, n), torch.nn.Linear(n, n)])
        self.stage = torch.nn.ModuleList([torch.nn.ModuleList([Block(n)]),
                                          torch.nn.ModuleList([Block(n), Block(n)])])

    def forward(self, x):
        for embed, stage in zip(self.embed, self.stage):
            x = embed(x)
            for block in stage:
                x = block(x)
        return x


class Wraps(torch.nn.Module):
    """A model whose forward only calls the one model it holds (``PoolFormerModel`` around its encoder)."""

    def __init__(self):
        super().__init__()
        self.encoder = Staged()

    def forward(self, x):
        return self.encoder(x)


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Wraps()
        self.norm = torch.nn.LayerNorm(4)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.norm(self.backbone(x)))


def test_a_model_wrapping_one_model_opens_through_it_to_the_stages_its_loop_runs():
    """The wrapper holds one part, the encoder, which holds the layers: both open, and the figure shows the
    stages. The encoder's loop over its stages (embedding, blocks; embedding, blocks) is one call, not the
    encoder called twice."""
    torch.manual_seed(0)
    tr = _trace(Classifier(), torch.randn(2, 4))
    h = folding.hierarchy(tr)
    assert [g.title for g in h.groups.values()].count("backbone.encoder") == 1
    boxes = _titles(folding.layout(tr))
    assert {"backbone.encoder.stage.0.0", "Block × 2", "norm", "head"} <= set(boxes), sorted(boxes)
    assert not {"backbone", "backbone.encoder"} & set(boxes), sorted(boxes)


class Decoder(torch.nn.Module):
    def __init__(self, n=4, vocab=10):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, n)
        self.layers = torch.nn.ModuleList([Block(n), Block(n)])
        self.final = torch.nn.LayerNorm(n)

    def forward(self, ids):
        x = self.embed(ids.view(-1, ids.shape[-1]))
        for layer in self.layers:
            x = layer(x)
        return self.final(x)


class Holder(torch.nn.Module):
    """Holds the decoder and is never called: the model calls ``self.model.decoder`` past it (OPT)."""

    def __init__(self):
        super().__init__()
        self.decoder = Decoder()


class LanguageModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Holder()
        self.head = torch.nn.Linear(4, 10)

    def forward(self, ids):
        return self.head(self.model.decoder(ids))


def test_a_model_called_past_a_container_is_the_backbone_and_the_learners_own_ops_stay_drawn():
    """The decoder is the architecture (embedding, the layers, the final norm) although it sits in a container
    nobody calls. What the learner's own decoder does to the token ids (``ids.view``) is their code and stays
    drawn; the same op inside a library's model is folded as plumbing (OPT, XLNet in
    ``test_figure_unseen_architectures_5.py``)."""
    torch.manual_seed(0)
    ids = torch.randint(0, 10, (2, 3))
    with adv.torch.record() as rec:
        loss = LanguageModel()(ids).pow(2).mean()
        loss.backward()
    tr = rec.trace(loss)
    boxes = _titles(folding.layout(tr))
    assert {"model.decoder.embed", "Block × 2", "model.decoder.final", "head"} <= set(boxes), sorted(boxes)
    assert "ids.view" in boxes and not any(t.endswith("(no gradient)") for t in boxes), sorted(boxes)


class FeedForward(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.act = act

    def forward(self, x):
        return self.act(self.fc(x))


def test_a_module_two_parents_hold_is_scoped_under_the_one_that_calls_it():
    """One activation module held by both blocks (XLM's one GELU in every ``ffns[i]``): the second block's
    activation is drawn inside the second block, not as a run of the first block's."""
    torch.manual_seed(0)
    act = torch.nn.GELU()
    tr = _trace(torch.nn.Sequential(FeedForward(act), FeedForward(act)), torch.randn(2, 4))
    gelu = [n for n in tr.nodes if n.kind == "op" and n.op == "gelu"]
    assert [n.scope.rsplit("/", 1)[-1] for n in gelu] == ["0.act", "1.act"], [n.scope for n in gelu]
    assert gelu[1].scope.split("/")[-2] == "1"
