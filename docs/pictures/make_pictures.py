"""Draw the default pictures of docs/pictures.md: python docs/pictures/make_pictures.py [folder].

Each function below records one training step of a small model and returns
its trace (``tape.trace(loss, sources=model.trainable_variables)``) and the
model; :func:`make` draws (each in a fresh naming session) every trace's backward view with no options (the
default picture) into ``folder`` (default: this file's folder) as SVG, with
Graphviz's ``dot`` when it is installed, else the built-in renderer.
tests/test_pictures_docs.py runs it into a temporary folder and checks every
picture names each layer and shows each weight with its ḡ.
"""
import sys
from pathlib import Path

import numpy as np

import autodiff_viz as adv
from autodiff_viz.views import render

L = adv.layers


def cnn():
    adv.layers.set_random_seed(0)
    rng = np.random.default_rng(0)
    model = adv.Sequential([L.Input((8, 8, 1)), L.Conv2D(4, 3, activation="relu", name="conv"),
                            L.MaxPooling2D(2, name="pool"), L.Flatten(name="flat"), L.Dense(10, name="head")],
                           name="cnn")
    images, labels = rng.normal(size=(2, 8, 8, 1)).astype("float32"), np.array([1, 3])
    loss_fn = adv.losses.SparseCategoricalCrossentropy(from_logits=True)
    with adv.GradientTape() as tape:
        logits = model(images)
        loss = loss_fn(labels, logits)
    return tape.trace(loss, sources=model.trainable_variables), model


def lstm_regressor():
    adv.layers.set_random_seed(0)
    rng = np.random.default_rng(0)
    model = adv.Sequential([L.Input((5, 3)), L.LSTM(4, name="lstm"), L.Dense(1, name="out")], name="regressor")
    series, targets = rng.normal(size=(2, 5, 3)).astype("float32"), np.array([[0.5], [-0.25]], "float32")
    with adv.GradientTape() as tape:
        prediction = model(series)
        loss = adv.losses.MeanSquaredError()(targets, prediction)
    return tape.trace(loss, sources=model.trainable_variables), model


def mlp_with_skip():
    adv.layers.set_random_seed(0)
    rng = np.random.default_rng(0)
    inputs = L.Input((4,))
    hidden = L.Dense(4, activation="tanh", name="hidden")(inputs)
    skip = L.Add(name="skip")([inputs, hidden])
    model = adv.Model(inputs, L.Dense(3, name="classes")(skip), name="skip_mlp")
    x, y = rng.normal(size=(5, 4)).astype("float32"), np.array([0, 1, 2, 0, 1])
    with adv.GradientTape() as tape:
        logits = model(x)
        loss = adv.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits)
    return tape.trace(loss, sources=model.trainable_variables), model


def transformer_block():
    adv.layers.set_random_seed(0)
    rng = np.random.default_rng(0)
    tokens = L.Input((3, 4))
    attended = L.MultiHeadAttention(num_heads=2, key_dim=2, name="attention")(tokens, tokens)
    residual = L.Add(name="residual")([tokens, attended])
    normed = L.LayerNormalization(name="norm")(residual)
    mixed = L.Dense(4, activation="relu", name="ffn")(normed)
    model = adv.Model(tokens, L.Dense(1, name="score")(L.Flatten(name="flat")(mixed)), name="block")
    x, y = rng.normal(size=(2, 3, 4)).astype("float32"), np.array([[1.0], [0.0]], "float32")
    with adv.GradientTape() as tape:
        score = model(x)
        loss = adv.losses.MeanSquaredError()(y, score)
    return tape.trace(loss, sources=model.trainable_variables), model


PICTURES = {"cnn.svg": cnn, "lstm_regressor.svg": lstm_regressor, "mlp_with_skip.svg": mlp_with_skip,
            "transformer_block.svg": transformer_block}


def make(folder=None) -> dict:
    """Write every picture into ``folder``; return ``{file: (trace, model)}``."""
    folder = Path(folder) if folder is not None else Path(__file__).resolve().parent
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for name, build in PICTURES.items():
        adv.backend.clear_session()     # layer names as in a fresh kernel (lstm_cell, not lstm_cell_3)
        trace, model = build()
        try:
            svg = trace.to_svg("backward")
        except render.GraphvizNotFound:
            svg = trace.to_svg("backward", renderer="builtin")
        (folder / name).write_text(svg + "\n", encoding="utf-8")
        made[name] = (trace, model)
    return made


if __name__ == "__main__":
    for name in make(sys.argv[1] if len(sys.argv) > 1 else None):
        print("wrote", name)
