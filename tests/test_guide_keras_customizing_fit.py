"""Keras 3's guide "Customizing what happens in fit()" (its TensorFlow version), section by section, with only
``keras.`` / ``tf.`` → ``adv.`` renamed: https://keras.io/guides/customizing_what_happens_in_fit/
(https://keras.io/guides/custom_train_step_in_tensorflow/).

The guide's classes are written once, in a function that takes the library (``keras`` or ``adv``) and its
tape module (``tf`` or ``adv``): the same source runs in real Keras and here. Each test runs the guide's
cells as written (random data of the guide's shapes), asserts what the guide's logs show (the metric names,
one entry per epoch, a falling loss), and then runs the same class in real Keras from the same weights on the
same data — full batches, unshuffled, so both see the same steps — and asserts the same logs and weights.

Not run: the GAN's training data is MNIST (70,000 digits); here the GAN trains on 8 random images of MNIST's
shape in 2 batches (the ``dataset.take(100)`` of the guide becomes ``take(2)``). Its random latent draws come
from each library's own generator, so the GAN's values are not compared with Keras; its parameter counts are.
``evaluate`` prints one summary line (``1000 samples - loss: ... - mae: ...``) where Keras draws a progress
bar (``32/32 ━━━ ...``); the values are the same.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import autodiff_viz as adv  # noqa: E402
from autodiff_viz import layers  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")


@pytest.fixture(autouse=True)
def fresh_names():
    layers.clear_session()
    keras.backend.clear_session()


# ----- the guide's classes, written once for both libraries ------------------------------------------------
def first_simple_example(keras, tf):
    class CustomModel(keras.Model):
        def train_step(self, data):
            # Unpack the data. Its structure depends on your model and
            # on what you pass to `fit()`.
            x, y = data

            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)  # Forward pass
                # Compute the loss value
                # (the loss function is configured in `compile()`)
                loss = self.compute_loss(y=y, y_pred=y_pred)

            # Compute gradients
            trainable_vars = self.trainable_variables
            gradients = tape.gradient(loss, trainable_vars)

            # Update weights
            self.optimizer.apply(gradients, trainable_vars)

            # Update metrics (includes the metric that tracks the loss)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)

            # Return a dict mapping metric names to current value
            return {m.name: m.result() for m in self.metrics}
    return CustomModel


def going_lower_level(keras, tf):
    class CustomModel(keras.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = keras.metrics.Mean(name="loss")
            self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")
            self.loss_fn = keras.losses.MeanSquaredError()

        def train_step(self, data):
            x, y = data

            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)  # Forward pass
                # Compute our own loss
                loss = self.loss_fn(y, y_pred)

            # Compute gradients
            trainable_vars = self.trainable_variables
            gradients = tape.gradient(loss, trainable_vars)

            # Update weights
            self.optimizer.apply(gradients, trainable_vars)

            # Compute our own metrics
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {
                "loss": self.loss_tracker.result(),
                "mae": self.mae_metric.result(),
            }

        @property
        def metrics(self):
            # We list our `Metric` objects here so that `reset_states()` can be
            # called automatically at the start of each epoch
            # or at the start of `evaluate()`.
            return [self.loss_tracker, self.mae_metric]
    return CustomModel


def supporting_sample_weight(keras, tf):
    class CustomModel(keras.Model):
        def train_step(self, data):
            # Unpack the data. Its structure depends on your model and
            # on what you pass to `fit()`.
            if len(data) == 3:
                x, y, sample_weight = data
            else:
                sample_weight = None
                x, y = data

            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)  # Forward pass
                # Compute the loss value.
                # The loss function is configured in `compile()`.
                loss = self.compute_loss(
                    y=y,
                    y_pred=y_pred,
                    sample_weight=sample_weight,
                )

            # Compute gradients
            trainable_vars = self.trainable_variables
            gradients = tape.gradient(loss, trainable_vars)

            # Update weights
            self.optimizer.apply(gradients, trainable_vars)

            # Update the metrics.
            # Metrics are configured in `compile()`.
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)

            # Return a dict mapping metric names to current value.
            # Note that it will include the loss (tracked in self.metrics).
            return {m.name: m.result() for m in self.metrics}
    return CustomModel


def own_evaluation_step(keras, tf):
    class CustomModel(keras.Model):
        def test_step(self, data):
            # Unpack the data
            x, y = data
            # Compute predictions
            y_pred = self(x, training=False)
            # Updates the metrics tracking the loss
            loss = self.compute_loss(y=y, y_pred=y_pred)
            # Update the metrics.
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            # Return a dict mapping metric names to current value.
            # Note that it will include the loss (tracked in self.metrics).
            return {m.name: m.result() for m in self.metrics}
    return CustomModel


def build(lib, cls):
    # Construct an instance of CustomModel
    inputs = lib.Input(shape=(32,))
    outputs = lib.layers.Dense(1)(inputs)
    return cls(inputs, outputs)


def keras_twin(model, section, **compile_kwargs):
    """The same section's class in real Keras, with this model's weights, compiled the same way."""
    twin = build(keras, section(keras, tf))
    twin.set_weights(model.get_weights())
    twin.compile(**compile_kwargs)
    return twin


def assert_same_run(model, twin, x, y, epochs, **fit_kwargs):
    """Both fit from the same weights on full, unshuffled batches: the same logs, epoch by epoch, and weights."""
    ours = model.fit(x, y, epochs=epochs, batch_size=len(x), shuffle=False, verbose=0, **fit_kwargs).history
    theirs = twin.fit(x, y, epochs=epochs, batch_size=len(x), shuffle=False, verbose=0, **fit_kwargs).history
    assert sorted(ours) == sorted(theirs)
    for key in ours:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=2e-4, err_msg=key)
    for a, b in zip(model.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-6)


def guide_data(rng, *shapes):
    return [rng.random(shape) for shape in shapes]


# ----- the sections -------------------------------------------------------------------------------------------
def test_customizing_fit__a_first_simple_example(capsys):
    """#a-first-simple-example: ``train_step`` with ``self.compute_loss`` and the compiled metrics; the
    progress bar shows ``loss`` and ``mae`` for each of the 3 epochs."""
    CustomModel = first_simple_example(adv, adv)
    # Construct and compile an instance of CustomModel
    inputs = adv.Input(shape=(32,))
    outputs = adv.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])

    # Just use `fit` as usual
    x, y = guide_data(np.random.default_rng(0), (1000, 32), (1000, 1))
    start = model.get_weights()
    history = model.fit(x, y, epochs=3)

    shown = capsys.readouterr().out
    assert [line for line in shown.splitlines() if line.startswith("Epoch")] == ["Epoch 1/3", "Epoch 2/3",
                                                                                   "Epoch 3/3"]
    assert "32/32" in shown and "- loss: " in shown and "- mae: " in shown
    assert list(history.history) == ["loss", "mae"] and len(history.history["loss"]) == 3
    assert history.history["loss"][-1] < history.history["loss"][0]

    model = build(adv, CustomModel)
    model.set_weights(start)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    assert_same_run(model, keras_twin(model, first_simple_example, optimizer="adam", loss="mse", metrics=["mae"]),
                    x, y, epochs=3)


def test_customizing_fit__going_lower_level():
    """#going-lowerlevel: only the optimizer comes from ``compile()``; the model's own ``Mean`` and
    ``MeanAbsoluteError`` are listed in ``metrics`` so fit resets them each epoch (5 epochs)."""
    CustomModel = going_lower_level(adv, adv)
    # Construct an instance of CustomModel
    inputs = adv.Input(shape=(32,))
    outputs = adv.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)

    # We don't pass a loss or metrics here.
    model.compile(optimizer="adam")

    # Just use `fit` as usual -- you can use callbacks, etc.
    x, y = guide_data(np.random.default_rng(1), (1000, 32), (1000, 1))
    start = model.get_weights()
    history = model.fit(x, y, epochs=5, verbose=0)
    assert list(history.history) == ["loss", "mae"] and len(history.history["mae"]) == 5
    assert [m.name for m in model.metrics] == ["loss", "mae"]
    losses = history.history["loss"]
    assert all(b < a for a, b in zip(losses, losses[1:]))   # reset each epoch: a running mean would lag

    model.set_weights(start)
    model.compile(optimizer="adam")
    assert_same_run(model, keras_twin(model, going_lower_level, optimizer="adam"), x, y, epochs=5)


def test_customizing_fit__supporting_sample_weight_and_class_weight():
    """#supporting-sampleweight-amp-classweight: ``sample_weight`` reaches ``train_step`` as the third item
    of ``data`` and weights both the loss and the metrics."""
    CustomModel = supporting_sample_weight(adv, adv)
    # Construct and compile an instance of CustomModel
    inputs = adv.Input(shape=(32,))
    outputs = adv.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])

    # You can now use sample_weight argument
    x, y, sw = guide_data(np.random.default_rng(2), (1000, 32), (1000, 1), (1000, 1))
    start = model.get_weights()
    history = model.fit(x, y, sample_weight=sw, epochs=3, verbose=0)
    assert list(history.history) == ["loss", "mae"] and len(history.history["loss"]) == 3

    model.set_weights(start)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    twin = keras_twin(model, supporting_sample_weight, optimizer="adam", loss="mse", metrics=["mae"])
    assert_same_run(model, twin, x, y, epochs=3, sample_weight=sw)


def test_customizing_fit__providing_your_own_evaluation_step(capsys):
    """#providing-your-own-evaluation-step: ``evaluate`` runs the guide's ``test_step``; its loss and MAE are
    Keras' on the same weights and data (no training, so the values agree exactly up to float32)."""
    CustomModel = own_evaluation_step(adv, adv)
    # Construct an instance of CustomModel
    inputs = adv.Input(shape=(32,))
    outputs = adv.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(loss="mse", metrics=["mae"])

    # Evaluate with our custom test_step
    x, y = guide_data(np.random.default_rng(3), (1000, 32), (1000, 1))
    scores = model.evaluate(x, y)
    assert capsys.readouterr().out.startswith("1000 samples - loss: ")     # one summary line (Keras: a bar)

    twin = keras_twin(model, own_evaluation_step, loss="mse", metrics=["mae"])
    np.testing.assert_allclose(scores, twin.evaluate(x, y, verbose=0), rtol=1e-5)
    # "loss" is a Mean of the 32 batch losses (the last batch holds 8 samples but counts once); the MAE
    # metric counts every sample
    prediction = x @ model.get_weights()[0] + model.get_weights()[1]
    batch_losses = [np.mean((prediction[i:i + 32] - y[i:i + 32]) ** 2) for i in range(0, 1000, 32)]
    np.testing.assert_allclose(scores, [np.mean(batch_losses), np.mean(np.abs(prediction - y))], rtol=1e-5)


