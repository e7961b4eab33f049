"""Keras 3's guide "Writing a training loop from scratch in TensorFlow", the sections after its first example,
with only ``keras.`` / ``tf.`` → ``adv.`` renamed: https://keras.io/guides/writing_a_training_loop_from_scratch/
(https://keras.io/guides/writing_a_custom_training_loop_in_tensorflow/). "A first end-to-end example" is in
tests/test_official_guides_surface.py.

The guide's code is written once, in functions that take the library (``keras`` or ``adv``) and its tape
module (``tf`` or ``adv``), so the same source runs here and in real Keras. Each test runs the guide's loop
here, asserts what the guide prints (the log lines, the summary's parameter counts), then runs the same source
in real Keras from the same weights on the same batches and asserts the same losses, accuracies and weights.

Changes, each for a reason:

* Data: random arrays of MNIST's shapes (the labels follow a rule a model can learn), a few batches instead
  of 60,000 digits; the comparison datasets are unshuffled (``.batch`` without ``.shuffle``) so both
  libraries see the same batches.
* ``@tf.function`` (the section "Speeding-up your training step with tf.function" and the later train steps):
  the functions run undecorated. Here everything runs eagerly, so that every step can be recorded and drawn;
  ``adv.function`` raises an AttributeError that says so. In TensorFlow the decorator compiles the same
  computation, so the numbers are those of the eager run.
* The GAN draws its latent vectors and label noise with ``tf.random.normal`` / ``tf.random.uniform``; to
  compare one step with Keras, the test replaces both libraries' ``random.normal`` / ``random.uniform`` with
  the same pre-drawn arrays (monkeypatch), and says so in the test.

Not run: ``img.save(...)`` of the GAN's generated digit (a PNG file; ``keras.utils.array_to_img`` itself
runs), ``time.time()`` lines are printed but not compared.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import re  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import autodiff_viz as adv  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

GUIDE = "https://keras.io/guides/writing_a_training_loop_from_scratch/"


@pytest.fixture(autouse=True)
def fresh_names():
    adv.layers.clear_session()
    keras.backend.clear_session()


def digits(n, seed):
    """``n`` flattened 28×28 images in [0, 1] (float32) and labels 0–9 given by the brightest of ten stripes of
    the image, so that a model can learn something in a few steps."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 784)).astype("float32")
    y = x[:, :780].reshape(n, 10, 78).mean(axis=2).argmax(axis=1).astype("int64")
    return x, y


def numbers(text):
    """The numbers of the printed log lines, except the ``Time taken`` ones (wall-clock)."""
    lines = [line for line in text.splitlines() if not line.startswith("Time taken")]
    return [float(v) for v in re.findall(r"-?\d+\.\d+|\d+", "\n".join(lines))]


# ----- the guide's code, written once for both libraries ---------------------------------------------------
def get_model(keras):
    inputs = keras.Input(shape=(784,), name="digits")
    x1 = keras.layers.Dense(64, activation="relu")(inputs)
    x2 = keras.layers.Dense(64, activation="relu")(x1)
    outputs = keras.layers.Dense(10, name="predictions")(x2)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def metrics_loop(keras, tf, model, train_dataset, val_dataset, batch_size):
    """#low-level_handling_of_metrics: the training and evaluation loop, as the guide writes it."""
    # Instantiate an optimizer to train the model.
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    # Instantiate a loss function.
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    # Prepare the metrics.
    train_acc_metric = keras.metrics.SparseCategoricalAccuracy()
    val_acc_metric = keras.metrics.SparseCategoricalAccuracy()

    epochs = 2
    for epoch in range(epochs):
        print(f"\nStart of epoch {epoch}")
        start_time = time.time()

        # Iterate over the batches of the dataset.
        for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
            with tf.GradientTape() as tape:
                logits = model(x_batch_train, training=True)
                loss_value = loss_fn(y_batch_train, logits)
            grads = tape.gradient(loss_value, model.trainable_weights)
            optimizer.apply(grads, model.trainable_weights)

            # Update training metric.
            train_acc_metric.update_state(y_batch_train, logits)

            # Log every 100 batches.
            if step % 100 == 0:
                print(
                    f"Training loss (for 1 batch) at step {step}: {float(loss_value):.4f}"
                )
                print(f"Seen so far: {(step + 1) * batch_size} samples")

        # Display metrics at the end of each epoch.
        train_acc = train_acc_metric.result()
        print(f"Training acc over epoch: {float(train_acc):.4f}")

        # Reset training metrics at the end of each epoch
        train_acc_metric.reset_state()

        # Run a validation loop at the end of each epoch.
        for x_batch_val, y_batch_val in val_dataset:
            val_logits = model(x_batch_val, training=False)
            # Update val metrics
            val_acc_metric.update_state(y_batch_val, val_logits)
        val_acc = val_acc_metric.result()
        val_acc_metric.reset_state()
        print(f"Validation acc: {float(val_acc):.4f}")
        print(f"Time taken: {time.time() - start_time:.2f}s")
    return train_acc_metric, val_acc_metric


