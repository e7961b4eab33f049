"""Keras 3's guide "The Functional API", section by section, with only ``keras.`` → ``adv.`` renamed (and
``from keras import layers, ops`` → ``from autodiff_viz import layers, ops``):
https://keras.io/guides/functional_api/

Each test builds the guide's models as written and asserts what the guide shows: ``model.summary()``'s rows
(layer, output shape, parameter count, and the "Connected to" column only where the graph branches), the
shapes of inputs and outputs, the history's keys. The same architectures are built in real Keras in the same
test and their summaries compared row by row; where the guide trains on data it downloads (MNIST, CIFAR-10)
or draws at random, the data is random of the guide's shapes (fewer samples), and the values compared with
Keras are those of the same weights on the same inputs (a forward pass, ``evaluate`` before training).

Not run here, and why:

* "Extract and reuse nodes in the graph of layers" builds ``keras.applications.VGG19()``, which downloads
  ImageNet weights (no network here) and is not part of this package; its two lines
  (``[layer.output for layer in model.layers]`` and a model from those outputs) run on the guide's own
  ``mnist_model`` instead.
* ``keras.datasets.mnist.load_data()`` / ``cifar10.load_data()`` download; random arrays of their shapes
  stand in (tests/test_official_guides_surface.py runs ``adv.datasets.mnist`` from a local server).
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import autodiff_viz as adv  # noqa: E402
from autodiff_viz import layers, ops  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")


@pytest.fixture(autouse=True)
def fresh_names(tmp_path, monkeypatch):
    """Default layer names start at "dense" in both libraries; files the guide writes go to a temp folder."""
    layers.clear_session()
    keras.backend.clear_session()
    monkeypatch.chdir(tmp_path)


def summary_rows(model):
    """The rows of ``model.summary()``'s table here, and whether it has the "Connected to" column."""
    lines = []
    model.summary(print_fn=lines.append)
    text = lines[0]
    rows = [tuple(c.strip() for c in line.split("│")[1:-1]) for line in text.splitlines() if line.startswith("│")]
    return rows, "Connected to" in text


def keras_summary_rows(model):
    """The same facts of real Keras' summary: ``name (Class)``, output shape, parameters; and its column."""
    printed = []
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "400"            # Keras' table (rich) is as wide as the terminal: keep every column
    try:
        model.summary(print_fn=lambda text, **kwargs: printed.append(text))
    finally:
        os.environ.pop("COLUMNS") if columns is None else os.environ.__setitem__("COLUMNS", columns)
    rows = [(f"{layer.name} ({type(layer).__name__})", str(tuple(layer.output.shape)), f"{layer.count_params():,}")
            for layer in model.layers]
    return rows, "Connected to" in "".join(printed)


def assert_summary_as_keras(model, twin, total):
    rows, connected = summary_rows(model)
    keras_rows, keras_connected = keras_summary_rows(twin)
    assert [row[:3] for row in rows] == keras_rows
    assert connected == keras_connected
    assert model.count_params() == twin.count_params() == total
    return rows


# ----- Introduction ------------------------------------------------------------------------------------------
def mnist_model(keras, layers, demonstration=False):
    inputs = keras.Input(shape=(784,))
    if demonstration:
        # Just for demonstration purposes.
        img_inputs = keras.Input(shape=(32, 32, 3))
        assert img_inputs.shape == (None, 32, 32, 3)
    dense = layers.Dense(64, activation="relu")
    x = dense(inputs)
    x = layers.Dense(64, activation="relu")(x)
    outputs = layers.Dense(10)(x)
    return keras.Model(inputs=inputs, outputs=outputs, name="mnist_model")


