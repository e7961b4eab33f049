"""The default picture of a real model reads like the textbook figure (issue 33).

A CNN (Conv2D → MaxPooling2D → Flatten → Dense → sparse cross-entropy) and an LSTM regressor, traced as a
learner does (``tape.trace(loss, sources=model.trainable_variables)``, ``to_dot()`` with no options): the
model is drawn open one level, each layer a box named as ``summary()`` names it, each weight a node beside
its layer with its ḡ, and every edge out of a layer states that layer's backward formula (``backward_text``).
"""
import numpy as np

import autodiff_viz as adv

L = adv.layers


def _cnn():
    rng = np.random.default_rng(0)
    model = adv.Sequential([L.Input((8, 8, 1)), L.Conv2D(4, 3, activation="relu"), L.MaxPooling2D(2), L.Flatten(),
                            L.Dense(10)])
    x = rng.normal(size=(2, 8, 8, 1)).astype("float32")
    loss_fn = adv.losses.SparseCategoricalCrossentropy(from_logits=True)
    with adv.GradientTape() as tape:
        logits = model(x)
        loss = loss_fn(np.array([1, 3]), logits)
    return tape.trace(loss, sources=model.trainable_variables), model


def test_the_cnn_default_shows_every_layer_by_name_its_weights_and_their_formulas():
    tr, model = _cnn()
    text = tr.to_dot("backward")
    for layer in model.layers:                      # every layer a box, titled as summary() titles it
        assert f"{layer.name} ({type(layer).__name__})" in text
    for v in model.trainable_variables:            # every weight drawn, with its ḡ
        node = tr.node(tr.node_id_of(v))
        line = next(ln for ln in text.splitlines() if f'"bwd_{node.id}" [' in ln)
        assert v.name in line and "ḡ = " in line
    conv, pool, flat, dense = model.layers
    assert f"ḡ_K = correlation of x with (ḡ_{conv.name} ⊙ f′(z))" in text    # the image is a constant: no ḡ_x edge
    for cls in (L.MaxPooling2D, L.Flatten, L.Dense):
        formula = cls.backward_text["x"].split(" = ", 1)[1].split("ḡ_y")[-1]
        assert formula in text, cls.__name__
    assert L.Dense.backward_text["kernel"].replace("ḡ_y", "ḡ_logits") in text     # ḡ_W, in the learner's names
    assert f"ḡ_{flat.name} = (ḡ_logits ⊙ f′(z)) · Wᵀ" in text              # ḡ_x named after the layer it goes to
    assert "VJP of" not in text and "(folded)" not in text and "×1" not in text


def test_weights_not_in_sources_are_faint_and_the_budget_still_folds_deeper():
    tr, model = _cnn()
    kernel = model.layers[-1].kernel
    assert "#bbbbbb" not in next(ln for ln in tr.to_dot("backward").splitlines()     # a source: drawn full
                                 if f'"bwd_{tr.node_id_of(kernel)}" [' in ln)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 8, 8, 1)).astype("float32")
    with adv.GradientTape() as tape:
        loss = adv.sum(model(x))
    faint = tape.trace(loss, sources=[kernel])
    other = model.layers[0].kernel
    line = next(ln for ln in faint.to_dot("backward").splitlines() if f'"bwd_{faint.node_id_of(other)}" [' in ln)
    assert "#bbbbbb" in line                         # conv2d's kernel is not a source: drawn faint
    small = tr.to_dot("backward", budget=4)
    assert "budget of 4 boxes" in small


def test_the_lstm_default_opens_the_model_and_states_the_gate_equations():
    rng = np.random.default_rng(0)
    model = adv.Sequential([L.Input((5, 3)), L.LSTM(4), L.Dense(1)])
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.square(model(rng.normal(size=(2, 5, 3)).astype("float32"))))
    tr = tape.trace(loss, sources=model.trainable_variables)
    text = tr.to_dot("backward")
    assert f"{model.layers[0].name} (LSTM)" in text and f"{model.layers[1].name} (Dense)" in text
    assert "ḡ_W_h = Σ_t h(t−1)ᵀ · [ḡ_i ḡ_f ḡ_c̃ ḡ_o](t)" in text      # the recurrent kernel's gradient
    assert "VJP of" not in text