def regularized_model(keras, tf):
    """#low-level_handling_of_losses_tracked_by_the_model: a layer that adds ``1e-2 · Σ inputs`` as a loss."""
    class ActivityRegularizationLayer(keras.layers.Layer):
        def call(self, inputs):
            self.add_loss(1e-2 * tf.reduce_sum(inputs))
            return inputs

    inputs = keras.Input(shape=(784,), name="digits")
    x = keras.layers.Dense(64, activation="relu")(inputs)
    # Insert activity regularization as a layer
    x = ActivityRegularizationLayer()(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    outputs = keras.layers.Dense(10, name="predictions")(x)

    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def regularized_train_step(keras, tf, model):
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    train_acc_metric = keras.metrics.SparseCategoricalAccuracy()

    # @tf.function  (run eagerly: see the module docstring)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss_value = loss_fn(y, logits)
            # Add any extra losses created during the forward pass.
            loss_value += sum(model.losses)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)
        train_acc_metric.update_state(y, logits)
        return loss_value
    return train_step, train_acc_metric


def gan(keras, tf, batch_size):
    """#end-to-end_example_a_gan_training_loop_from_scratch: the discriminator, the generator, and the train
    step that trains each in turn."""
    discriminator = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            keras.layers.Conv2D(64, (3, 3), strides=(2, 2), padding="same"),
            keras.layers.LeakyReLU(negative_slope=0.2),
            keras.layers.Conv2D(128, (3, 3), strides=(2, 2), padding="same"),
            keras.layers.LeakyReLU(negative_slope=0.2),
            keras.layers.GlobalMaxPooling2D(),
            keras.layers.Dense(1),
        ],
        name="discriminator",
    )

    latent_dim = 128

    generator = keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            # We want to generate 128 coefficients to reshape into a 7x7x128 map
            keras.layers.Dense(7 * 7 * 128),
            keras.layers.LeakyReLU(negative_slope=0.2),
            keras.layers.Reshape((7, 7, 128)),
            keras.layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
            keras.layers.LeakyReLU(negative_slope=0.2),
            keras.layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
            keras.layers.LeakyReLU(negative_slope=0.2),
            keras.layers.Conv2D(1, (7, 7), padding="same", activation="sigmoid"),
        ],
        name="generator",
    )

    # Instantiate one optimizer for the discriminator and another for the generator.
    d_optimizer = keras.optimizers.Adam(learning_rate=0.0003)
    g_optimizer = keras.optimizers.Adam(learning_rate=0.0004)

    # Instantiate a loss function.
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    # @tf.function  (run eagerly: see the module docstring)
    def train_step(real_images):
        # Sample random points in the latent space
        random_latent_vectors = tf.random.normal(shape=(batch_size, latent_dim))
        # Decode them to fake images
        generated_images = generator(random_latent_vectors)
        # Combine them with real images
        combined_images = tf.concat([generated_images, real_images], axis=0)

        # Assemble labels discriminating real from fake images
        labels = tf.concat(
            [tf.ones((batch_size, 1)), tf.zeros((real_images.shape[0], 1))], axis=0
        )
        # Add random noise to the labels - important trick!
        labels += 0.05 * tf.random.uniform(labels.shape)

        # Train the discriminator
        with tf.GradientTape() as tape:
            predictions = discriminator(combined_images)
            d_loss = loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, discriminator.trainable_weights)
        d_optimizer.apply(grads, discriminator.trainable_weights)

        # Sample random points in the latent space
        random_latent_vectors = tf.random.normal(shape=(batch_size, latent_dim))
        # Assemble labels that say "all real images"
        misleading_labels = tf.zeros((batch_size, 1))

        # Train the generator (note that we should *not* update the weights
        # of the discriminator)!
        with tf.GradientTape() as tape:
            predictions = discriminator(generator(random_latent_vectors))
            g_loss = loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, generator.trainable_weights)
        g_optimizer.apply(grads, generator.trainable_weights)
        return d_loss, g_loss, generated_images
    return discriminator, generator, train_step


