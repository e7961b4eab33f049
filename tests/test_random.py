"""adv.random as keras.random, and adv.ones / zeros / full / shape as keras.ops.

Seeds follow Keras 3: an int gives the same draws on every call, a SeedGenerator new draws on every call in a
fixed sequence, None the global generator of adv.layers.set_random_seed. The draws are checked against the
formulas of Keras' numpy backend computed by hand (np.random.default_rng([seed, n])); distributions against
their moments on 10⁵ draws with fixed seeds; dropout's gradient against mask/(1 − rate); the GAN of Keras'
guide "Customizing what happens in fit()" runs in fit with its seed generator.
"""
import numpy as np
import pytest
from fit_helpers import fresh_session  # noqa: F401  (autouse: a fresh session and set_random_seed(0))

import autodiff_viz as adv
from autodiff_viz import layers

R = adv.random


def keras_rng(seed, n=0):
    """The numpy generator Keras' numpy backend makes for seed ``seed`` (the n-th of a SeedGenerator)."""
    return np.random.default_rng(np.array([seed, n], dtype=np.uint32))


# ----- seeds ----------------------------------------------------------------------------------------------
DRAWS = [
    ("normal", lambda seed: R.normal((3, 4), mean=1.0, stddev=2.0, seed=seed),
     lambda rng: rng.normal(loc=1.0, scale=2.0, size=(3, 4)).astype("float32")),
    ("uniform", lambda seed: R.uniform((5,), minval=-1.0, maxval=3.0, seed=seed),
     lambda rng: rng.uniform(low=-1.0, high=3.0, size=(5,)).astype("float32")),
    ("randint", lambda seed: R.randint((2, 6), 0, 10, seed=seed),
     lambda rng: rng.integers(low=0, high=10, size=(2, 6), dtype="int32")),
]


@pytest.mark.parametrize("name,draw,by_hand", DRAWS, ids=[d[0] for d in DRAWS])
def test_an_int_seed_gives_the_same_draws_on_every_call_as_keras_numpy_backend(name, draw, by_hand):
    first, again = draw(42), draw(42)
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    np.testing.assert_array_equal(first.numpy(), by_hand(keras_rng(42)))
    assert not np.array_equal(first.numpy(), draw(43).numpy())


@pytest.mark.parametrize("name,draw,by_hand", DRAWS, ids=[d[0] for d in DRAWS])
def test_a_seed_generator_gives_new_draws_in_a_fixed_sequence(name, draw, by_hand):
    gen, twin = R.SeedGenerator(1337), R.SeedGenerator(1337)
    seq = [draw(gen).numpy() for _ in range(3)]
    assert not np.array_equal(seq[0], seq[1]) and not np.array_equal(seq[1], seq[2])
    for n, got in enumerate(seq):
        np.testing.assert_array_equal(got, draw(twin).numpy())          # same start seed, same sequence
        np.testing.assert_array_equal(got, by_hand(keras_rng(1337, n)))  # the n-th seed is [1337, n]
    np.testing.assert_array_equal(seq[0], draw(1337).numpy())           # the first draw is seed=1337's
    np.testing.assert_array_equal(gen.state.numpy(), [1337, 3])
    assert gen.get_config() == {"seed": 1337, "name": "seed_generator"}


def test_seed_none_and_a_seedless_generator_follow_set_random_seed():
    def run():
        layers.set_random_seed(0)
        x = adv.constant(np.arange(12.0).reshape(6, 2))
        gen = R.SeedGenerator()
        return [R.normal((4,)), R.normal((4,)), R.uniform((3,)), R.truncated_normal((3,)), R.randint((3,), 0, 99),
                R.shuffle(x), R.dropout(adv.ones((8,)), 0.5), R.normal((2,), seed=gen), R.normal((2,), seed=gen)]

    first, second = run(), run()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(first[0].numpy(), first[1].numpy())       # None: the generator moves on
    assert not np.array_equal(first[-2].numpy(), first[-1].numpy())
    layers.set_random_seed(0)
    np.testing.assert_array_equal(R.normal((4,), dtype="float64").numpy(),
                                  np.random.default_rng(0).normal(size=4))     # the global generator itself


def test_a_negative_or_large_seed_is_taken_as_32_bits_as_keras():
    np.testing.assert_array_equal(R.normal((3,), seed=-1).numpy(), R.normal((3,), seed=2 ** 32 - 1).numpy())
    np.testing.assert_array_equal(R.normal((3,), seed=np.int64(5)).numpy(), R.normal((3,), seed=5).numpy())