def test_a_functional_mlp_with_a_skip_connection_shows_the_learners_layer_names_and_their_formulas():
    """``hidden`` and ``head``, the learner's names, title their boxes; the skip's Add copies ḡ to both inputs."""
    rng = np.random.default_rng(0)
    inp = L.Input((4,))
    h = L.Dense(4, activation="tanh", name="hidden")(inp)
    s = L.Add(name="skip")([inp, h])
    model = adv.Model(inp, L.Dense(3, name="head")(s))
    with adv.GradientTape() as tape:
        logits = model(rng.normal(size=(5, 4)).astype("float32"))
        loss = adv.losses.SparseCategoricalCrossentropy(from_logits=True)(np.array([0, 1, 2, 0, 1]), logits)
    text = tape.trace(loss, sources=model.trainable_variables).to_dot("backward")
    assert "hidden (Dense)" in text and "head (Dense)" in text and "skip (Add)" in text
    for v in model.trainable_variables:                 # hidden/kernel, hidden/bias, head/kernel, head/bias
        assert f'label="{"/".join(v.path.split("/")[-2:])}\\n' in text      # by its layer, not a bare `kernel`
    assert "ḡ_skip = (ḡ_logits ⊙ f′(z)) · Wᵀ" in text                     # head's input is the skip's output
    assert "ḡ_hidden = ḡ_skip for every input (a sum copies ḡ to each term)" in text     # the skip's edge to hidden
    assert "ḡ_W = xᵀ · (ḡ_hidden ⊙ f′(z))" in text                       # hidden's kernel, through tanh's f′
    assert "VJP of" not in text and "ᵢ =" not in text


def test_edges_out_of_normalization_and_attention_layers_state_their_formulas():
    """One step of a transformer-like stack: Dense → MultiHeadAttention → LayerNorm → BatchNorm → Dense."""
    rng = np.random.default_rng(0)
    inp = L.Input((3, 4))
    x = L.Dense(4, name="embed")(inp)
    a = L.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")(x, x)
    n = L.LayerNormalization(name="ln")(a)
    b = L.BatchNormalization(name="bn")(n)
    model = adv.Model(inp, L.Dense(1, name="out")(L.Flatten(name="flat")(b)))
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.square(model(rng.normal(size=(2, 3, 4)).astype("float32"), training=True)))
    text = tape.trace(loss, sources=model.trainable_variables).to_dot("backward")
    edges = [ln for ln in text.splitlines() if "->" in ln]

    def out_of(layer):
        box = next(ln for ln in text.splitlines() if f'label="{layer} (' in ln).split('"')[1]
        return " ".join(ln for ln in edges if ln.lstrip().startswith(f'"{box}" ->'))

    assert "ḡ_ln = (γ/σ) · (ḡ_bn − mean_B(ḡ_bn) − x̂ ⊙ mean_B(ḡ_bn ⊙ x̂))" in out_of("bn")
    assert "ḡ_γ = Σ_B (ḡ_bn ⊙ x̂)" in out_of("bn") and "ḡ_β = Σ_B ḡ_bn" in out_of("bn")
    assert "ḡ_mha = (γ/σ) · (ḡ_ln − mean_f(ḡ_ln) − x̂ ⊙ mean_f(ḡ_ln ⊙ x̂))" in out_of("ln")
    mha = out_of("mha")
    assert "ḡ_S = A ⊙ (ḡ_A − rowsum(ḡ_A ⊙ A))" in mha and "ḡ_x = ḡ_Q·W_qᵀ + ḡ_K·W_kᵀ + ḡ_V·W_vᵀ" in mha
    assert "ḡ_V = Aᵀ·ḡ_mha" in mha                                     # ḡ_y in the layer's own name
    assert "VJP of" not in text
