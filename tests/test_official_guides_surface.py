"""Cells of the official TensorFlow and Keras guides that needed the names of issue 37, typed with only
``tf.`` / ``keras.`` → ``adv.`` (and ``from keras import ops`` → ``from autodiff_viz import ops``).

Each test is named after the guide and its section, cites the guide, keeps the cell's structure and prints
what the guide prints; where a cell trains on MNIST the data is a small file in MNIST's format served on
loopback (tests/test_datasets.py's server), never the internet.
"""
import numpy as np
import pytest
from test_datasets import serve_npz, server  # noqa: F401  (server is a fixture)

import autodiff_viz as adv
from autodiff_viz import datasets, ops


def test_tf_introduction_to_gradients__no_gradient_registered(capsys):
    """https://www.tensorflow.org/guide/autodiff#no_gradient_registered — ``tf.image.adjust_contrast`` has no
    gradient registered, so the tape raises ``LookupError`` rather than returning None."""
    image = adv.Variable([[[0.5, 0.0, 0.0]]])
    delta = adv.Variable(0.1)

    with adv.GradientTape() as tape:
        new_image = adv.image.adjust_contrast(image, delta)

    try:
        print(tape.gradient(new_image, [image, delta]))
        assert False   # This should not happen.
    except LookupError as e:
        print(f'{type(e).__name__}: {e}')

    out = capsys.readouterr().out
    assert out.startswith("LookupError: gradient registry has no entry for: AdjustContrastv2")


def test_keras_subclassing__the_layer_class_state_and_computation(capsys):
    """https://keras.io/guides/making_new_layers_and_models_via_subclassing/ — "The Layer class": a Linear
    layer written with ``ops.matmul`` on ``ops.ones((2, 2))``: two equal rows of 4 (the inputs are equal)."""
    class Linear(adv.layers.Layer):
        def __init__(self, units=32, input_dim=32):
            super().__init__()
            self.w = self.add_weight(shape=(input_dim, units), initializer="random_normal", trainable=True)
            self.b = self.add_weight(shape=(units,), initializer="zeros", trainable=True)

        def call(self, inputs):
            return ops.matmul(inputs, self.w) + self.b

    x = ops.ones((2, 2))
    linear_layer = Linear(4, 2)
    y = linear_layer(x)
    print(y)
    assert linear_layer.weights == [linear_layer.w, linear_layer.b]
    assert y.shape == (2, 4) and y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy()[0], y.numpy()[1])
    np.testing.assert_allclose(y.numpy()[0], linear_layer.w.numpy().sum(axis=0), rtol=1e-6)
    assert "shape=(2, 4), dtype=float32" in capsys.readouterr().out


def test_keras_subclassing__layers_can_have_non_trainable_weights(capsys):
    """https://keras.io/guides/making_new_layers_and_models_via_subclassing/ — "Layers can have non-trainable
    weights": ``ComputeSum`` adds ``ops.sum(inputs, axis=0)`` into a non-trainable weight; the guide prints
    ``[2. 2.]``, ``[4. 4.]``, then 1, 1 and ``[]``."""
    class ComputeSum(adv.layers.Layer):
        def __init__(self, input_dim):
            super().__init__()
            self.total = self.add_weight(initializer="zeros", shape=(input_dim,), trainable=False)

        def call(self, inputs):
            self.total.assign_add(ops.sum(inputs, axis=0))
            return self.total

    x = ops.ones((2, 2))
    my_sum = ComputeSum(2)
    y = my_sum(x)
    print(y.numpy())
    y = my_sum(x)
    print(y.numpy())
    print("weights:", len(my_sum.weights))
    print("non-trainable weights:", len(my_sum.non_trainable_weights))
    print("trainable_weights:", my_sum.trainable_weights)
    assert capsys.readouterr().out.splitlines() == [
        "[2. 2.]", "[4. 4.]", "weights: 1", "non-trainable weights: 1", "trainable_weights: []"]