# ----- distributions: moments of 10⁵ draws with fixed seeds -----------------------------------------------
N = 10 ** 5


def test_normal_has_its_mean_and_stddev():
    z = R.normal((N,), mean=2.0, stddev=3.0, dtype="float64", seed=0).numpy()
    assert abs(z.mean() - 2.0) < 0.05 and abs(z.std() - 3.0) < 0.03     # 5 standard errors


def test_a_0d_tensor_or_array_is_taken_for_a_parameter_and_differentiated_through_as_tensorflow():
    """``tf.random.normal(shape, stddev=tf.sqrt(...))`` (Géron ch. 12's initializer): the draw is TensorFlow's
    ``rnd * stddev + mean``, the same numbers as with plain floats, and a tape differentiates through it."""
    by_number = R.normal((4,), mean=1.0, stddev=2.0, seed=3).numpy()
    s, m = adv.Variable(2.0), adv.Variable(1.0)
    with adv.GradientTape() as tape:
        draw = R.normal((4,), mean=m, stddev=s, seed=3)
    assert draw.dtype == np.float32
    np.testing.assert_allclose(draw.numpy(), by_number, rtol=1e-6)
    d_s, d_m = tape.gradient(draw, [s, m])
    np.testing.assert_allclose(float(d_s), ((by_number - 1.0) / 2.0).sum(), rtol=1e-5)
    assert float(d_m) == 4.0
    assert R.normal((8, 1), stddev=adv.sqrt(2.0 / 9), dtype="float32").dtype == np.float32  # a float64 tensor, cast
    np.testing.assert_array_equal(R.normal((3,), stddev=np.array(2.0), seed=1).numpy(),
                                  R.normal((3,), stddev=2.0, seed=1).numpy())
    np.testing.assert_allclose(R.uniform((3,), minval=adv.constant(1.0), maxval=adv.constant(3.0), seed=2).numpy(),
                               R.uniform((3,), minval=1.0, maxval=3.0, seed=2).numpy(), rtol=1e-6)
    np.testing.assert_allclose(R.truncated_normal((5,), stddev=adv.constant(3.0), seed=4).numpy(),
                               R.truncated_normal((5,), stddev=3.0, seed=4).numpy(), rtol=1e-6)


def test_uniform_covers_its_half_open_interval():
    u = R.uniform((N,), minval=-1.0, maxval=3.0, dtype="float64", seed=1).numpy()
    assert u.min() >= -1.0 and u.max() < 3.0
    assert abs(u.mean() - 1.0) < 0.02 and abs(u.std() - 4 / np.sqrt(12)) < 0.01


def test_truncated_normal_stays_within_two_stddev_and_has_the_cut_normals_spread():
    t = R.truncated_normal((N,), mean=1.0, stddev=2.0, dtype="float64", seed=2).numpy()
    assert t.min() >= 1.0 - 4.0 and t.max() <= 1.0 + 4.0
    assert abs(t.mean() - 1.0) < 0.03
    assert abs(t.std() - 0.87962566103423978 * 2.0) < 0.02              # the std of N(0, 1) cut at ±2
    assert t.max() > 4.9 and t.min() < -2.9                             # it reaches near both cuts


def test_truncated_normal_redraws_as_keras_numpy_backend():
    rng, kept = keras_rng(9), np.empty(0)
    while kept.size < 20:
        batch = rng.normal(size=20)
        kept = np.append(kept, batch[np.abs(batch) <= 2])
    np.testing.assert_array_equal(R.truncated_normal((4, 5), seed=9).numpy(),
                                  kept[:20].astype("float32").reshape(4, 5))


def test_randint_draws_every_value_of_its_range_equally_often():
    k = R.randint((N,), 3, 13, seed=3).numpy()
    assert k.dtype == np.int32 and k.min() == 3 and k.max() == 12
    counts = np.bincount(k - 3, minlength=10)
    assert np.all(np.abs(counts - N / 10) < 500)                        # ~5.3 standard deviations


