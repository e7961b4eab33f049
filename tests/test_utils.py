"""``adv.utils``: Keras 3's to_categorical, normalize, pad_sequences, set_random_seed and plot_model.

The expected arrays are written out from Keras' documented rules (the
examples of ``keras.utils.pad_sequences`` and ``to_categorical`` among them);
plot_model's drawings are checked by reading the DOT text (boxes, labels,
edges, clusters) and, where it matters, by what Graphviz itself parsed.
"""
import os
import re

import graphviz
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.utils import ModelPlot
from autodiff_viz.views import render

U = adv.utils
L = adv.layers


# ---------------------------------------------------------------------------
# to_categorical
# ---------------------------------------------------------------------------
def test_to_categorical_is_one_hot_with_the_class_axis_last_in_float64_as_keras():
    got = U.to_categorical([0, 1, 2, 3], num_classes=4)        # Keras' docstring example
    np.testing.assert_array_equal(got, np.eye(4))
    assert got.dtype == np.float64                              # Keras 3's numpy path: np.zeros
    got = U.to_categorical(np.array([2, 0, 1]))                  # num_classes = max + 1
    np.testing.assert_array_equal(got, [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    got = U.to_categorical([[0, 2], [1, 1]], num_classes=3)      # class axis added last
    assert got.shape == (2, 2, 3)
    np.testing.assert_array_equal(got[0, 1], [0, 0, 1])
    np.testing.assert_array_equal(got[1, 0], [0, 1, 0])


def test_to_categorical_squeezes_a_trailing_axis_of_one_only():
    assert U.to_categorical(np.array([[1], [0], [2]])).shape == (3, 3)       # (n, 1) -> (n, classes)
    np.testing.assert_array_equal(U.to_categorical([[1], [0]], num_classes=2), [[0, 1], [1, 0]])
    assert U.to_categorical([1], num_classes=3).shape == (1, 3)                # a 1-D (1,) stays
    np.testing.assert_array_equal(U.to_categorical(2, num_classes=4), [0, 0, 1, 0])   # a scalar label
    assert U.to_categorical(np.zeros((2, 3, 1), int), num_classes=2).shape == (2, 3, 2)
    assert U.to_categorical(np.zeros((0,), int), num_classes=3).shape == (0, 3)


def test_to_categorical_takes_whole_floats_bools_and_tensors():
    np.testing.assert_array_equal(U.to_categorical([2.0, 0.0]), [[0, 0, 1], [1, 0, 0]])
    np.testing.assert_array_equal(U.to_categorical([True, False]), [[0, 1], [1, 0]])
    np.testing.assert_array_equal(U.to_categorical(adv.constant([1, 0])), [[0, 1], [1, 0]])


@pytest.mark.parametrize("labels, num_classes, error, words", [
    ([0, -1, 2], None, ValueError, ["to_categorical", "[-1]", "0 or more"]),
    ([0, 1.5, 2], None, ValueError, ["to_categorical", "[1.5]", "whole numbers", "argmax"]),
    ([0, np.nan], None, ValueError, ["to_categorical", "nan", "whole numbers"]),
    ([0, 3, 5, 3], 3, ValueError, ["to_categorical", "[3, 5]", "num_classes=3", "num_classes=6"]),
    (["cat", "dog"], None, TypeError, ["to_categorical", "integer class ids", "np.unique"]),
    ([0, 1], 0, ValueError, ["to_categorical", "num_classes", "positive integer"]),
    ([0, 1], 2.5, ValueError, ["to_categorical", "num_classes", "2.5"]),
    ([], None, ValueError, ["to_categorical", "no labels", "num_classes"]),
])
def test_to_categorical_errors_name_the_function_the_labels_and_the_fix(labels, num_classes, error, words):
    with pytest.raises(error) as info:
        U.to_categorical(labels, num_classes=num_classes)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


# ---------------------------------------------------------------------------
# normalize
# ---------------------------------------------------------------------------
def test_normalize_divides_by_the_norm_along_axis_and_keeps_zero_rows_zero():
    np.testing.assert_allclose(U.normalize(np.array([[3.0, 4.0], [0.0, 0.0]])), [[0.6, 0.8], [0.0, 0.0]])
    x = np.array([[3.0, 1.0], [4.0, 0.0]])
    np.testing.assert_allclose(U.normalize(x, axis=0), [[0.6, 1.0], [0.8, 0.0]])
    np.testing.assert_allclose(U.normalize(np.array([1.0, -3.0]), order=1), [0.25, -0.75])
    np.testing.assert_allclose(U.normalize(np.array([1.0, -4.0]), order=np.inf), [0.25, -1.0])
    got = U.normalize([[0, 5], [6, 8]])
    assert got.dtype == np.float32                       # integers become floatx
    np.testing.assert_allclose(got, [[0.0, 1.0], [0.6, 0.8]])
    assert U.normalize(np.array([[3.0, 4.0]], dtype=np.float64)).dtype == np.float64


def test_normalize_of_a_tensor_is_a_recorded_tensor():
    x = adv.Variable([[3.0, 4.0], [0.0, 0.0]])
    with adv.GradientTape() as tape:
        y = U.normalize(x)
        loss = y[0, 0]
    assert isinstance(y, adv.Tensor)
    np.testing.assert_allclose(y.numpy(), [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)
    g = tape.gradient(loss, x).numpy()
    # d(x0/|x|)/dx = (|x|² e0 - x0 x) / |x|³ = ([25, 0] - [9, 12]) / 125 on the first row
    np.testing.assert_allclose(g[0], [16 / 125, -12 / 125], rtol=1e-5)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("kwargs, words", [
    ({"x": np.ones((2, 3)), "axis": 2}, ["normalize", "axis=2", "2 axes"]),
    ({"x": np.float64(3.0)}, ["normalize", "single number"]),
    ({"x": np.ones(3), "order": "fro"}, ["normalize", "order='fro'"]),
])
def test_normalize_errors(kwargs, words):
    with pytest.raises(ValueError) as info:
        U.normalize(**kwargs)
    for w in words:
        assert w in str(info.value)


# ---------------------------------------------------------------------------
# pad_sequences
# ---------------------------------------------------------------------------
SEQ = [[1], [2, 3], [4, 5, 6]]


@pytest.mark.parametrize("kwargs, expected", [
    ({}, [[0, 0, 1], [0, 2, 3], [4, 5, 6]]),                          # Keras' docstring examples
    ({"value": -1}, [[-1, -1, 1], [-1, 2, 3], [4, 5, 6]]),
    ({"padding": "post"}, [[1, 0, 0], [2, 3, 0], [4, 5, 6]]),
    ({"maxlen": 2}, [[0, 1], [2, 3], [5, 6]]),
    ({"maxlen": 2, "truncating": "post"}, [[0, 1], [2, 3], [4, 5]]),
    ({"maxlen": 2, "padding": "post", "truncating": "post"}, [[1, 0], [2, 3], [4, 5]]),
    ({"maxlen": 4}, [[0, 0, 0, 1], [0, 0, 2, 3], [0, 4, 5, 6]]),
    ({"maxlen": 0}, np.zeros((3, 0), np.int32)),
])
def test_pad_sequences_as_keras(kwargs, expected):
    got = U.pad_sequences(SEQ, **kwargs)
    assert isinstance(got, np.ndarray) and got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)
    assert got.shape == np.asarray(expected).shape


def test_pad_sequences_more_cases():
    np.testing.assert_array_equal(U.pad_sequences([[1, 2, 3], [4, 5]], maxlen=2), [[2, 3], [4, 5]])
    np.testing.assert_array_equal(U.pad_sequences([[], [7]]), [[0], [7]])            # an empty sequence
    got = U.pad_sequences([[0.5, 1.5], [2.5]], dtype="float32", value=-1.0)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [[0.5, 1.5], [-1.0, 2.5]])
    np.testing.assert_array_equal(U.pad_sequences([[1.9, 2.2]]), [[1, 2]])            # cast to int32, as Keras
    np.testing.assert_array_equal(U.pad_sequences((np.array([1, 2]), np.array([3]))), [[1, 2], [0, 3]])
    vecs = U.pad_sequences([[[1, 2], [3, 4]], [[5, 6]]])                               # steps that are vectors
    np.testing.assert_array_equal(vecs, [[[1, 2], [3, 4]], [[0, 0], [5, 6]]])
    words = U.pad_sequences([["a"], ["b", "c"]], dtype=object, value="<pad>")
    assert words.tolist() == [["<pad>", "a"], ["b", "c"]]
    assert U.pad_sequences([]).shape == (0, 0)


@pytest.mark.parametrize("args, kwargs, words", [
    ((SEQ,), {"padding": "middle"}, ["pad_sequences", "padding='middle'", "'pre'", "'post'"]),
    ((SEQ,), {"truncating": "end"}, ["pad_sequences", "truncating='end'", "'pre'", "'post'"]),
    (([[[1, 2], [3, 4]], [[5, 6, 7]]],), {}, ["pad_sequences", "sequence 1", "(3,)", "(2,)", "same shape"]),
    (([[1, 2], [[3, 4], [5]]],), {}, ["pad_sequences", "sequence 1", "same shape"]),
    (([1, [2, 3]],), {}, ["pad_sequences", "position 0", "[[1], [2, 3]]"]),
    ((5,), {}, ["pad_sequences", "list of sequences", "int"]),
    ((SEQ,), {"value": "x"}, ["pad_sequences", "'x'", "dtype=object"]),
    ((SEQ,), {"value": np.nan}, ["pad_sequences", "nan", "float32"]),
    ((SEQ,), {"maxlen": -1}, ["pad_sequences", "maxlen", "non-negative"]),
])
def test_pad_sequences_errors(args, kwargs, words):
    with pytest.raises(ValueError) as info:
        U.pad_sequences(*args, **kwargs)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


# ---------------------------------------------------------------------------
# set_random_seed
# ---------------------------------------------------------------------------
def test_set_random_seed_is_the_layers_one_and_makes_weights_repeatable():
    assert U.set_random_seed is L.set_random_seed

    def kernel():
        layer = L.Dense(3)
        layer.build((None, 4))
        return layer.kernel.numpy()
    U.set_random_seed(7)
    a = kernel()
    U.set_random_seed(7)
    np.testing.assert_array_equal(kernel(), a)
    U.set_random_seed(8)
    assert not np.array_equal(kernel(), a)


# ---------------------------------------------------------------------------
# plot_model: reading the DOT
# ---------------------------------------------------------------------------
NODE = re.compile(r'^\s*"(?P<id>[^"]+)" \[(?P<attrs>.*)\]$')
EDGE = re.compile(r'^\s*"(?P<a>[^"]+)" -> "(?P<b>[^"]+)"')
LABEL = re.compile(r'label="((?:[^"\\]|\\.)*)"')


def parse(source):
    """``(boxes, edges, clusters)``: label lines by node id, ``(first label line, first label line)``
    pairs, and per cluster its title and the first label lines of its boxes."""
    boxes, ids, edges, clusters, stack = {}, {}, set(), {}, []
    for line in source.splitlines():
        if line.strip().startswith("subgraph cluster_"):
            stack.append(line.split()[1])
            clusters[stack[-1]] = {"title": None, "boxes": []}
        elif line.strip() == "}" and stack:
            stack.pop()
        elif line.strip().startswith("graph [") and stack:
            clusters[stack[-1]]["title"] = LABEL.search(line).group(1)
        elif EDGE.match(line):
            m = EDGE.match(line)
            edges.add((m.group("a"), m.group("b")))
        elif NODE.match(line):
            m = NODE.match(line)
            lines = LABEL.search(m.group("attrs")).group(1).split("\\n")
            boxes[m.group("id")] = lines
            ids[m.group("id")] = lines[0]
            for name in stack:
                clusters[name]["boxes"].append(lines[0])
    named = {(ids[a], ids[b]) for a, b in edges}
    assert len(named) == len(edges)
    return {ids[k]: v for k, v in boxes.items()}, named, {c["title"]: c["boxes"] for c in clusters.values()}


def graphviz_parsed(source):
    """Node and edge counts as Graphviz itself reads the DOT (``dot -Tplain``)."""
    plain = graphviz.Source(source).pipe(format="plain", encoding="utf-8").splitlines()
    return sum(line.startswith("node ") for line in plain), sum(line.startswith("edge ") for line in plain)


def mlp(name="mlp"):
    return adv.Sequential([L.Input((4,)), L.Dense(8, activation="relu", name=f"{name}_hidden"),
                           L.Dense(3, name=f"{name}_out")], name=name)


def test_plot_sequential_is_a_chain_of_its_layers_without_an_input_box():
    model = mlp()
    plot = U.plot_model(model)
    assert isinstance(plot, ModelPlot)
    boxes, edges, clusters = parse(plot.source)
    assert list(boxes) == ["mlp_hidden (Dense)", "mlp_out (Dense)"]
    assert edges == {("mlp_hidden (Dense)", "mlp_out (Dense)")}
    assert clusters == {}
    assert all(len(lines) == 1 for lines in boxes.values())        # no flags: the name and class only
    assert graphviz_parsed(plot.source) == (2, 1)
    assert plot.boxes == 2 and plot.edges == 1 and "mlp" in repr(plot)


def test_plot_shapes_before_any_call_and_each_flag_adds_its_line():
    model = mlp()
    boxes, _, _ = parse(U.plot_model(model, show_shapes=True, show_dtype=True, show_layer_activations=True,
                                     show_trainable=True).source)
    assert boxes["mlp_hidden (Dense)"] == ["mlp_hidden (Dense)", "Activation: relu", "Input shape: (None, 4)",
                                           "Output shape: (None, 8)", "Output dtype: float32", "Trainable"]
    assert boxes["mlp_out (Dense)"][1:4] == ["Activation: linear", "Input shape: (None, 8)",
                                             "Output shape: (None, 3)"]
    model.get_layer("mlp_out").trainable = False
    source = U.plot_model(model, show_trainable=True, show_layer_names=False).source
    labels = [LABEL.search(line).group(1) for line in source.splitlines() if NODE.match(line)]
    assert labels == [r"Dense\nTrainable", r"Dense\nNon-trainable"]


def test_plot_an_unbuilt_sequential_draws_its_chain_and_refuses_shapes_with_the_fix():
    model = adv.Sequential([L.Dense(8, name="u1"), L.Dense(1, name="u2")], name="no_input")
    boxes, edges, _ = parse(U.plot_model(model).source)
    assert list(boxes) == ["u1 (Dense)", "u2 (Dense)"] and edges == {("u1 (Dense)", "u2 (Dense)")}
    with pytest.raises(ValueError) as info:
        U.plot_model(model, show_shapes=True)
    for words in ("plot_model", "no_input", "u1, u2", "Input(shape=", "model.build((None, 4))", "model(x)"):
        assert words in str(info.value)
    model(np.ones((2, 5), np.float32))
    boxes, _, _ = parse(U.plot_model(model, show_shapes=True).source)
    assert "Output shape: (None, 8)" in boxes["u1 (Dense)"] and "Output shape: (None, 1)" in boxes["u2 (Dense)"]
    assert "Input shape: (None, 8)" in boxes["u2 (Dense)"]


def two_inputs():
    a = L.Input((3,), name="in_a")
    b = L.Input((3,), name="in_b")
    shared = L.Dense(4, activation="tanh", name="shared")
    h = L.Concatenate(name="join")([shared(a), shared(b)])
    y = L.Dense(1, name="head")(h)
    return adv.Model([a, b], [y, h], name="siamese")


def test_plot_functional_two_inputs_shared_layer_drawn_once_with_an_edge_from_each_input():
    model = two_inputs()
    plot = U.plot_model(model, show_shapes=True)
    boxes, edges, _ = parse(plot.source)
    assert set(boxes) == {"in_a (InputLayer)", "in_b (InputLayer)", "shared (Dense)", "join (Concatenate)",
                          "head (Dense)"}
    assert edges == {("in_a (InputLayer)", "shared (Dense)"), ("in_b (InputLayer)", "shared (Dense)"),
                     ("shared (Dense)", "join (Concatenate)"), ("join (Concatenate)", "head (Dense)")}
    assert boxes["in_a (InputLayer)"] == ["in_a (InputLayer)", "Output shape: (None, 3)"]     # no input shape
    assert boxes["shared (Dense)"][1:] == ["Input shape: (None, 3)", "Output shape: (None, 4)"]
    assert boxes["join (Concatenate)"][1:] == ["Input shape: [(None, 4), (None, 4)]", "Output shape: (None, 8)"]
    assert boxes["head (Dense)"][1:] == ["Input shape: (None, 8)", "Output shape: (None, 1)"]
    assert graphviz_parsed(plot.source) == (5, 4)


def test_plot_a_layer_called_on_different_shapes_says_multiple_and_dtypes_follow_the_graph():
    a = L.Input((3,), name="flat_in")
    b = L.Input((5, 3), name="seq_in")
    tokens = L.Input((4,), dtype="int32", name="tokens")
    shared = L.Dense(2, name="both")
    e = L.Flatten(name="flat")(L.Embedding(10, 2, name="emb")(tokens))
    h = L.Concatenate(name="cat")([shared(a), L.Flatten(name="flat2")(shared(b)), e])
    boxes, _, _ = parse(U.plot_model(adv.Model([a, b, tokens], h), show_shapes=True, show_dtype=True).source)
    assert boxes["both (Dense)"][1:3] == ["Input shape: multiple", "Output shape: multiple"]
    assert boxes["tokens (InputLayer)"][-1] == "Output dtype: int32"
    assert boxes["emb (Embedding)"][-1] == "Output dtype: float32"
    assert boxes["flat2 (Flatten)"][1:3] == ["Input shape: (None, 5, 2)", "Output shape: (None, 10)"]


def nested():
    inner_in = L.Input((8,), name="inner_in")
    inner = adv.Model(inner_in, L.Dense(2, name="inner_dense")(inner_in), name="inner")
    tail = adv.Sequential([L.Dense(3, name="tail_a"), L.Dense(1, name="tail_b")], name="tail")
    x = L.Input((4,), name="x")
    y = tail(inner(L.Dense(8, name="pre")(x)))
    return adv.Model(x, y, name="outer")


def test_plot_nested_models_are_one_box_each():
    plot = U.plot_model(nested(), show_shapes=True)
    boxes, edges, clusters = parse(plot.source)
    assert set(boxes) == {"x (InputLayer)", "pre (Dense)", "inner (Functional)", "tail (Sequential)"}
    assert edges == {("x (InputLayer)", "pre (Dense)"), ("pre (Dense)", "inner (Functional)"),
                     ("inner (Functional)", "tail (Sequential)")}
    assert clusters == {}
    assert boxes["inner (Functional)"][1:] == ["Input shape: (None, 8)", "Output shape: (None, 2)"]
    assert boxes["tail (Sequential)"][1:] == ["Input shape: (None, 2)", "Output shape: (None, 1)"]
    assert 'shape="box3d"' in next(line for line in plot.source.splitlines() if "inner (Functional)" in line)


def test_plot_expand_nested_draws_clusters_and_wires_edges_to_the_layers_inside():
    plot = U.plot_model(nested(), show_shapes=True, expand_nested=True)
    boxes, edges, clusters = parse(plot.source)
    assert set(boxes) == {"x (InputLayer)", "pre (Dense)", "inner_in (InputLayer)", "inner_dense (Dense)",
                          "tail_a (Dense)", "tail_b (Dense)"}
    assert clusters == {"inner (Functional)": ["inner_in (InputLayer)", "inner_dense (Dense)"],
                        "tail (Sequential)": ["tail_a (Dense)", "tail_b (Dense)"]}
    assert edges == {("x (InputLayer)", "pre (Dense)"), ("pre (Dense)", "inner_in (InputLayer)"),
                     ("inner_in (InputLayer)", "inner_dense (Dense)"), ("inner_dense (Dense)", "tail_a (Dense)"),
                     ("tail_a (Dense)", "tail_b (Dense)")}
    assert boxes["tail_a (Dense)"][1:] == ["Input shape: (None, 2)", "Output shape: (None, 3)"]
    assert graphviz_parsed(plot.source) == (6, 5)


def test_plot_expand_nested_inside_a_sequential_and_a_model_used_twice():
    block = adv.Sequential([L.Input((4,)), L.Dense(4, name="blk_1"), L.Dense(4, name="blk_2")], name="block")
    model = adv.Sequential([L.Input((4,)), L.Dense(4, name="first"), block, L.Dense(1, name="last")])
    boxes, edges, clusters = parse(U.plot_model(model, expand_nested=True).source)
    assert clusters == {"block (Sequential)": ["blk_1 (Dense)", "blk_2 (Dense)"]}
    assert edges == {("first (Dense)", "blk_1 (Dense)"), ("blk_1 (Dense)", "blk_2 (Dense)"),
                     ("blk_2 (Dense)", "last (Dense)")}
    x = L.Input((4,), name="twice_in")
    twice = adv.Model(x, block(block(x)), name="twice")
    boxes, edges, _ = parse(U.plot_model(twice).source)
    assert list(boxes) == ["twice_in (InputLayer)", "block (Sequential)"]
    assert edges == {("twice_in (InputLayer)", "block (Sequential)"), ("block (Sequential)", "block (Sequential)")}


def test_plot_a_subclassed_model_is_one_box_shapes_once_called():
    class Net(adv.Model):
        def __init__(self):
            super().__init__(name="net")
            self.d = L.Dense(2)

        def call(self, x):
            return self.d(x)
    net = Net()
    boxes, edges, _ = parse(U.plot_model(net).source)
    assert list(boxes) == ["net (Net)"] and edges == set()
    with pytest.raises(ValueError, match=r"plot_model\(show_shapes=True\).*net has never been called.*model\(x\)"):
        U.plot_model(net, show_shapes=True)
    net(np.ones((3, 5), np.float32))
    assert "Output shape: (None, 2)" in parse(U.plot_model(net, show_shapes=True).source)[0]["net (Net)"]


def test_plot_graph_options_and_argument_errors():
    model = mlp()
    source = U.plot_model(model, rankdir="LR", dpi=200).source
    graph = next(line for line in source.splitlines() if line.strip().startswith("graph ["))
    assert 'rankdir="LR"' in graph and 'dpi="200"' in graph
    assert "dpi" not in U.plot_model(model).source
    with pytest.raises(ValueError, match="rankdir='XY'.*'TB'"):
        U.plot_model(model, rankdir="XY")
    with pytest.raises(ValueError, match="dpi must be a positive number"):
        U.plot_model(model, dpi=0)
    with pytest.raises(TypeError, match="plot_model: expects a model"):
        U.plot_model("model")


def test_plot_labels_are_escaped_in_dot_and_svg():
    model = adv.Sequential([L.Input((2,)), L.Dense(1, name='<script>"x"&amp')])
    plot = U.plot_model(model)
    assert r'label="<script>\"x\"&amp;amp (Dense)"' in plot.source
    svg = plot._repr_svg_()
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&amp;amp" in svg


# ---------------------------------------------------------------------------
# plot_model: files, notebooks, and a machine without Graphviz
# ---------------------------------------------------------------------------
def test_plot_writes_svg_dot_and_png(tmp_path):
    model = two_inputs()
    plot = U.plot_model(model, to_file=tmp_path / "m.svg", show_shapes=True)
    text = (tmp_path / "m.svg").read_text(encoding="utf-8")
    assert "<svg" in text and "shared (Dense)" in text and "Output shape: (None, 8)" in text
    assert plot._repr_svg_().startswith("<svg") and "join (Concatenate)" in plot._repr_svg_()
    U.plot_model(model, to_file=str(tmp_path / "m.dot"))
    assert (tmp_path / "m.dot").read_text(encoding="utf-8") == U.plot_model(model).source
    U.plot_model(model, to_file=tmp_path / "m.png", dpi=72)
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot.save(tmp_path / "again.PNG") == str(tmp_path / "again.PNG")


def test_plot_refuses_a_bad_file_before_drawing(tmp_path):
    model = mlp()
    with pytest.raises(ValueError, match=r"plot_model: cannot tell the format of .*m\.jpg.*\.png, \.svg or \.dot"):
        U.plot_model(model, to_file=tmp_path / "m.jpg")
    with pytest.raises(FileNotFoundError, match="plot_model: the folder"):
        U.plot_model(model, to_file=tmp_path / "missing" / "m.svg")
    with pytest.raises(TypeError, match="to_file must be a file name"):
        U.plot_model(model, to_file=3)
    with pytest.raises(ValueError):
        U.plot_model(adv.Sequential([L.Dense(1)]), show_shapes=True, to_file=tmp_path / "m.svg")
    assert os.listdir(tmp_path) == []


def test_plot_without_graphviz_shows_the_builtin_drawing_and_says_how_to_install(monkeypatch, tmp_path):
    model = mlp()
    monkeypatch.setenv("PATH", "/nonexistent")
    plot = U.plot_model(model, show_shapes=True)                         # drawing the DOT needs nothing
    svg = plot._repr_svg_()
    assert svg.startswith("<svg") and "mlp_hidden (Dense)" in svg and "Output shape: (None, 8)" in svg
    assert "apt-get install graphviz" in svg
    for name in ("m.svg", "m.png"):
        with pytest.raises(render.GraphvizNotFound) as info:
            U.plot_model(model, to_file=tmp_path / name)
        for words in (name, "apt-get install graphviz", "brew install graphviz", "conda install -c conda-forge",
                      "to_file='model.dot'"):
            assert words in str(info.value)
    U.plot_model(model, to_file=tmp_path / "m.dot")
    assert os.listdir(tmp_path) == ["m.dot"]


def test_plot_png_when_dot_cannot_make_png_says_so(monkeypatch, tmp_path):
    real = graphviz.Source.pipe

    def no_png(self, format=None, **kwargs):
        if format == "png":
            raise graphviz.CalledProcessError(1, ["dot", "-Tpng"], stderr=b'Format: "png" not recognized.')
        return real(self, format=format, **kwargs)
    monkeypatch.setattr(graphviz.Source, "pipe", no_png)
    with pytest.raises(RuntimeError) as info:
        U.plot_model(mlp(), to_file=tmp_path / "m.png")
    for words in ("plot_model", "cannot write PNG", 'Format: "png" not recognized', "to_file='model.svg'"):
        assert words in str(info.value)
    assert os.listdir(tmp_path) == []


def test_utils_is_exported():
    import autodiff_viz.utils as module
    assert adv.utils is module
    for name in ("to_categorical", "normalize", "pad_sequences", "set_random_seed", "plot_model"):
        assert callable(getattr(adv.utils, name))
