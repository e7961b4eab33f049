"""Keras 3's guide "Making new layers and models via subclassing", the sections not in
tests/test_official_guides_surface.py, with only ``keras.`` → ``adv.`` renamed (``from keras import ops,
layers`` → ``from autodiff_viz import ops, layers``): https://keras.io/guides/making_new_layers_and_models_via_subclassing/

The guide's classes are written once, in functions that take the library (``keras`` or ``adv``) and its ``ops``
and ``layers``, so the same source runs here and in real Keras. Each test prints what the guide prints and
asserts the guide's numbers (``weights: 6``, ``{'units': 64}``, the config's keys); where the guide draws random
weights, the same weights go through real Keras in the same test.

Sections and what happens to them:

* "The add_metric() method" and "Beyond object-oriented development: the Functional API" were in the tf.keras
  (Keras 2) version of the guide and are gone from the Keras 3 one, because Keras 3 removed what they use:
  ``Layer.add_metric`` raises ``NotImplementedError`` in Keras 3 and here; a Functional model's
  ``vae.add_loss(kl_loss)`` of a symbolic KL term raises in Keras 3 (``NotImplementedError``) and here (a
  ``TypeError`` at the first op on a symbolic tensor, which says to put the computation in a layer). Both
  tests run the Keras 2 cells and assert that both libraries refuse them; the Functional VAE is then built
  the Keras 3 way (the KL term added in a layer's ``call``) and trained.
* "Backend-agnostic layers and backend-specific layers" shows ``jax.numpy.matmul`` / ``tf.matmul`` /
  ``torch.matmul`` layers as text only; the ``tf.matmul`` one (``adv.matmul`` here) is run.
* "The Model class" shows a ``ResNet`` built from an undefined ``ResNetBlock`` as text only; its structure is
  run with a small block of our own (two Conv2D), trained with ``fit`` and saved with ``save_weights``.
* "Privileged mask argument" has no code; a layer whose ``call`` takes ``mask`` receives the Embedding's mask.
* The VAE trains on 64 random "digits" (MNIST's 60,000 are not needed to check the loop). Its ``Sampling``
  layer draws epsilon with ``keras.random.normal(..., seed=self.seed_generator)``; to compare a training step
  with Keras, the test replaces both libraries' ``random.normal`` (monkeypatch) with one function that returns
  the same array, so both steps use the same noise.
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

GUIDE = "https://keras.io/guides/making_new_layers_and_models_via_subclassing/"


@pytest.fixture(autouse=True)
def fresh_names():
    adv.layers.clear_session()
    keras.backend.clear_session()


# ----- the guide's classes, written once for both libraries ------------------------------------------------
def lazy_linear(keras, ops):
    class Linear(keras.layers.Layer):
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
    return Linear


def mlp_block(keras, ops):
    Linear = lazy_linear(keras, ops)

    class MLPBlock(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.linear_1 = Linear(32)
            self.linear_2 = Linear(32)
            self.linear_3 = Linear(1)

        def call(self, inputs):
            x = self.linear_1(inputs)
            x = keras.activations.relu(x)
            x = self.linear_2(x)
            x = keras.activations.relu(x)
            return self.linear_3(x)
    return MLPBlock


def activity_regularization(keras, ops):
    class ActivityRegularizationLayer(keras.layers.Layer):
        def __init__(self, rate=1e-2):
            super().__init__()
            self.rate = rate

        def call(self, inputs):
            self.add_loss(self.rate * ops.mean(inputs))
            return inputs
    return ActivityRegularizationLayer


def vae_classes(keras, ops, layers):
    class Sampling(layers.Layer):
        """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seed_generator = keras.random.SeedGenerator(1337)

        def call(self, inputs):
            z_mean, z_log_var = inputs
            batch = ops.shape(z_mean)[0]
            dim = ops.shape(z_mean)[1]
            epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
            return z_mean + ops.exp(0.5 * z_log_var) * epsilon

    class Encoder(layers.Layer):
        """Maps MNIST digits to a triplet (z_mean, z_log_var, z)."""

        def __init__(self, latent_dim=32, intermediate_dim=64, name="encoder", **kwargs):
            super().__init__(name=name, **kwargs)
            self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
            self.dense_mean = layers.Dense(latent_dim)
            self.dense_log_var = layers.Dense(latent_dim)
            self.sampling = Sampling()

        def call(self, inputs):
            x = self.dense_proj(inputs)
            z_mean = self.dense_mean(x)
            z_log_var = self.dense_log_var(x)
            z = self.sampling((z_mean, z_log_var))
            return z_mean, z_log_var, z

    class Decoder(layers.Layer):
        """Converts z, the encoded digit vector, back into a readable digit."""

        def __init__(self, original_dim, intermediate_dim=64, name="decoder", **kwargs):
            super().__init__(name=name, **kwargs)
            self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
            self.dense_output = layers.Dense(original_dim, activation="sigmoid")

        def call(self, inputs):
            x = self.dense_proj(inputs)
            return self.dense_output(x)

    class VariationalAutoEncoder(keras.Model):
        """Combines the encoder and decoder into an end-to-end model for training."""

        def __init__(
            self,
            original_dim,
            intermediate_dim=64,
            latent_dim=32,
            name="autoencoder",
            **kwargs
        ):
            super().__init__(name=name, **kwargs)
            self.original_dim = original_dim
            self.encoder = Encoder(latent_dim=latent_dim, intermediate_dim=intermediate_dim)
            self.decoder = Decoder(original_dim, intermediate_dim=intermediate_dim)

        def call(self, inputs):
            z_mean, z_log_var, z = self.encoder(inputs)
            reconstructed = self.decoder(z)
            # Add KL divergence regularization loss.
            kl_loss = -0.5 * ops.mean(
                z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1
            )
            self.add_loss(kl_loss)
            return reconstructed
    return Sampling, VariationalAutoEncoder