# ----- dtypes ---------------------------------------------------------------------------------------------
def test_floats_default_to_floatx_and_randint_to_int32_as_keras():
    for t in (R.normal(2, seed=0), R.uniform(2, seed=0), R.truncated_normal(2, seed=0),
              adv.ones(2), adv.zeros(2), adv.full(2, 7)):
        assert t.dtype == np.float32
    assert R.randint(2, 0, 5, seed=0).dtype == np.int32
    layers.set_floatx("float64")
    try:
        assert R.normal(2, seed=0).dtype == adv.ones(2).dtype == adv.full((1,), 1).dtype == np.float64
    finally:
        layers.set_floatx("float32")
    assert R.uniform(2, dtype="float64", seed=0).dtype == np.float64
    assert R.randint(2, 0, 200, dtype="uint8", seed=0).dtype == np.uint8
    assert adv.zeros((2, 3), dtype="int32").dtype == np.int32 and adv.full(3, 2, dtype="int64").dtype == np.int64


def test_ones_zeros_full_shape_are_keras_ops():
    x = adv.constant(np.arange(6.0).reshape(2, 3))
    assert adv.shape(x) == (2, 3) and isinstance(adv.shape(x), tuple) and adv.shape([[1, 2]]) == (1, 2)
    assert isinstance(adv.shape(x)[0], int)
    np.testing.assert_array_equal(adv.zeros(adv.shape(x)).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(adv.ones([2, 1]).numpy(), np.ones((2, 1)))
    np.testing.assert_array_equal(adv.full((2, 3), [1.0, 2.0, 3.0]).numpy(), [[1, 2, 3], [1, 2, 3]])
    assert adv.ones(()).shape == () and adv.zeros(0).shape == (0,)


def test_full_of_a_tensor_is_differentiable_and_constants_record_nothing():
    v = adv.Variable(2.0, name="v")
    with adv.GradientTape() as tape:
        noise = [R.normal((2,)), R.uniform((2,), seed=1), R.truncated_normal(2), R.randint(2, 0, 3),
                 adv.ones(2), adv.zeros(2), adv.full(2, 1.0)]
        assert len(tape._nodes) == 0                                     # sampling is never recorded
        y = adv.sum(adv.full((2, 3), v, dtype="float64"))
    assert all(t._node is None for t in noise)
    assert float(tape.gradient(y, v)) == 6.0


# ----- dropout and shuffle: differentiable in their input ---------------------------------------------------
@pytest.mark.parametrize("rate", [0.25, 0.5, 0.9])
def test_dropout_gradient_is_the_mask_over_one_minus_rate(rate):
    x = adv.Variable(np.random.default_rng(0).normal(size=(20, 30)), name="x")
    with adv.GradientTape() as tape:
        y = R.dropout(x, rate, seed=5)
    mask = keras_rng(5).uniform(size=(20, 30)) < 1 - rate                # Keras' numpy backend, by hand
    np.testing.assert_allclose(y.numpy(), np.where(mask, x.numpy() / (1 - rate), 0), rtol=1e-15)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), mask / (1 - rate), rtol=1e-15)
    assert abs((~mask).mean() - rate) < 0.05


def test_dropout_noise_shape_rate_zero_and_dtype():
    x = adv.ones((4, 3, 5))
    y = R.dropout(x, 0.5, noise_shape=(None, 1, 5), seed=0).numpy()
    assert y.dtype == np.float32 and set(np.unique(y)) <= {0.0, 2.0}
    assert (y == y[:, :1, :]).all()                                      # the same choice along axis 1
    gen = R.SeedGenerator(3)
    assert R.dropout(x, 0.0, seed=gen) is x and gen.state.numpy()[1] == 0   # rate 0: inputs, nothing drawn
    a, b = R.dropout(x, 0.5, seed=gen), R.dropout(x, 0.5, seed=gen)
    assert not np.array_equal(a.numpy(), b.numpy())


def test_shuffle_moves_whole_slices_and_sends_the_gradient_back():
    x = adv.Variable(np.arange(20.0).reshape(5, 4), name="x")
    w = adv.constant(np.arange(1.0, 21.0).reshape(5, 4))
    with adv.GradientTape() as tape:
        y = R.shuffle(x, seed=4)
        loss = adv.sum(w * y)
    perm = keras_rng(4).permutation(5)
    np.testing.assert_array_equal(y.numpy(), x.numpy()[perm])            # rows stay whole
    g = np.empty((5, 4))
    g[perm] = w.numpy()                                                  # each entry's weight, back where it came from
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy(), g)
    cols = R.shuffle(x, axis=-1, seed=4).numpy()
    np.testing.assert_array_equal(np.sort(cols, axis=1), x.numpy())
    assert (np.argsort(cols, axis=1) == np.argsort(cols[0])).all()       # one permutation for every row