def test_keras_subclassing__the_add_loss_method():
    """https://keras.io/guides/making_new_layers_and_models_via_subclassing/ — "The add_loss() method":
    ``self.rate * ops.mean(inputs)``; ``layer.losses`` holds the last call's loss only."""
    class ActivityRegularizationLayer(adv.layers.Layer):
        def __init__(self, rate=1e-2):
            super().__init__()
            self.rate = rate

        def call(self, inputs):
            self.add_loss(self.rate * ops.mean(inputs))
            return inputs

    class OuterLayer(adv.layers.Layer):
        def __init__(self):
            super().__init__()
            self.activity_reg = ActivityRegularizationLayer(1e-2)

        def call(self, inputs):
            return self.activity_reg(inputs)

    layer = OuterLayer()
    assert len(layer.losses) == 0  # No losses yet since the layer has never been called
    _ = layer(ops.zeros((1, 1)))
    assert len(layer.losses) == 1  # We created one loss value
    _ = layer(ops.zeros((1, 1)))
    assert len(layer.losses) == 1  # This is the loss created during the call above
    assert float(layer.losses[0]) == 0.0


@pytest.fixture
def small_mnist(server, monkeypatch):  # noqa: F811
    """160 training and 20 test digits in MNIST's ``mnist.npz`` layout (uint8 28×28, uint8 labels); the
    labels follow the mean brightness of the image's top half, so a model can learn them."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (180, 28, 28), dtype=np.uint8)
    y = (x[:, :14].mean(axis=(1, 2)) > x[:, 14:].mean(axis=(1, 2))).astype(np.uint8)
    serve_npz(server[0], "mnist.npz", datasets.mnist, monkeypatch,
              x_train=x[:160], y_train=y[:160], x_test=x[160:], y_test=y[160:])


def test_keras_training_loop_from_scratch__a_first_end_to_end_example(small_mnist, capsys):
    """https://keras.io/guides/writing_a_training_loop_from_scratch/ — "A first end-to-end example":
    ``keras.datasets.mnist.load_data()``, ``tf.data.Dataset.from_tensor_slices(...).shuffle(1024).batch(32)``,
    a GradientTape step with ``optimizer.apply``. Reduced: 160 digits (32 kept for validation instead of
    10,000), logs every 2 steps instead of 100; the printed lines have the guide's form and the loss falls."""
    def get_model():
        inputs = adv.Input(shape=(784,), name="digits")
        x1 = adv.layers.Dense(64, activation="relu")(inputs)
        x2 = adv.layers.Dense(64, activation="relu")(x1)
        outputs = adv.layers.Dense(10, name="predictions")(x2)
        model = adv.Model(inputs=inputs, outputs=outputs)
        return model

    adv.utils.set_random_seed(0)
    model = get_model()
    optimizer = adv.optimizers.Adam(learning_rate=1e-3)
    loss_fn = adv.losses.SparseCategoricalCrossentropy(from_logits=True)

    batch_size = 32
    (x_train, y_train), (x_test, y_test) = adv.datasets.mnist.load_data()
    x_train = np.reshape(x_train, (-1, 784))
    x_test = np.reshape(x_test, (-1, 784))
    x_val, y_val = x_train[-32:], y_train[-32:]
    x_train, y_train = x_train[:-32], y_train[:-32]
    train_dataset = adv.data.Dataset.from_tensor_slices((x_train, y_train))
    train_dataset = train_dataset.shuffle(buffer_size=1024).batch(batch_size)
    val_dataset = adv.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size)

    epoch_losses = []
    epochs = 3
    for epoch in range(epochs):
        print(f"\nStart of epoch {epoch}")
        losses = []
        for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
            with adv.GradientTape() as tape:
                logits = model(x_batch_train, training=True)
                loss_value = loss_fn(y_batch_train, logits)
            grads = tape.gradient(loss_value, model.trainable_weights)
            optimizer.apply(grads, model.trainable_weights)
            losses.append(float(loss_value))
            if step % 2 == 0:
                print(f"Training loss (for 1 batch) at step {step}: {float(loss_value):.4f}")
                print(f"Seen so far: {(step + 1) * batch_size} samples")
        epoch_losses.append(np.mean(losses))

    out = capsys.readouterr().out
    assert "\nStart of epoch 0\nTraining loss (for 1 batch) at step 0: " in out
    assert "Seen so far: 32 samples" in out and "Seen so far: 96 samples" in out
    assert len(losses) == 4                                     # 128 training digits in batches of 32
    assert epoch_losses[-1] < epoch_losses[0]
    val_acc = adv.metrics.SparseCategoricalAccuracy()
    for x_batch_val, y_batch_val in val_dataset:
        val_acc.update_state(y_batch_val, model(x_batch_val, training=False))
    assert 0.0 <= float(val_acc.result()) <= 1.0 and x_test.shape == (20, 784)