def functional_vae(keras, ops, layers, kl_in_a_layer):
    """#beyond-object-oriented-development-the-functional-api (tf.keras version): the Functional VAE; with
    ``kl_in_a_layer`` the KL term is added in a layer's ``call`` (Keras 3), else by ``vae.add_loss``."""
    Sampling, _ = vae_classes(keras, ops, layers)
    original_dim, intermediate_dim, latent_dim = 784, 64, 32

    # Define encoder model.
    original_inputs = keras.Input(shape=(original_dim,), name="encoder_input")
    x = layers.Dense(intermediate_dim, activation="relu")(original_inputs)
    z_mean = layers.Dense(latent_dim, name="z_mean")(x)
    z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
    z = Sampling()((z_mean, z_log_var))
    encoder = keras.Model(inputs=original_inputs, outputs=z, name="encoder")
    assert encoder.output.shape == (None, latent_dim)

    # Define decoder model.
    latent_inputs = keras.Input(shape=(latent_dim,), name="z_sampling")
    x = layers.Dense(intermediate_dim, activation="relu")(latent_inputs)
    outputs = layers.Dense(original_dim, activation="sigmoid")(x)
    decoder = keras.Model(inputs=latent_inputs, outputs=outputs, name="decoder")

    if kl_in_a_layer:                       # Keras 3: the KL term is added inside a layer's call()
        class KLDivergence(layers.Layer):
            def call(self, inputs):
                z_mean, z_log_var, z = inputs
                self.add_loss(-0.5 * ops.mean(z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1))
                return z
        z = KLDivergence()((z_mean, z_log_var, z))

    # Define VAE model.
    outputs = decoder(z)
    vae = keras.Model(inputs=original_inputs, outputs=outputs, name="vae")

    if not kl_in_a_layer:
        # Add KL divergence regularization loss.
        kl_loss = -0.5 * ops.mean(z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1)
        vae.add_loss(kl_loss)
    return vae