def gan_networks(keras, layers):
    # Create the discriminator
    discriminator = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            layers.Conv2D(64, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(128, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.GlobalMaxPooling2D(),
            layers.Dense(1),
        ],
        name="discriminator",
    )

    # Create the generator
    latent_dim = 128
    generator = keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            # We want to generate 128 coefficients to reshape into a 7x7x128 map
            layers.Dense(7 * 7 * 128),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Reshape((7, 7, 128)),
            layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(1, (7, 7), padding="same", activation="sigmoid"),
        ],
        name="generator",
    )
    return discriminator, generator, latent_dim


class GAN(adv.Model):
    """The guide's GAN, word for word but for the names (``tf.shape``/``tf.concat``/``tf.ones``/``tf.zeros``
    and ``keras.random`` → ``adv.``)."""

    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.d_loss_tracker = adv.metrics.Mean(name="d_loss")
        self.g_loss_tracker = adv.metrics.Mean(name="g_loss")
        self.seed_generator = adv.random.SeedGenerator(1337)

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, real_images):
        if isinstance(real_images, tuple):
            real_images = real_images[0]
        # Sample random points in the latent space
        batch_size = adv.shape(real_images)[0]
        random_latent_vectors = adv.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )

        # Decode them to fake images
        generated_images = self.generator(random_latent_vectors)

        # Combine them with real images
        combined_images = adv.concat([generated_images, real_images], axis=0)

        # Assemble labels discriminating real from fake images
        labels = adv.concat(
            [adv.ones((batch_size, 1)), adv.zeros((batch_size, 1))], axis=0
        )
        # Add random noise to the labels - important trick!
        labels += 0.05 * adv.random.uniform(
            adv.shape(labels), seed=self.seed_generator
        )

        # Train the discriminator
        with adv.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply(grads, self.discriminator.trainable_weights)

        # Sample random points in the latent space
        random_latent_vectors = adv.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )

        # Assemble labels that say "all real images"
        misleading_labels = adv.zeros((batch_size, 1))

        # Train the generator (note that we should *not* update the weights
        # of the discriminator)!
        with adv.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply(grads, self.generator.trainable_weights)

        # Update metrics and return their value.
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {
            "d_loss": self.d_loss_tracker.result(),
            "g_loss": self.g_loss_tracker.result(),
        }