# ----- errors: named, with the fix, before anything is drawn --------------------------------------------------
ERRORS = [
    (lambda s: R.normal((2, 2.5), seed=s), TypeError, r"random\.normal: shape must be an int or a tuple of ints"),
    (lambda s: R.normal(None, seed=s), TypeError, r"random\.normal: shape must be.*adv\.shape\(x\)"),
    (lambda s: R.uniform((3, -1), seed=s), ValueError, r"random\.uniform: shape \(3, -1\) has a negative size"),
    (lambda s: R.normal((2,), dtype="int32", seed=s), ValueError, r"random\.normal requires a floating dtype.*randint"),
    (lambda s: R.uniform((2,), dtype="int64", seed=s), ValueError, r"random\.uniform requires a floating dtype"),
    (lambda s: R.normal((2,), dtype="flot32", seed=s), TypeError, r"random\.normal: 'flot32' is not a dtype"),
    (lambda s: R.normal((2,), stddev=-1.0, seed=s), ValueError, r"random\.normal: stddev must be 0 or more"),
    (lambda s: R.truncated_normal((2,), stddev=-1.0, seed=s), ValueError, r"truncated_normal: stddev must be 0"),
    (lambda s: R.normal((2,), mean=adv.Variable([1.0, 2.0]), seed=s), TypeError,
     r"random\.normal: mean must be a number or a 0-d numeric tensor, got a tensor of shape \(2,\)"),
    (lambda s: R.uniform((2,), maxval="1", seed=s), TypeError, r"random\.uniform: maxval must be a number"),
    (lambda s: R.randint((2,), 5, 5, seed=s), ValueError,
     r"random\.randint: minval \(5\) must be less than maxval \(5\)"),
    (lambda s: R.randint((2,), 0, 1.5, seed=s), TypeError, r"random\.randint: maxval must be an int"),
    (lambda s: R.randint((2,), 0, 300, dtype="int8", seed=s), ValueError, r"0 to 299 do not fit in int8.*int64"),
    (lambda s: R.randint((2,), 0, 3, dtype="float32", seed=s), ValueError,
     r"random\.randint requires an integer dtype"),
    (lambda s: R.dropout(adv.ones(3), 1.0, seed=s), ValueError, r"random\.dropout: rate must be a number in \[0, 1\)"),
    (lambda s: R.dropout(adv.ones(3), -0.1, seed=s), ValueError, r"rate must be a number in \[0, 1\).*got -0\.1"),
    (lambda s: R.dropout(adv.ones(3), "0.5", seed=s), ValueError, r"rate must be a number in \[0, 1\)"),
    (lambda s: R.dropout(adv.ones(3, "int32"), 0.5, seed=s), TypeError, r"random\.dropout: inputs must be floating"),
    (lambda s: R.dropout(adv.ones((2, 3)), 0.5, noise_shape=(2,), seed=s), ValueError, r"one entry per axis"),
    (lambda s: R.dropout(adv.ones((2, 3)), 0.5, noise_shape=(2, 2), seed=s), ValueError, r"does not broadcast"),
    (lambda s: R.shuffle(adv.constant(3.0), seed=s), ValueError, r"random\.shuffle: x is a scalar"),
    (lambda s: R.shuffle(adv.ones((2, 3)), axis=2, seed=s), ValueError, r"random\.shuffle: axis 2 is out of range"),
    (lambda s: R.normal((10 ** 6, 10 ** 6), seed=s), ValueError,
     r"random\.normal: shape \(1000000, 1000000\) of float64 needs 8,000,000,000,000 bytes.*nothing was allocated"),
    (lambda s: R.randint((10 ** 6, 10 ** 6), 0, 2, seed=s), ValueError, r"random\.randint: shape .* int32 needs"),
]


@pytest.mark.parametrize("call,error,words", ERRORS, ids=range(len(ERRORS)))
def test_bad_arguments_are_named_before_a_seed_is_taken(call, error, words):
    gen = R.SeedGenerator(1)
    with pytest.raises(error, match=words):
        call(gen)
    assert gen.state.numpy().tolist() == [1, 0]                         # the generator did not advance
    layers.set_random_seed(0)
    with pytest.raises(error, match=words):
        call(None)
    np.testing.assert_array_equal(R.normal((2,), dtype="float64").numpy(), np.random.default_rng(0).normal(size=2))