# ----- the tests --------------------------------------------------------------------------------------------
def test_subclassing__best_practice_deferring_weight_creation():
    """#best-practice-deferring-weight-creation-until-the-shape-of-the-inputs-is-known: ``Linear(32)`` has no
    weights until its first call; ``build`` then makes ``w`` of shape (input_dim, 32) from the input's last
    axis and ``b`` of shape (32,)."""
    Linear = lazy_linear(adv, ops)
    x = ops.ones((2, 2))

    # At instantiation, we don't know on what inputs this is going to get called
    linear_layer = Linear(32)
    assert linear_layer.weights == [] and not linear_layer.built

    # The layer's weights are created dynamically the first time the layer is called
    y = linear_layer(x)
    assert linear_layer.built and y.shape == (2, 32)
    assert linear_layer.w.shape == (2, 32) and linear_layer.b.shape == (32,)
    np.testing.assert_allclose(y.numpy(), x.numpy() @ linear_layer.w.numpy() + linear_layer.b.numpy(), rtol=1e-6)
    assert linear_layer.weights == [linear_layer.w, linear_layer.b]


def test_subclassing__layers_are_recursively_composable(capsys):
    """#layers-are-recursively-composable: three ``Linear`` inside ``MLPBlock``; the first call builds them all:
    ``weights: 6``, ``trainable weights: 6``. Real Keras prints the same, and from the same weights gives the
    same output."""
    MLPBlock = mlp_block(adv, ops)
    mlp = MLPBlock()
    y = mlp(ops.ones(shape=(3, 64)))  # The first call to the `mlp` will create the weights
    print("weights:", len(mlp.weights))
    print("trainable weights:", len(mlp.trainable_weights))
    assert capsys.readouterr().out.splitlines() == ["weights: 6", "trainable weights: 6"]

    twin = mlp_block(keras, keras.ops)()
    t_y = twin(keras.ops.ones(shape=(3, 64)))
    print("weights:", len(twin.weights))
    print("trainable weights:", len(twin.trainable_weights))
    assert capsys.readouterr().out.splitlines() == ["weights: 6", "trainable weights: 6"]
    for ours, theirs in zip(mlp.weights, twin.weights):
        theirs.assign(ours.numpy())
    np.testing.assert_allclose(y.numpy(), twin(keras.ops.ones(shape=(3, 64))).numpy(), rtol=1e-5)
    assert y.shape == tuple(t_y.shape) == (3, 1)


def test_subclassing__backend_agnostic_and_backend_specific_layers():
    """#backend-agnostic-layers-and-backend-specific-layers: the TensorFlow-specific ``Linear`` calls
    ``tf.matmul`` (``adv.matmul`` here) where the agnostic one calls ``ops.matmul``: the same layer, the same
    output."""
    Agnostic = lazy_linear(adv, ops)

    class Linear(Agnostic):
        def call(self, inputs):
            return adv.matmul(inputs, self.w) + self.b

    x = np.random.default_rng(0).random((3, 5)).astype("float32")
    specific, agnostic = Linear(4), Agnostic(4)
    specific.build(x.shape)
    agnostic.build(x.shape)
    agnostic.set_weights(specific.get_weights())
    np.testing.assert_array_equal(specific(x).numpy(), agnostic(x).numpy())