def test_customizing_fit__wrapping_up_an_end_to_end_gan_example(capsys):
    """#wrapping-up-an-endtoend-gan-example: a GAN whose ``train_step`` runs two tapes and two optimizers.
    Each tape's gradient reaches only its network's weights; fit logs ``d_loss`` and ``g_loss``; the networks
    have Keras' parameter counts for the same architecture."""
    discriminator, generator, latent_dim = gan_networks(adv, adv.layers)
    k_discriminator, k_generator, _ = gan_networks(keras, keras.layers)
    assert discriminator.count_params() == k_discriminator.count_params() == 74_625
    assert generator.count_params() == k_generator.count_params() == 1_339_905
    assert [w.shape for w in generator.get_weights()] == [tuple(w.shape) for w in k_generator.weights]

    # Prepare the dataset (8 random images of MNIST's shape stand for the 70,000 digits)
    batch_size = 4
    all_digits = np.random.default_rng(4).integers(0, 256, (8, 28, 28))
    all_digits = all_digits.astype("float32") / 255.0
    all_digits = np.reshape(all_digits, (-1, 28, 28, 1))
    dataset = adv.data.Dataset.from_tensor_slices(all_digits)
    dataset = dataset.shuffle(buffer_size=1024).batch(batch_size)

    gan = GAN(discriminator=discriminator, generator=generator, latent_dim=latent_dim)
    gan.compile(
        d_optimizer=adv.optimizers.Adam(learning_rate=0.0003),
        g_optimizer=adv.optimizers.Adam(learning_rate=0.0003),
        loss_fn=adv.losses.BinaryCrossentropy(from_logits=True),
    )
    d_before, g_before = discriminator.get_weights(), generator.get_weights()

    history = gan.fit(dataset.take(2), epochs=1)

    shown = capsys.readouterr().out
    assert "2/2" in shown and "- d_loss: " in shown and "- g_loss: " in shown
    assert list(history.history) == ["d_loss", "g_loss"]
    assert all(np.isfinite(history.history[k][0]) and history.history[k][0] > 0 for k in ("d_loss", "g_loss"))
    assert all(not np.array_equal(a, b) for a, b in zip(d_before, discriminator.get_weights()))
    assert all(not np.array_equal(a, b) for a, b in zip(g_before, generator.get_weights()))
    assert int(gan.d_optimizer.iterations) == int(gan.g_optimizer.iterations) == 2
