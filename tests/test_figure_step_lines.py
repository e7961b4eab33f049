"""The learner's own step drawn by its statements: loss lines, library loss functions, several models.

Material nobody here wrote: TensorFlow's tutorial "Convolutional Variational Autoencoder"
(https://www.tensorflow.org/tutorials/generative/cvae, source tensorflow/docs
``site/en/tutorials/generative/cvae.ipynb``). Its ``CVAE(tf.keras.Model)`` holds an encoder and a decoder, each a
``tf.keras.Sequential``, called through the methods ``encode``, ``reparameterize`` and ``decode``; its loss is
written in plain functions: ``compute_loss`` calls ``tf.nn.sigmoid_cross_entropy_with_logits(logits=x_logit,
labels=x)`` and ``log_normal_pdf`` three times, and returns ``-tf.reduce_mean(logpx_z + logpz - logqz_x)``.
Reproduced with the tutorial's structure and names, reduced: 4 and 8 filters instead of 32 and 64, a latent size of
2, four random binary 28×28 images, one ``train_step`` without ``@tf.function`` (a recording sees eager ops; a
learner debugging a step runs it eagerly).

What a learner relies on: the two Sequentials are the figure's parts (each one box); the library loss function
is one box with its formula per entry on the prediction's edge and "no gradient: labels" on the edge back to the
images; each statement of the learner's loss is one box named by what it assigns (``logpx_z``) or by the function
it returns from (``log_normal_pdf`` three times, ``compute_loss``), never a column of ``AddV2``, ``Mul``, ``Exp``;
the two halves ``encode`` unpacks from ``tf.split`` are called ``mean`` and ``logvar``, as the code calls them.
And the other side of the rule: a computation with no model around it is still drawn op by op.
"""
from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from test_figure_real_models import _labels  # noqa: E402
from unseen_models import group_titles  # noqa: E402

import autodiff_viz as adv  # noqa: E402
from autodiff_viz.views import folding  # noqa: E402

LOSS_OPS = {"AddV2", "Mul", "Sub", "Exp", "Sum", "Mean", "Neg", "Pow", "Log1p", "Select", "ZerosLike",
            "GreaterEqual", "RealDiv"}


class CVAE(tf.keras.Model):
    """Convolutional variational autoencoder (the tutorial's, with fewer filters)."""

    def __init__(self, latent_dim):
        super().__init__()
        self.latent_dim = latent_dim
        self.encoder = tf.keras.Sequential([
            tf.keras.layers.InputLayer(shape=(28, 28, 1)),
            tf.keras.layers.Conv2D(filters=4, kernel_size=3, strides=(2, 2), activation='relu'),
            tf.keras.layers.Conv2D(filters=8, kernel_size=3, strides=(2, 2), activation='relu'),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(latent_dim + latent_dim),
        ])
        self.decoder = tf.keras.Sequential([
            tf.keras.layers.InputLayer(shape=(latent_dim,)),
            tf.keras.layers.Dense(units=7 * 7 * 8, activation=tf.nn.relu),
            tf.keras.layers.Reshape(target_shape=(7, 7, 8)),
            tf.keras.layers.Conv2DTranspose(filters=8, kernel_size=3, strides=2, padding='same', activation='relu'),
            tf.keras.layers.Conv2DTranspose(filters=4, kernel_size=3, strides=2, padding='same', activation='relu'),
            tf.keras.layers.Conv2DTranspose(filters=1, kernel_size=3, strides=1, padding='same'),
        ])

    def encode(self, x):
        mean, logvar = tf.split(self.encoder(x), num_or_size_splits=2, axis=1)
        return mean, logvar

    def reparameterize(self, mean, logvar):
        eps = tf.random.normal(shape=mean.shape)
        return eps * tf.exp(logvar * .5) + mean

    def decode(self, z):
        return self.decoder(z)


def log_normal_pdf(sample, mean, logvar, raxis=1):
    log2pi = tf.math.log(2. * np.pi)
    return tf.reduce_sum(
        -.5 * ((sample - mean) ** 2. * tf.exp(-logvar) + logvar + log2pi),
        axis=raxis)


def compute_loss(model, x):
    mean, logvar = model.encode(x)
    z = model.reparameterize(mean, logvar)
    x_logit = model.decode(z)
    cross_ent = tf.nn.sigmoid_cross_entropy_with_logits(logits=x_logit, labels=x)
    logpx_z = -tf.reduce_sum(cross_ent, axis=[1, 2, 3])
    logpz = log_normal_pdf(z, 0., 0.)
    logqz_x = log_normal_pdf(z, mean, logvar)
    return -tf.reduce_mean(logpx_z + logpz - logqz_x)


def train_step(model, x, optimizer):
    with tf.GradientTape() as tape:
        loss = compute_loss(model, x)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


@pytest.fixture(scope="module")
def cvae():
    tf.random.set_seed(0)
    model = CVAE(2)
    optimizer = tf.keras.optimizers.Adam(1e-4)
    x = tf.constant((np.random.default_rng(0).random((4, 28, 28, 1)) > .5).astype("float32"))
    with adv.tf.record() as rec:
        loss = train_step(model, x, optimizer)
    tr = rec.trace(loss, model)
    tr.parts = (model.encoder.name, model.decoder.name)     # Keras numbers them after the models made before
    return tr


def test_the_two_sequentials_are_the_figures_parts(cvae):
    lay = folding.layout(cvae)
    titles = group_titles(lay)
    assert set(cvae.parts) <= set(titles), (cvae.parts, titles)
    assert not [b for b in lay.boxes.values() if b.kind == "node" and cvae.node(b.id).kind == "variable"]  # folded


def test_the_library_loss_function_is_one_box_with_its_formula_and_the_labels_role(cvae):
    titles = group_titles(folding.layout(cvae))
    assert "sigmoid_cross_entropy_with_logits" in titles, titles
    labels = _labels(cvae.to_dot("backward"))
    assert "no gradient: labels" in labels
    decoder = cvae.parts[1]
    assert any(lab.startswith(f"ḡ_{decoder} = ḡ_cross_ent ⊙ (σ({decoder}) − x)") for lab in labels), labels


def test_each_statement_of_the_loss_is_a_box_named_by_the_code(cvae):
    lay = folding.layout(cvae)
    titles = group_titles(lay)
    assert titles.count("log_normal_pdf") == 3, titles              # three calls, three boxes
    assert {"logpx_z", "compute_loss", "reparameterize"} <= set(titles), titles
    loose = [cvae.node(b.id).title for b in lay.boxes.values()
             if b.kind == "node" and cvae.node(b.id).kind == "op" and cvae.node(b.id).op in LOSS_OPS]
    assert not loose, loose
    assert [n.title for n in cvae.nodes if n.op == "Split"] == ["mean", "logvar"]     # encode's own names


def test_without_a_model_a_statement_is_drawn_op_by_op():
    x = tf.Variable([1.0, 2.0, 3.0])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(x * x + 2.0 * x)
        tape.gradient(y, x)
    tr = rec.trace(y, [x])
    lay = folding.layout(tr)
    ops = sorted(tr.node(b.id).op for b in lay.boxes.values() if b.kind == "node" and tr.node(b.id).kind == "op")
    assert ops == ["AddV2", "Mul", "Mul", "Sum"], ops
    assert not group_titles(lay)