def gan_loop(keras, dataset, train_step):
    epochs = 1  # In practice you need at least 20 epochs to generate nice digits.
    for epoch in range(epochs):
        print(f"\nStart epoch {epoch}")

        for step, real_images in enumerate(dataset):
            # Train the discriminator & generator on one batch of real images.
            d_loss, g_loss, generated_images = train_step(real_images)

            # Logging.
            if step % 100 == 0:
                # Print metrics
                print(f"discriminator loss at step {step}: {d_loss:.2f}")
                print(f"adversarial loss at step {step}: {g_loss:.2f}")

                # Save one generated image
                img = keras.utils.array_to_img(generated_images[0] * 255.0, scale=False)
                # img.save(os.path.join(save_dir, f"generated_img_{step}.png"))  (no file written here)
                assert img.size == (28, 28)

            # To limit execution time we stop after 10 steps.
            # Remove the lines below to actually train the model!
            if step > 10:
                break


# ----- the tests --------------------------------------------------------------------------------------------
def test_training_loop__low_level_handling_of_metrics(capsys):
    """#low-level_handling_of_metrics: ``SparseCategoricalAccuracy`` is updated after every batch
    (``update_state``), read at the end of the epoch (``result``) and cleared (``reset_state``); a second
    metric does the same on the validation batches. The guide's log lines appear in its order, the accuracies
    lie in [0, 1] and both metrics end cleared; Keras, from the same weights on the same batches, prints the
    same losses and accuracies and ends with the same weights."""
    x, y = digits(160, seed=0)
    x_train, y_train, x_val, y_val = x[:128], y[:128], x[128:], y[128:]
    batch_size = 32

    adv.utils.set_random_seed(0)
    model = get_model(adv)
    train_dataset = adv.data.Dataset.from_tensor_slices((x_train, y_train)).batch(batch_size)
    val_dataset = adv.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size)
    twin = get_model(keras)
    twin.set_weights(model.get_weights())

    train_acc_metric, val_acc_metric = metrics_loop(adv, adv, model, train_dataset, val_dataset, batch_size)
    ours = capsys.readouterr().out
    lines = [line for line in ours.splitlines() if line]
    assert [line.split(":")[0] for line in lines[:6]] == [
        "Start of epoch 0", "Training loss (for 1 batch) at step 0", "Seen so far", "Training acc over epoch",
        "Validation acc", "Time taken"]
    assert lines[2] == "Seen so far: 32 samples" and lines[6] == "Start of epoch 1"
    accuracies = [float(line.split(": ")[1]) for line in lines if "acc" in line]
    assert len(accuracies) == 4 and all(0.0 <= a <= 1.0 for a in accuracies)
    assert float(train_acc_metric.result()) == 0.0 and float(val_acc_metric.result()) == 0.0   # reset_state

    t_train = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(batch_size)
    t_val = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size)
    metrics_loop(keras, tf, twin, t_train, t_val, batch_size)
    theirs = capsys.readouterr().out
    np.testing.assert_allclose(numbers(ours), numbers(theirs), atol=2e-4)
    for a, b in zip(model.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def test_training_loop__low_level_handling_of_losses_tracked_by_the_model():
    """#low-level_handling_of_losses_tracked_by_the_model: ``self.add_loss(1e-2 * tf.reduce_sum(inputs))``
    inside the model; after a forward pass ``model.losses`` holds that one scalar, 0.01 · Σ of the first Dense
    layer's output, and the train step adds ``sum(model.losses)`` to the loss, so its gradient reaches the first
    layer's weights. Keras, from the same weights on the same batches, gives the same losses and weights."""
    x, y = digits(96, seed=1)
    adv.utils.set_random_seed(1)
    model = regularized_model(adv, adv)
    twin = regularized_model(keras, tf)
    twin.set_weights(model.get_weights())

    logits = model(x[:32], training=True)
    assert len(model.losses) == 1 and logits.shape == (32, 10)
    hidden = np.maximum(x[:32] @ model.layers[1].kernel.numpy() + model.layers[1].bias.numpy(), 0.0)
    assert float(model.losses[0]) == pytest.approx(1e-2 * hidden.sum(), rel=1e-5)

    train_step, train_acc_metric = regularized_train_step(adv, adv, model)
    t_step, t_acc = regularized_train_step(keras, tf, twin)
    for start in range(0, 96, 32):
        x_batch, y_batch = x[start:start + 32], y[start:start + 32]
        loss_value = train_step(x_batch, y_batch)
        regularization = float(sum(model.losses))
        t_loss = t_step(tf.constant(x_batch), tf.constant(y_batch))
        assert len(model.losses) == 1 and regularization > 0.0
        assert float(loss_value) == pytest.approx(float(t_loss), rel=2e-4)
    assert float(train_acc_metric.result()) == pytest.approx(float(t_acc.result()))
    for a, b in zip(model.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def test_training_loop__a_gan_training_loop_from_scratch(capsys):
    """#end-to-end_example_a_gan_training_loop_from_scratch: ``discriminator.summary()`` shows the guide's
    74,625 parameters (640 + 73,856 + 129); the generator has 1,339,905, as in Keras. The loop runs on 8 random
    "digits" in batches of 4 (the guide: 70,000 MNIST digits in batches of 64, stopped after 12 steps) and
    prints the guide's lines with finite losses."""
    batch_size = 4
    adv.utils.set_random_seed(2)
    discriminator, generator, train_step = gan(adv, adv, batch_size)
    discriminator.summary()
    out = capsys.readouterr().out
    assert "Total params: 74,625 (291.50 KB)" in out
    assert "│ conv2d (Conv2D)" in out and "73,856" in out
    t_discriminator, t_generator, _ = gan(keras, tf, batch_size)
    assert discriminator.count_params() == t_discriminator.count_params() == 74_625
    assert generator.count_params() == t_generator.count_params() == 1_339_905

    all_digits = np.random.default_rng(2).random((8, 28, 28)).astype("float32")
    all_digits = np.reshape(all_digits, (-1, 28, 28, 1))
    dataset = adv.data.Dataset.from_tensor_slices(all_digits)
    dataset = dataset.shuffle(buffer_size=1024).batch(batch_size)
    gan_loop(adv, dataset, train_step)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "Start epoch 0"
    assert re.fullmatch(r"discriminator loss at step 0: \d+\.\d\d", lines[2])
    assert re.fullmatch(r"adversarial loss at step 0: \d+\.\d\d", lines[3])
    assert len(lines) == 4                                    # two batches; only step 0 logs


def test_training_loop__a_gan_training_loop_from_scratch__one_step_as_keras(monkeypatch):
    """#end-to-end_example_a_gan_training_loop_from_scratch: one ``train_step`` from the same weights on the same
    real images. The step draws three times (``tf.random.normal`` for the latent vectors twice,
    ``tf.random.uniform`` for the label noise); here both libraries' ``random.normal`` / ``random.uniform`` are
    replaced (monkeypatch) by functions that hand out the same pre-drawn arrays, so both steps see the same
    noise. The discriminator's loss, the generator's ("adversarial") loss, the generated images and every
    weight after the two Adam updates agree."""
    batch_size = 2
    rng = np.random.default_rng(3)
    normals = [rng.normal(size=(batch_size, 128)).astype("float32") for _ in range(2)]
    uniform = rng.random((2 * batch_size, 1)).astype("float32")
    real_images = rng.random((batch_size, 28, 28, 1)).astype("float32")

    def same_noise(module, cast):
        queue = list(normals)
        monkeypatch.setattr(module, "normal", lambda shape, *a, **k: cast(queue.pop(0)))
        monkeypatch.setattr(module, "uniform", lambda shape, *a, **k: cast(uniform))

    adv.utils.set_random_seed(3)
    discriminator, generator, train_step = gan(adv, adv, batch_size)
    t_discriminator, t_generator, t_train_step = gan(keras, tf, batch_size)
    t_discriminator.set_weights(discriminator.get_weights())
    t_generator.set_weights(generator.get_weights())

    same_noise(adv.random, adv.constant)
    d_loss, g_loss, generated = train_step(real_images)
    same_noise(tf.random, tf.constant)
    t_d_loss, t_g_loss, t_generated = t_train_step(tf.constant(real_images))

    np.testing.assert_allclose(generated.numpy(), t_generated.numpy(), rtol=1e-4, atol=1e-6)
    assert float(d_loss) == pytest.approx(float(t_d_loss), rel=1e-4)
    assert float(g_loss) == pytest.approx(float(t_g_loss), rel=1e-4)
    for a, b in zip(discriminator.get_weights() + generator.get_weights(),
                    t_discriminator.get_weights() + t_generator.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-6)