def test_subclassing__the_add_loss_method__kernel_regularizer_and_fit(capsys):
    """#the-addloss-method (the cells after ``OuterLayer``): a Dense with ``kernel_regularizer=l2(1e-3)`` inside
    a layer puts ``1e-3 · Σ kernel²`` in ``layer.losses``; ``fit`` adds the ``add_loss`` term to a compiled
    loss, and trains on it alone when ``compile`` has no loss. Keras' one-epoch log line has no "Epoch 1/1"
    header (the guide's output: ``1/1 ━━━━ ... - loss: 0.2650``), nor has ours."""
    class OuterLayerWithKernelRegularizer(adv.layers.Layer):
        def __init__(self):
            super().__init__()
            self.dense = adv.layers.Dense(
                32, kernel_regularizer=adv.regularizers.l2(1e-3)
            )

        def call(self, inputs):
            return self.dense(inputs)

    layer = OuterLayerWithKernelRegularizer()
    _ = layer(ops.zeros((1, 1)))

    # This is `1e-3 * sum(layer.dense.kernel ** 2)`,
    # created by the `kernel_regularizer` above.
    print(layer.losses)
    assert len(layer.losses) == 1
    assert float(layer.losses[0]) == pytest.approx(1e-3 * (layer.dense.kernel.numpy() ** 2).sum(), rel=1e-5)
    assert capsys.readouterr().out.startswith("[Tensor(")

    ActivityRegularizationLayer = activity_regularization(adv, ops)
    inputs = adv.Input(shape=(3,))
    outputs = ActivityRegularizationLayer()(inputs)
    model = adv.Model(inputs, outputs)

    rng = np.random.default_rng(0)
    x, y = rng.random((2, 3)), rng.random((2, 3))
    # If there is a loss passed in `compile`, the regularization
    # losses get added to it
    model.compile(optimizer="adam", loss="mse")
    with_mse = model.fit(x, y).history["loss"][0]

    # It's also possible not to pass any loss in `compile`,
    # since the model already has a loss to minimize, via the `add_loss`
    # call during the forward pass!
    model.compile(optimizer="adam")
    alone = model.fit(x, y).history["loss"][0]

    assert with_mse == pytest.approx(((x - y) ** 2).mean() + 1e-2 * x.mean(), rel=1e-5)
    assert alone == pytest.approx(1e-2 * x.mean(), rel=1e-5)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.startswith("1/1 ━") and " - loss: " in line for line in lines)

    t_inputs = keras.Input(shape=(3,))
    t_model = keras.Model(t_inputs, activity_regularization(keras, keras.ops)()(t_inputs))
    t_model.compile(optimizer="adam", loss="mse")
    with pytest.warns(UserWarning, match="does not have any trainable weights"):     # Keras' own remark
        assert t_model.fit(x, y, verbose=2).history["loss"][0] == pytest.approx(with_mse, rel=1e-5)
    keras_lines = capsys.readouterr().out.splitlines()
    assert len(keras_lines) == 1 and not keras_lines[0].startswith("Epoch")


def test_fit_with_one_epoch_prints_no_epoch_header_as_keras(capsys):
    """Keras 3 writes "Epoch k/n" only when n > 1 (verbose 1 and 2); a one-epoch ``fit`` shows the log line
    alone. Found porting the add_loss cells above."""
    x, y = np.ones((4, 2)), np.zeros((4, 1))
    model = adv.Sequential([adv.Input((2,)), adv.layers.Dense(1)])
    model.compile("sgd", "mse")
    for verbose in (1, 2):
        model.fit(x, y, epochs=1, verbose=verbose)
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 1 and lines[0].startswith("1/1 ") and " - loss: " in lines[0], verbose
        model.fit(x, y, epochs=2, verbose=verbose)
        lines = capsys.readouterr().out.splitlines()
        assert [line for line in lines if line.startswith("Epoch")] == ["Epoch 1/2", "Epoch 2/2"], verbose


def test_subclassing__the_add_metric_method_is_gone_in_keras_3():
    """#the-addmetric-method (tf.keras version of the guide): ``LogisticEndpoint`` calls
    ``self.add_metric(acc, name="accuracy")``. Keras 3 removed ``add_metric``; calling the guide's layer raises
    ``NotImplementedError`` in Keras 3 and here, and ours says where a metric goes instead."""
    def logistic_endpoint(keras, tf):
        class LogisticEndpoint(keras.layers.Layer):
            def __init__(self, name=None):
                super().__init__(name=name)
                self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
                self.accuracy_fn = keras.metrics.BinaryAccuracy()

            def call(self, targets, logits, sample_weights=None):
                loss = self.loss_fn(targets, logits, sample_weights)
                self.add_loss(loss)
                acc = self.accuracy_fn(targets, logits, sample_weights)
                self.add_metric(acc, name="accuracy")
                return tf.nn.softmax(logits)
        return LogisticEndpoint

    with pytest.raises(NotImplementedError, match=r"add_metric\(\) was removed in Keras 3.*compile\(metrics="):
        logistic_endpoint(adv, adv)()(adv.ones((2, 2)), adv.ones((2, 2)))
    with pytest.raises(NotImplementedError, match="add_metric"):
        logistic_endpoint(keras, tf)()(tf.ones((2, 2)), tf.ones((2, 2)))