@pytest.mark.parametrize("seed", [1.5, "1337", True, [1, 2], np.random.default_rng(0)])
def test_a_seed_that_is_not_an_int_a_seed_generator_or_none_is_refused(seed):
    with pytest.raises(TypeError, match=r"random\.uniform: seed must be an int .* an adv\.random\.SeedGenerator .* or "
                                        r"None .*seed=adv\.random\.SeedGenerator\(1337\)"):
        R.uniform((2,), seed=seed)
    if not isinstance(seed, np.random.Generator):
        with pytest.raises(TypeError, match=r"SeedGenerator: seed must be an int or None"):
            R.SeedGenerator(seed)


@pytest.mark.parametrize("call,error,words", [
    (lambda: adv.zeros((2, "3")), TypeError, r"zeros: shape must be an int or a tuple of ints"),
    (lambda: adv.ones(-2), ValueError, r"ones: shape \(-2,\) has a negative size"),
    (lambda: adv.ones(2, dtype="flot"), TypeError, r"ones: 'flot' is not a dtype"),
    (lambda: adv.full((2, 3), [1.0, 2.0]), ValueError, r"full: fill_value of shape \(2,\) does not broadcast to shape"),
    (lambda: adv.zeros((10 ** 6, 10 ** 6)), ValueError, r"zeros: shape \(1000000, 1000000\) of float32 needs"),
])
def test_ones_zeros_full_name_a_bad_shape(call, error, words):
    with pytest.raises(error, match=words):
        call()


# ----- the GAN of Keras 3's guide, with adv. in place of keras. / tf. ----------------------------------------
class GAN(adv.Model):
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
        batch_size = adv.shape(real_images)[0]
        random_latent_vectors = adv.random.normal(shape=(batch_size, self.latent_dim), seed=self.seed_generator)
        generated_images = self.generator(random_latent_vectors)
        combined_images = adv.concatenate([generated_images, real_images], axis=0)
        labels = adv.concatenate([adv.ones((batch_size, 1)), adv.zeros((batch_size, 1))], axis=0)
        labels += 0.05 * adv.random.uniform(adv.shape(labels), seed=self.seed_generator)
        with adv.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply(grads, self.discriminator.trainable_weights)
        random_latent_vectors = adv.random.normal(shape=(batch_size, self.latent_dim), seed=self.seed_generator)
        misleading_labels = adv.zeros((batch_size, 1))
        with adv.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply(grads, self.generator.trainable_weights)
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}


def train_gan(images):
    layers.clear_session()
    layers.set_random_seed(0)
    latent_dim = 4
    discriminator = adv.Sequential([layers.Input((6,)), layers.Dense(8), layers.LeakyReLU(negative_slope=0.2),
                                    layers.Dense(1)], name="discriminator")
    generator = adv.Sequential([layers.Input((latent_dim,)), layers.Dense(8), layers.LeakyReLU(negative_slope=0.2),
                                layers.Dense(6, activation="sigmoid")], name="generator")
    gan = GAN(discriminator=discriminator, generator=generator, latent_dim=latent_dim)
    gan.compile(d_optimizer=adv.optimizers.Adam(learning_rate=0.0003),
                g_optimizer=adv.optimizers.Adam(learning_rate=0.0003),
                loss_fn=adv.losses.BinaryCrossentropy(from_logits=True))
    before = generator.get_weights()
    history = gan.fit(images, epochs=2, batch_size=8, verbose=0)
    return gan, before, history.history


def test_the_guides_gan_trains_with_its_seed_generator_and_repeats_exactly():
    images = np.random.default_rng(0).uniform(size=(32, 6)).astype("float32")
    gan, before, logs = train_gan(images)
    assert sorted(logs) == ["d_loss", "g_loss"] and all(np.isfinite(v).all() for v in logs.values())
    assert gan.seed_generator.state.numpy().tolist() == [1337, 3 * 4 * 2]   # 3 draws a batch, 4 batches, 2 epochs
    assert not all(np.array_equal(a, b) for a, b in zip(before, gan.generator.get_weights()))
    _, _, again = train_gan(images)
    assert again == logs