def test_functional_api__introduction():
    """#introduction: an Input of shape (None, 784), float32; three Dense layers; the summary's rows are
    50,240 + 4,160 + 650 = 55,050 parameters, and (a chain) no "Connected to" column, as Keras 3 shows."""
    model = mnist_model(adv, layers, demonstration=True)
    inputs = model.input
    assert inputs.shape == (None, 784)
    assert inputs.dtype == "float32"
    model.summary()
    rows = assert_summary_as_keras(model, mnist_model(keras, keras.layers, demonstration=True), 55_050)
    assert rows == [("input_layer (InputLayer)", "(None, 784)", "0"), ("dense (Dense)", "(None, 64)", "50,240"),
                    ("dense_1 (Dense)", "(None, 64)", "4,160"), ("dense_2 (Dense)", "(None, 10)", "650")]

    adv.utils.plot_model(model, "my_first_model.png")
    adv.utils.plot_model(model, "my_first_model_with_shape_info.png", show_shapes=True)
    for name in ("my_first_model.png", "my_first_model_with_shape_info.png"):
        with open(name, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_summary_leaves_out_connected_to_exactly_where_keras_does():
    """The defect this guide showed: a functional chain's summary had a "Connected to" column Keras 3 leaves
    out. A branch, a merge, a second input, a shared layer or a layer called twice keeps it, as in Keras."""
    def graphs(keras, layers):
        a = keras.Input((4,))
        b = keras.Input((4,))
        d = layers.Dense(4)
        shared = layers.Dense(4)
        pair = layers.Dense(4)(a)
        yield keras.Model(a, layers.Dense(2)(layers.Dense(3)(a)))                      # a chain
        yield keras.Model(a, [pair, layers.Dense(2)(pair)])                            # an output from the middle
        yield keras.Model(a, layers.add([layers.Dense(4)(a), a]))                      # a skip connection
        yield keras.Model([a, b], layers.concatenate([a, b]))                          # two inputs
        yield keras.Model(a, d(d(a)))                                                  # one layer called twice
        yield keras.Model([a, b], layers.add([shared(a), shared(b)]))                  # a shared layer

    for ours, theirs in zip(graphs(adv, layers), graphs(keras, keras.layers), strict=True):
        assert summary_rows(ours)[1] == keras_summary_rows(theirs)[1], ours.summary_text()
    assert [summary_rows(m)[1] for m in graphs(adv, layers)] == [False, False, True, True, True, True]


def test_functional_layers_and_weights_are_in_keras_order():
    """The defect the ticket model showed: ``model.layers`` listed every Input first, and a dict's outputs in
    insertion order, so the summary's rows and ``get_weights()`` came in another order than Keras' (and
    weights could not pass between the two). Keras orders by depth, deepest first, outputs walked by key."""
    def graphs(keras, layers):
        a = keras.Input((3,), name="a")
        b = keras.Input((2,), name="b")
        deep = layers.Dense(4, name="deep2")(layers.Dense(4, name="deep1")(a))
        joined = layers.concatenate([deep, b], name="join")
        yield keras.Model([a, b], {"z_out": layers.Dense(1, name="z_out")(joined),
                                   "a_out": layers.Dense(2, name="a_out")(joined)})
        skip = layers.Dense(3, name="skip")(a)
        yield keras.Model(a, layers.add([layers.Dense(3, name="long2")(layers.Dense(3, name="long1")(a)), skip]))

    for ours, theirs in zip(graphs(adv, layers), graphs(keras, keras.layers), strict=True):
        assert [layer.name for layer in ours.layers] == [layer.name for layer in theirs.layers]
        assert [w.shape for w in ours.get_weights()] == [tuple(w.shape) for w in theirs.get_weights()]
    assert [layer.name for layer in next(graphs(adv, layers)).layers] == [
        "a", "deep1", "deep2", "b", "join", "a_out", "z_out"]


# ----- Training, evaluation, and inference -------------------------------------------------------------------
def test_functional_api__training_evaluation_and_inference(capsys):
    """#training-evaluation-and-inference: SparseCategoricalCrossentropy from logits, RMSprop, accuracy; fit
    with a validation split logs ``accuracy``, ``loss``, ``val_accuracy``, ``val_loss``; ``evaluate`` gives
    ``[loss, accuracy]``, Keras' values for the same weights (checked before training)."""
    rng = np.random.default_rng(0)
    x_train, y_train = rng.integers(0, 256, (320, 28, 28)), rng.integers(0, 10, 320)     # MNIST's shapes
    x_test, y_test = rng.integers(0, 256, (100, 28, 28)), rng.integers(0, 10, 100)

    x_train = x_train.reshape(320, 784).astype("float32") / 255
    x_test = x_test.reshape(100, 784).astype("float32") / 255

    model = mnist_model(adv, layers)
    model.compile(
        loss=adv.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=adv.optimizers.RMSprop(),
        metrics=["accuracy"],
    )
    twin = mnist_model(keras, keras.layers)
    twin.set_weights(model.get_weights())
    twin.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                 optimizer=keras.optimizers.RMSprop(), metrics=["accuracy"])
    np.testing.assert_allclose(model.evaluate(x_test, y_test, verbose=0), twin.evaluate(x_test, y_test, verbose=0),
                               rtol=1e-5)

    history = model.fit(x_train, y_train, batch_size=64, epochs=2, validation_split=0.2)

    test_scores = model.evaluate(x_test, y_test, verbose=2)
    print("Test loss:", test_scores[0])
    print("Test accuracy:", test_scores[1])
    out = capsys.readouterr().out
    assert "Epoch 2/2" in out and "4/4" in out and "- val_loss: " in out
    assert sorted(history.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert history.history["loss"][1] < history.history["loss"][0]
    assert out.splitlines()[-2:] == [f"Test loss: {test_scores[0]}", f"Test accuracy: {test_scores[1]}"]
    assert 0.0 <= test_scores[1] <= 1.0


# ----- Save and serialize ------------------------------------------------------------------------------------
def test_functional_api__save_and_serialize():
    """#save-and-serialize: ``model.save`` then ``load_model`` recreates the same model from the file
    (Keras 3 wants the ``.keras`` extension the guide gives)."""
    model = mnist_model(adv, layers)
    x = np.random.default_rng(1).random((3, 784)).astype("float32")
    before = model.predict(x, verbose=0)
    model.save("my_model.keras")
    del model
    # Recreate the exact same model purely from the file:
    model = adv.models.load_model("my_model.keras")
    assert model.name == "mnist_model" and [layer.name for layer in model.layers][1:] == ["dense", "dense_1",
                                                                                        "dense_2"]
    np.testing.assert_array_equal(model.predict(x, verbose=0), before)


# ----- Use the same graph of layers to define multiple models --------------------------------------------------
def encoder_and_autoencoder(keras, layers):
    encoder_input = keras.Input(shape=(28, 28, 1), name="img")
    x = layers.Conv2D(16, 3, activation="relu")(encoder_input)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.MaxPooling2D(3)(x)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.Conv2D(16, 3, activation="relu")(x)
    encoder_output = layers.GlobalMaxPooling2D()(x)

    encoder = keras.Model(encoder_input, encoder_output, name="encoder")

    x = layers.Reshape((4, 4, 1))(encoder_output)
    x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
    x = layers.Conv2DTranspose(32, 3, activation="relu")(x)
    x = layers.UpSampling2D(3)(x)
    x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
    decoder_output = layers.Conv2DTranspose(1, 3, activation="relu")(x)

    autoencoder = keras.Model(encoder_input, decoder_output, name="autoencoder")
    return encoder, autoencoder


def test_functional_api__use_the_same_graph_of_layers_to_define_multiple_models():
    """#use-the-same-graph-of-layers-to-define-multiple-models: the encoder (18,672 parameters, output (None,
    16)) and the autoencoder built on the same layers (28,241; output (None, 28, 28, 1), the input's shape);
    the two models share the encoder's weights. Keras' values for the same weights on the same images."""
    encoder, autoencoder = encoder_and_autoencoder(adv, layers)
    encoder.summary()
    autoencoder.summary()
    k_encoder, k_autoencoder = encoder_and_autoencoder(keras, keras.layers)
    assert_summary_as_keras(encoder, k_encoder, 18_672)
    rows = assert_summary_as_keras(autoencoder, k_autoencoder, 28_241)
    assert rows[-1] == ("conv2d_transpose_3 (Conv2DTranspose)", "(None, 28, 28, 1)", "145")
    assert all(any(w is v for v in autoencoder.weights) for w in encoder.weights)

    k_autoencoder.set_weights(autoencoder.get_weights())
    images = np.random.default_rng(2).random((2, 28, 28, 1)).astype("float32")
    np.testing.assert_allclose(autoencoder(images).numpy(), k_autoencoder(images).numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(encoder(images).numpy(), k_encoder(images).numpy(), rtol=1e-4, atol=1e-5)


# ----- All models are callable, just like layers ---------------------------------------------------------------
def encoder_and_decoder(keras, layers):
    encoder_input = keras.Input(shape=(28, 28, 1), name="original_img")
    x = layers.Conv2D(16, 3, activation="relu")(encoder_input)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.MaxPooling2D(3)(x)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.Conv2D(16, 3, activation="relu")(x)
    encoder_output = layers.GlobalMaxPooling2D()(x)

    encoder = keras.Model(encoder_input, encoder_output, name="encoder")

    decoder_input = keras.Input(shape=(16,), name="encoded_img")
    x = layers.Reshape((4, 4, 1))(decoder_input)
    x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
    x = layers.Conv2DTranspose(32, 3, activation="relu")(x)
    x = layers.UpSampling2D(3)(x)
    x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
    decoder_output = layers.Conv2DTranspose(1, 3, activation="relu")(x)

    decoder = keras.Model(decoder_input, decoder_output, name="decoder")

    autoencoder_input = keras.Input(shape=(28, 28, 1), name="img")
    encoded_img = encoder(autoencoder_input)
    decoded_img = decoder(encoded_img)
    autoencoder = keras.Model(autoencoder_input, decoded_img, name="autoencoder")
    return encoder, decoder, autoencoder


def get_model(keras, layers):
    inputs = keras.Input(shape=(128,))
    outputs = layers.Dense(1)(inputs)
    return keras.Model(inputs, outputs)


def ensemble(keras, layers):
    model1 = get_model(keras, layers)
    model2 = get_model(keras, layers)
    model3 = get_model(keras, layers)

    inputs = keras.Input(shape=(128,))
    y1 = model1(inputs)
    y2 = model2(inputs)
    y3 = model3(inputs)
    outputs = layers.average([y1, y2, y3])
    ensemble_model = keras.Model(inputs=inputs, outputs=outputs)
    return ensemble_model, (model1, model2, model3)


def test_functional_api__all_models_are_callable_just_like_layers():
    """#all-models-are-callable-just-like-layers: the autoencoder as two nested models (rows ``encoder
    (Functional)`` 18,672 and ``decoder (Functional)`` 9,569); an ensemble that averages three models."""
    encoder, decoder, autoencoder = encoder_and_decoder(adv, layers)
    encoder.summary()
    decoder.summary()
    autoencoder.summary()
    k_encoder, k_decoder, k_autoencoder = encoder_and_decoder(keras, keras.layers)
    assert_summary_as_keras(encoder, k_encoder, 18_672)
    assert_summary_as_keras(decoder, k_decoder, 9_569)
    rows = assert_summary_as_keras(autoencoder, k_autoencoder, 28_241)
    assert rows == [("img (InputLayer)", "(None, 28, 28, 1)", "0"), ("encoder (Functional)", "(None, 16)", "18,672"),
                    ("decoder (Functional)", "(None, 28, 28, 1)", "9,569")]
    k_autoencoder.set_weights(autoencoder.get_weights())
    images = np.random.default_rng(3).random((2, 28, 28, 1)).astype("float32")
    np.testing.assert_allclose(autoencoder(images).numpy(), k_autoencoder(images).numpy(), rtol=1e-4, atol=1e-5)

    ensemble_model, members = ensemble(adv, layers)
    k_ensemble, _ = ensemble(keras, keras.layers)
    assert ensemble_model.count_params() == k_ensemble.count_params() == 3 * 129
    assert summary_rows(ensemble_model)[1] == keras_summary_rows(k_ensemble)[1] is True
    x = np.random.default_rng(4).random((5, 128)).astype("float32")
    np.testing.assert_allclose(ensemble_model(x).numpy(), np.mean([m(x).numpy() for m in members], axis=0),
                               rtol=1e-6)
    k_ensemble.set_weights(ensemble_model.get_weights())
    np.testing.assert_allclose(ensemble_model(x).numpy(), k_ensemble(x).numpy(), rtol=1e-5)


# ----- Manipulate complex graph topologies -----------------------------------------------------------------------
def ticket_model(keras, layers):
    num_tags = 12  # Number of unique issue tags
    num_words = 10000  # Size of vocabulary obtained when preprocessing text data
    num_departments = 4  # Number of departments for predictions

    title_input = keras.Input(shape=(None,), name="title")  # Variable-length sequence of ints
    body_input = keras.Input(shape=(None,), name="body")  # Variable-length sequence of ints
    tags_input = keras.Input(shape=(num_tags,), name="tags")  # Binary vectors of size `num_tags`

    # Embed each word in the title into a 64-dimensional vector
    title_features = layers.Embedding(num_words, 64)(title_input)
    # Embed each word in the text into a 64-dimensional vector
    body_features = layers.Embedding(num_words, 64)(body_input)

    # Reduce sequence of embedded words in the title into a single 128-dimensional vector
    title_features = layers.LSTM(128)(title_features)
    # Reduce sequence of embedded words in the body into a single 32-dimensional vector
    body_features = layers.LSTM(32)(body_features)

    # Merge all available features into a single large vector via concatenation
    x = layers.concatenate([title_features, body_features, tags_input])

    # Stick a logistic regression for priority prediction on top of the features
    priority_pred = layers.Dense(1, name="priority")(x)
    # Stick a department classifier on top of the features
    department_pred = layers.Dense(num_departments, name="department")(x)

    # Instantiate an end-to-end model predicting both priority and department
    return keras.Model(
        inputs=[title_input, body_input, tags_input],
        outputs={"priority": priority_pred, "department": department_pred},
    )


def test_functional_api__models_with_multiple_inputs_and_outputs(capsys):
    """#models-with-multiple-inputs-and-outputs: three inputs, two named outputs; losses and loss weights
    by list and by output name; fit on dicts logs the total loss and each output's loss. The outputs are
    Keras' for the same weights on the same tickets."""
    model = ticket_model(adv, layers)
    twin = ticket_model(keras, keras.layers)
    rows = assert_summary_as_keras(model, twin, 1_392_097)
    assert rows[7] == ("concatenate (Concatenate)", "(None, 172)", "0", "lstm[0][0], lstm_1[0][0], tags[0][0]")

    adv.utils.plot_model(model, "multi_input_and_output_model.png", show_shapes=True)

    model.compile(
        optimizer=adv.optimizers.RMSprop(1e-3),
        loss=[
            adv.losses.BinaryCrossentropy(from_logits=True),
            adv.losses.CategoricalCrossentropy(from_logits=True),
        ],
        loss_weights=[1.0, 0.2],
    )
    model.compile(
        optimizer=adv.optimizers.RMSprop(1e-3),
        loss={
            "priority": adv.losses.BinaryCrossentropy(from_logits=True),
            "department": adv.losses.CategoricalCrossentropy(from_logits=True),
        },
        loss_weights={"priority": 1.0, "department": 0.2},
    )

    # Dummy input data (64 tickets with bodies of 20 words, where the guide has 1280 of 100)
    rng = np.random.default_rng(5)
    title_data = rng.integers(10000, size=(64, 10))
    body_data = rng.integers(10000, size=(64, 20))
    tags_data = rng.integers(2, size=(64, 12)).astype("float32")

    # Dummy target data
    priority_targets = rng.random(size=(64, 1))
    dept_targets = rng.integers(2, size=(64, 4))

    twin.set_weights(model.get_weights())                      # the same layer order: the same weight order
    inputs = {"title": title_data[:4], "body": body_data[:4], "tags": tags_data[:4]}
    ours, theirs = model(inputs), twin(inputs)
    for name in ("priority", "department"):
        np.testing.assert_allclose(ours[name].numpy(), theirs[name].numpy(), rtol=1e-4, atol=1e-5)

    history = model.fit(
        {"title": title_data, "body": body_data, "tags": tags_data},
        {"priority": priority_targets, "department": dept_targets},
        epochs=2,
        batch_size=32,
    )
    assert sorted(history.history) == ["department_loss", "loss", "priority_loss"]
    logs = {k: v[0] for k, v in history.history.items()}
    assert logs["loss"] == pytest.approx(logs["priority_loss"] + 0.2 * logs["department_loss"], rel=1e-5)
    assert "Epoch 2/2" in capsys.readouterr().out


def toy_resnet(keras, layers):
    inputs = keras.Input(shape=(32, 32, 3), name="img")
    x = layers.Conv2D(32, 3, activation="relu")(inputs)
    x = layers.Conv2D(64, 3, activation="relu")(x)
    block_1_output = layers.MaxPooling2D(3)(x)

    x = layers.Conv2D(64, 3, activation="relu", padding="same")(block_1_output)
    x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
    block_2_output = layers.add([x, block_1_output])

    x = layers.Conv2D(64, 3, activation="relu", padding="same")(block_2_output)
    x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
    block_3_output = layers.add([x, block_2_output])

    x = layers.Conv2D(64, 3, activation="relu")(block_3_output)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(256, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(10)(x)

    return keras.Model(inputs, outputs, name="toy_resnet")


def test_functional_api__a_toy_resnet_model(capsys):
    """#a-toy-resnet-model: two residual ``add`` blocks; 223,242 parameters; the ``add`` rows are connected to
    the two layers they join. Trained one epoch with a validation split on CIFAR-10's shapes."""
    model = toy_resnet(adv, layers)
    model.summary()
    rows = assert_summary_as_keras(model, toy_resnet(keras, keras.layers), 223_242)
    assert ("add (Add)", "(None, 9, 9, 64)", "0", "conv2d_3[0][0], max_pooling2d[0][0]") in rows
    assert ("add_1 (Add)", "(None, 9, 9, 64)", "0", "conv2d_5[0][0], add[0][0]") in rows

    adv.utils.plot_model(model, "mini_resnet.png", show_shapes=True)

    rng = np.random.default_rng(6)
    x_train, y_train = rng.integers(0, 256, (20, 32, 32, 3)), rng.integers(0, 10, (20, 1))   # CIFAR-10's shapes
    x_train = x_train.astype("float32") / 255.0
    y_train = adv.utils.to_categorical(y_train, 10)
    assert y_train.shape == (20, 10)

    model.compile(
        optimizer=adv.optimizers.RMSprop(1e-3),
        loss=adv.losses.CategoricalCrossentropy(from_logits=True),
        metrics=["acc"],
    )
    history = model.fit(x_train[:1000], y_train[:1000], batch_size=64, epochs=1, validation_split=0.2)
    assert sorted(history.history) == ["acc", "loss", "val_acc", "val_loss"]
    assert "1/1" in capsys.readouterr().out


# ----- Shared layers -------------------------------------------------------------------------------------------
def test_functional_api__shared_layers():
    """#shared-layers: one Embedding called on two inputs: one weight matrix, and a gradient that sums what
    both uses send back to it."""
    # Embedding for 1000 unique words mapped to 128-dimensional vectors
    shared_embedding = layers.Embedding(1000, 128)

    # Variable-length sequence of integers
    text_input_a = adv.Input(shape=(None,), dtype="int32")

    # Variable-length sequence of integers
    text_input_b = adv.Input(shape=(None,), dtype="int32")

    # Reuse the same layer to encode both inputs
    encoded_input_a = shared_embedding(text_input_a)
    encoded_input_b = shared_embedding(text_input_b)

    assert encoded_input_a.shape == encoded_input_b.shape == (None, None, 128)
    model = adv.Model([text_input_a, text_input_b], [encoded_input_a, encoded_input_b])
    assert len(model.trainable_variables) == 1 and len(shared_embedding._inbound_nodes) == 2
    a, b = np.array([[1, 2, 3]]), np.array([[3, 3]])
    with adv.GradientTape() as tape:
        ea, eb = model([a, b])
        loss = adv.reduce_sum(ea) + adv.reduce_sum(eb)
    counts = tape.gradient(loss, shared_embedding.embeddings).numpy()[:, 0]
    assert counts[1] == counts[2] == 1 and counts[3] == 3 and counts.sum() == 5


# ----- Extract and reuse nodes in the graph of layers ------------------------------------------------------------
def test_functional_api__extract_and_reuse_nodes_in_the_graph_of_layers():
    """#extract-and-reuse-nodes-in-the-graph-of-layers: the guide's two lines on the guide's mnist_model
    (VGG19's ImageNet weights cannot be downloaded here): every layer's output becomes an output of a
    feature-extraction model, which returns each intermediate activation."""
    model = mnist_model(adv, layers)
    features_list = [layer.output for layer in model.layers]
    feat_extraction_model = adv.Model(inputs=model.input, outputs=features_list)

    img = np.random.random((1, 784)).astype("float32")
    extracted_features = feat_extraction_model(img)
    assert [f.shape for f in extracted_features] == [(1, 784), (1, 64), (1, 64), (1, 10)]
    np.testing.assert_array_equal(extracted_features[-1].numpy(), model(img).numpy())
    hidden = model.layers[1]
    np.testing.assert_allclose(extracted_features[1].numpy(),
                               np.maximum(img @ hidden.kernel.numpy() + hidden.bias.numpy(), 0), rtol=1e-5)


# ----- Extend the API using custom layers -------------------------------------------------------------------------
class CustomDense(layers.Layer):
    def __init__(self, units=32):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(
            shape=(input_shape[-1], self.units),
            initializer="random_normal",
            trainable=True,
        )
        self.b = self.add_weight(
            shape=(self.units,), initializer="random_normal", trainable=True
        )

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b

    def get_config(self):
        return {"units": self.units}


def test_functional_api__extend_the_api_using_custom_layers():
    """#extend-the-api-using-custom-layers: a custom Dense in a functional model; with ``get_config`` the
    model is rebuilt from its config given ``custom_objects``."""
    inputs = adv.Input((4,))
    outputs = CustomDense(10)(inputs)

    model = adv.Model(inputs, outputs)
    config = model.get_config()

    new_model = adv.Model.from_config(config, custom_objects={"CustomDense": CustomDense})
    assert isinstance(new_model.layers[1], CustomDense) and new_model.layers[1].units == 10
    assert new_model(np.ones((2, 4))).shape == (2, 10)
    assert new_model.count_params() == model.count_params() == 50


# ----- Mix-and-match API styles -------------------------------------------------------------------------------------
def test_functional_api__mix_and_match_api_styles(capsys):
    """#mixandmatch-api-styles: a functional model inside a subclassed RNN layer (the features are (1, 10,
    32)), and a custom RNN layer inside a functional model with a static batch size."""
    units = 32
    timesteps = 10
    input_dim = 5

    # Define a Functional model
    inputs = adv.Input((None, units))
    x = layers.GlobalAveragePooling1D()(inputs)
    outputs = layers.Dense(1)(x)
    model = adv.Model(inputs, outputs)

    class CustomRNN(layers.Layer):
        def __init__(self):
            super().__init__()
            self.units = units
            self.projection_1 = layers.Dense(units=units, activation="tanh")
            self.projection_2 = layers.Dense(units=units, activation="tanh")
            # Our previously-defined Functional model
            self.classifier = model

        def call(self, inputs):
            outputs = []
            state = ops.zeros(shape=(inputs.shape[0], self.units))
            for t in range(inputs.shape[1]):
                x = inputs[:, t, :]
                h = self.projection_1(x)
                y = h + self.projection_2(state)
                state = y
                outputs.append(y)
            features = ops.stack(outputs, axis=1)
            print(features.shape)
            return self.classifier(features)

    rnn_model = CustomRNN()
    out = rnn_model(ops.zeros((1, timesteps, input_dim)))
    assert capsys.readouterr().out == "(1, 10, 32)\n" and out.shape == (1, 1)

    batch_size = 16

    class CustomRNN(layers.Layer):
        def __init__(self):
            super().__init__()
            self.units = units
            self.projection_1 = layers.Dense(units=units, activation="tanh")
            self.projection_2 = layers.Dense(units=units, activation="tanh")
            self.classifier = layers.Dense(1)

        def call(self, inputs):
            outputs = []
            state = ops.zeros(shape=(inputs.shape[0], self.units))
            for t in range(inputs.shape[1]):
                x = inputs[:, t, :]
                h = self.projection_1(x)
                y = h + self.projection_2(state)
                state = y
                outputs.append(y)
            features = ops.stack(outputs, axis=1)
            return self.classifier(features)

    # Note that you specify a static batch size for the inputs with the `batch_shape`
    # arg, because the inner computation of `CustomRNN` requires a static batch size
    # (when you create the `state` zeros tensor).
    inputs = adv.Input(batch_shape=(batch_size, timesteps, input_dim))
    x = layers.Conv1D(32, 3)(inputs)
    outputs = CustomRNN()(x)

    model = adv.Model(inputs, outputs)
    assert model.outputs[0].shape == (16, 8, 1)
    assert model(np.zeros((16, 10, 5))).shape == (16, 8, 1)

    rnn_model = CustomRNN()
    _ = rnn_model(ops.zeros((1, 10, 5)))
    assert _.shape == (1, 10, 1)