def test_subclassing__you_can_optionally_enable_serialization(capsys):
    """#you-can-optionally-enable-serialization-on-your-layers: a ``get_config`` returning ``{"units": 64}``
    prints ``{'units': 64}``; the one that extends ``super().get_config()`` prints the base keys first, as the
    guide's ``{'name': 'linear_7', 'trainable': True, 'dtype': 'float32', 'units': 64}`` (the number in the
    name counts the layers made before). ``from_config`` rebuilds a layer with the same config."""
    class Linear(adv.layers.Layer):
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

    # Now you can recreate the layer from its config:
    layer = Linear(64)
    config = layer.get_config()
    print(config)
    new_layer = Linear.from_config(config)
    assert new_layer.units == 64

    class Linear(adv.layers.Layer):  # noqa: F811  (the guide redefines it)
        def __init__(self, units=32, **kwargs):
            super().__init__(**kwargs)
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
            config = super().get_config()
            config.update({"units": self.units})
            return config

    layer = Linear(64)
    config = layer.get_config()
    print(config)
    new_layer = Linear.from_config(config)

    out = capsys.readouterr().out.splitlines()
    assert out[0] == "{'units': 64}"
    assert out[1] == f"{{'name': '{layer.name}', 'trainable': True, 'dtype': 'float32', 'units': 64}}"
    assert layer.name.startswith("linear")
    assert new_layer.get_config() == config and new_layer.units == 64


def test_subclassing__privileged_training_argument(capsys):
    """#privileged-training-argument-in-the-call-method: ``CustomDropout`` drops only when ``training`` is true:
    called plainly it returns its input; with ``training=True`` each entry is 0 or 1/(1 − rate) = 2; in ``fit``
    Keras passes ``training=True``, in ``predict`` False."""
    class CustomDropout(adv.layers.Layer):
        def __init__(self, rate, **kwargs):
            super().__init__(**kwargs)
            self.rate = rate
            self.seed_generator = adv.random.SeedGenerator(1337)

        def call(self, inputs, training=None):
            if training:
                return adv.random.dropout(
                    inputs, rate=self.rate, seed=self.seed_generator
                )
            return inputs

    x = np.ones((4, 50), dtype="float32")
    layer = CustomDropout(0.5)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    dropped = layer(x, training=True).numpy()
    assert set(np.unique(dropped)) == {0.0, 2.0}

    seen = []

    class Spy(CustomDropout):
        def call(self, inputs, training=None):
            seen.append(training)
            return super().call(inputs, training=training)

    model = adv.Sequential([adv.Input((50,)), Spy(0.5), adv.layers.Dense(1)])
    model.compile("sgd", "mse")
    seen.clear()
    model.fit(x, np.zeros((4, 1)), batch_size=4, verbose=0)
    model.predict(x, verbose=0)
    assert seen == [True, False]


def test_subclassing__privileged_mask_argument():
    """#privileged-mask-argument-in-the-call-method: a layer whose ``call`` takes ``mask`` receives, without
    being given it, the mask of an ``Embedding(mask_zero=True)`` before it (one boolean per timestep)."""
    received = []

    class MaskedMean(adv.layers.Layer):
        def call(self, inputs, mask=None):
            received.append(mask)
            weights = ops.cast(mask, "float32")[:, :, None]
            return ops.sum(inputs * weights, axis=1) / ops.sum(weights, axis=1)

    tokens = np.array([[3, 5, 0, 0], [1, 2, 4, 0]])
    embedding = adv.layers.Embedding(10, 3, mask_zero=True)
    out = MaskedMean()(embedding(tokens))
    np.testing.assert_array_equal(np.asarray(received[0]), tokens != 0)
    vectors = embedding.embeddings.numpy()[tokens]
    np.testing.assert_allclose(out.numpy()[0], vectors[0, :2].mean(axis=0), rtol=1e-6)


def test_subclassing__the_model_class(tmp_path):
    """#the-model-class: a ``keras.Model`` subclass made of blocks that subclass ``Layer`` lists its layers in
    ``model.layers``, trains with ``fit`` and saves with ``save_weights``. The guide's ``ResNetBlock`` is not
    defined there; here it is two 3×3 Conv2D with a residual sum."""
    class ResNetBlock(adv.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.conv_1 = adv.layers.Conv2D(4, 3, padding="same", activation="relu")
            self.conv_2 = adv.layers.Conv2D(4, 3, padding="same")

        def call(self, inputs):
            return adv.nn.relu(inputs + self.conv_2(self.conv_1(inputs)))

    class ResNet(adv.Model):

        def __init__(self, num_classes=1000):
            super().__init__()
            self.block_1 = ResNetBlock()
            self.block_2 = ResNetBlock()
            self.global_pool = layers.GlobalAveragePooling2D()
            self.classifier = layers.Dense(num_classes)

        def call(self, inputs):
            x = self.block_1(inputs)
            x = self.block_2(x)
            x = self.global_pool(x)
            return self.classifier(x)

    rng = np.random.default_rng(0)
    images, labels = rng.random((8, 6, 6, 4)).astype("float32"), rng.integers(0, 3, 8)
    resnet = ResNet(num_classes=3)
    resnet.compile("adam", adv.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = resnet.fit(images, labels, epochs=3, batch_size=8, verbose=0).history
    assert [type(layer).__name__ for layer in resnet.layers] == [
        "ResNetBlock", "ResNetBlock", "GlobalAveragePooling2D", "Dense"]
    assert len(resnet.trainable_weights) == 2 * 4 + 2 and history["loss"][-1] < history["loss"][0]
    path = str(tmp_path / "resnet.weights.npz")
    resnet.save_weights(path)
    again = ResNet(num_classes=3)
    again(images)
    again.load_weights(path)
    np.testing.assert_array_equal(again.predict(images, verbose=0), resnet.predict(images, verbose=0))


def test_subclassing__putting_it_all_together_the_vae_trains_with_fit(capsys):
    """#putting-it-all-together-an-end-to-end-example: ``VariationalAutoEncoder(784, 64, 32)`` (Sampling,
    Encoder, Decoder) compiled with MSE and fitted; each step's loss is MSE + the KL term added with
    ``add_loss``. On 64 random images, 3 epochs of batches of 32: "Epoch k/3" and the loss falls."""
    _, VariationalAutoEncoder = vae_classes(adv, ops, layers)
    x_train = np.random.default_rng(0).random((64, 784)).astype("float32")

    adv.utils.set_random_seed(0)
    original_dim = 784
    vae = VariationalAutoEncoder(784, 64, 32)

    optimizer = adv.optimizers.Adam(learning_rate=1e-3)
    vae.compile(optimizer, loss=adv.losses.MeanSquaredError())

    history = vae.fit(x_train, x_train, epochs=3, batch_size=32).history
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("Epoch")] == ["Epoch 1/3", "Epoch 2/3",
                                                                                 "Epoch 3/3"]
    assert history["loss"][-1] < history["loss"][0]
    assert len(vae.losses) == 1 and float(vae.losses[0]) >= 0.0          # KL(q ‖ N(0, I)) ≥ 0
    assert len(vae.trainable_weights) == 10 and vae.decoder.dense_output.units == original_dim


def test_subclassing__putting_it_all_together_one_fit_step_as_keras(monkeypatch):
    """#putting-it-all-together-an-end-to-end-example: one ``fit`` step of the VAE from the same weights on the
    same batch gives the loss and the weights real Keras gives. Sampling's epsilon comes from
    ``keras.random.normal(seed=self.seed_generator)`` in each library; the test replaces both ``random.normal``
    with one function returning the same array (monkeypatch), so both draw the same noise.
    The loss is mean((x − x̂)²) − ½·mean(log σ² − μ² − σ² + 1)."""
    rng = np.random.default_rng(1)
    x = rng.random((16, 784)).astype("float32")
    epsilon = rng.normal(size=(16, 32)).astype("float32")
    monkeypatch.setattr(adv.random, "normal", lambda shape, *a, **k: adv.constant(epsilon))
    monkeypatch.setattr(keras.random, "normal", lambda shape, *a, **k: tf.constant(epsilon))

    _, VariationalAutoEncoder = vae_classes(adv, ops, layers)
    _, TwinVAE = vae_classes(keras, keras.ops, keras.layers)
    adv.utils.set_random_seed(1)
    vae, twin = VariationalAutoEncoder(784, 64, 32), TwinVAE(784, 64, 32)
    vae(x)
    twin(x)
    twin.set_weights(vae.get_weights())

    z_mean = vae.encoder.dense_mean(vae.encoder.dense_proj(x)).numpy()
    z_log_var = vae.encoder.dense_log_var(vae.encoder.dense_proj(x)).numpy()
    reconstructed = vae(x).numpy()
    kl = -0.5 * np.mean(z_log_var - z_mean**2 - np.exp(z_log_var) + 1)
    assert float(vae.losses[0]) == pytest.approx(kl, rel=1e-4)

    for model in (vae, twin):
        model.compile(keras.optimizers.Adam(learning_rate=1e-3) if model is twin
                      else adv.optimizers.Adam(learning_rate=1e-3),
                      loss=(keras if model is twin else adv).losses.MeanSquaredError())
    ours = vae.fit(x, x, epochs=1, batch_size=16, shuffle=False, verbose=0).history["loss"][0]
    theirs = twin.fit(x, x, epochs=1, batch_size=16, shuffle=False, verbose=0).history["loss"][0]
    assert ours == pytest.approx(np.mean((x - reconstructed) ** 2) + kl, rel=1e-4)
    assert ours == pytest.approx(theirs, rel=1e-4)
    for a, b in zip(vae.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-6)


def test_subclassing__beyond_object_oriented_development_the_functional_api():
    """#beyond-object-oriented-development-the-functional-api (tf.keras version of the guide): the Functional
    VAE reuses ``Sampling``, then calls ``vae.add_loss(kl_loss)`` with a KL term computed on symbolic tensors.
    Keras 3 refuses that (``NotImplementedError``), and so does the package, at the first op on a symbolic
    tensor, saying to put the computation in a layer. Done that way — the KL term added by a layer's
    ``call`` — the same Functional VAE trains with ``fit``, and Keras 3 gives the same first-step loss."""
    with pytest.raises(TypeError, match=r"symbolic tensor.*put them in a layer"):
        functional_vae(adv, ops, layers, kl_in_a_layer=False)
    with pytest.raises(NotImplementedError):
        functional_vae(keras, keras.ops, keras.layers, kl_in_a_layer=False)

    adv.layers.clear_session()
    keras.backend.clear_session()
    x_train = np.random.default_rng(2).random((32, 784)).astype("float32")
    vae = functional_vae(adv, ops, layers, kl_in_a_layer=True)
    twin = functional_vae(keras, keras.ops, keras.layers, kl_in_a_layer=True)
    twin.set_weights(vae.get_weights())
    epsilon = np.random.default_rng(3).normal(size=(32, 32)).astype("float32")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(adv.random, "normal", lambda shape, *a, **k: adv.constant(epsilon))
        patch.setattr(keras.random, "normal", lambda shape, *a, **k: tf.constant(epsilon))
        # Train.
        optimizer = adv.optimizers.Adam(learning_rate=1e-3)
        vae.compile(optimizer, loss=adv.losses.MeanSquaredError())
        ours = vae.fit(x_train, x_train, epochs=3, batch_size=32, shuffle=False, verbose=0).history["loss"]
        twin.compile(keras.optimizers.Adam(learning_rate=1e-3), loss=keras.losses.MeanSquaredError())
        theirs = twin.fit(x_train, x_train, epochs=3, batch_size=32, shuffle=False,
                            verbose=0).history["loss"]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    assert ours[-1] < ours[0]
