"""Keras 3's guides on subclassing and RNNs: the call context for ``training``, masks carried from layer to
layer, ``get_config``/``from_config``, and the names those guides use."""
import warnings

import numpy as np
import pytest

import autodiff_viz as adv

TOKENS = np.array([[3, 5, 2, 0, 0], [1, 4, 6, 7, 2]])


# ----- training reaches the layers inside a layer that does not take it ----------------------------------
class Block(adv.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.bn = adv.layers.BatchNormalization()

    def call(self, x):                      # no training parameter: Keras' call context still reaches self.bn
        return self.bn(x)


def test_fit_trains_a_batch_normalization_inside_a_block_without_a_training_parameter():
    x = np.random.default_rng(0).normal(5.0, 1.0, (32, 3))
    model = adv.Sequential([adv.layers.Input((3,)), Block()])
    model.compile("sgd", "mse")
    model.fit(x, np.zeros((32, 3)), batch_size=32, verbose=0)
    mean = model.layers[-1].bn.moving_mean.numpy()
    np.testing.assert_allclose(mean, 0.01 * x.mean(axis=0), rtol=1e-5)     # momentum 0.99, one batch
    before = mean.copy()
    model.predict(x)                                                          # inference: stats unchanged
    np.testing.assert_array_equal(model.layers[-1].bn.moving_mean.numpy(), before)


def test_training_given_to_a_layer_without_the_parameter_goes_to_the_layers_inside():
    class Outer(adv.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.drop = adv.layers.Dropout(0.5, seed=1)

        def call(self, x):
            return self.drop(x)

    outer = Outer()
    trained = outer(np.ones((1, 200)), training=True).numpy()
    assert set(np.unique(trained)) == {0.0, 2.0}
    np.testing.assert_array_equal(outer(np.ones((1, 200))).numpy(), np.ones((1, 200)))


def test_predict_calls_the_model_with_training_false_as_keras():
    class M(adv.Model):
        def call(self, x, training=True):
            return x * 0 if training else x

    m = M()
    m(np.ones((1, 2)))
    np.testing.assert_array_equal(m.predict(np.ones((1, 2))), [[1.0, 1.0]])


# ----- masks ---------------------------------------------------------------------------------------------
def _embed_lstm(*between, **lstm):
    adv.layers.set_random_seed(3)
    emb = adv.layers.Embedding(10, 3, mask_zero=True, dtype="float64")
    lstm_layer = adv.layers.LSTM(4, return_sequences=True, dtype="float64", **lstm)
    model = adv.Sequential([adv.layers.Input((5,), dtype="int32"), emb, *between, lstm_layer])
    return model, emb, between, lstm_layer


def test_an_embedding_mask_reaches_the_lstm_through_a_dense_as_keras_carries_it():
    dense = adv.layers.Dense(3, dtype="float64")
    model, emb, _, lstm = _embed_lstm(dense)
    carried = model(TOKENS).numpy()
    explicit = lstm(dense(emb(TOKENS)), mask=TOKENS != 0).numpy()
    unmasked = lstm.call(dense(emb(TOKENS))).numpy()
    np.testing.assert_allclose(carried, explicit, rtol=1e-12)
    assert not np.allclose(carried, unmasked)
    np.testing.assert_allclose(carried[0, 3:], np.repeat(carried[0, 2:3], 2, axis=0))   # padded steps keep state


def test_the_functional_api_carries_the_mask_too():
    inp = adv.layers.Input((5,), dtype="int32")
    emb = adv.layers.Embedding(10, 3, mask_zero=True, dtype="float64")
    lstm = adv.layers.LSTM(2, dtype="float64")
    model = adv.Model(inp, lstm(emb(inp)))
    np.testing.assert_allclose(model(TOKENS).numpy(), lstm(emb(TOKENS), mask=TOKENS != 0).numpy(), rtol=1e-12)


def test_masking_marks_the_steps_whose_features_all_equal_the_mask_value():
    x = np.array([[[1.0, 2.0], [0.0, 0.0], [3.0, 0.0]]])
    masking = adv.layers.Masking(0.0)
    np.testing.assert_array_equal(masking.compute_mask(x), [[True, False, True]])
    out = masking(np.array([[[1.0, 2.0], [0.0, 0.0], [3.0, 5.0]]]) * np.array([1.0, 1.0]))
    np.testing.assert_array_equal(out._keras_mask, [[True, False, True]])
    lstm = adv.layers.LSTM(2, return_sequences=True, dtype="float64")
    y = lstm(adv.layers.Masking(0.0)(x))
    np.testing.assert_allclose(y.numpy(), lstm(x, mask=[[True, False, True]]).numpy(), rtol=1e-12)
    with pytest.raises(TypeError, match="mask_value must be a number"):
        adv.layers.Masking("0")


def test_a_mask_that_reaches_a_layer_without_masking_warns_once_as_keras():
    emb = adv.layers.Embedding(10, 3, mask_zero=True)
    flat = adv.layers.Flatten()
    with pytest.warns(UserWarning, match=r"'flatten.*' \(Flatten\) was passed an input with a mask.*stops here") \
            as caught:
        flat(emb(TOKENS))
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flat(emb(TOKENS))                          # once per layer
        adv.layers.Flatten()(adv.layers.Embedding(10, 3)(TOKENS))     # no mask: nothing to say


# ----- get_config, add_weight, names ----------------------------------------------------------------------
def test_a_custom_layer_extends_the_base_config_and_rebuilds_from_it():
    class Linear(adv.layers.Layer):
        def __init__(self, units=32, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="random_normal",
                                     autocast=False, aggregation="mean", overwrite_with_gradient=False)

        def call(self, x):
            return x @ self.w

        def get_config(self):
            config = super().get_config()
            config.update({"units": self.units})
            return config

    config = Linear(64, name="lin", dtype="float64").get_config()
    assert config == {"name": "lin", "trainable": True, "dtype": "float64", "units": 64}
    again = Linear.from_config(config)
    assert again.units == 64 and again.dtype == "float64" and again(np.ones((2, 3))).shape == (2, 64)
    dense = adv.layers.Dense.from_config(adv.layers.Dense(3, activation="relu").get_config())
    assert dense.units == 3 and dense.activation is adv.activations.relu


def test_keras_top_level_names():
    assert adv.Input is adv.layers.Input and adv.Layer is adv.layers.Layer
    assert adv.activations.relu is adv.layers.activations.relu
    assert adv.initializers is adv.layers.initializers


def test_a_mask_passes_through_a_recurrent_layer_with_return_sequences_and_a_bidirectional():
    """Embedding → LSTM(return_sequences) → Bidirectional(GRU): the second layer gets the mask too (Keras 3)."""
    adv.layers.set_random_seed(4)
    emb = adv.layers.Embedding(10, 3, mask_zero=True, dtype="float64")
    first = adv.layers.LSTM(4, return_sequences=True, dtype="float64")
    second = adv.layers.Bidirectional(adv.layers.GRU(2, dtype="float64"))
    model = adv.Sequential([adv.layers.Input((5,), dtype="int32"), emb, first, second])
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # nothing stops the mask here
        carried = model(TOKENS).numpy()
    mask = TOKENS != 0
    explicit = second(first(emb(TOKENS), mask=mask), mask=mask).numpy()
    np.testing.assert_allclose(carried, explicit, rtol=1e-12)
    assert not np.allclose(carried, second.call(first.call(emb(TOKENS))).numpy())


def test_merge_layers_combine_the_masks_of_their_inputs_as_keras():
    emb = adv.layers.Embedding(10, 3, mask_zero=True, dtype="float64")
    e = emb(TOKENS)
    other = adv.constant(np.ones((2, 5, 3)))
    other._keras_mask = np.array([[True, False, True, True, True]] * 2)
    added = adv.layers.Add()([e, other])
    np.testing.assert_array_equal(added._keras_mask, (TOKENS != 0) & other._keras_mask)
    residual = adv.layers.Add()([e, adv.layers.Dense(3, dtype="float64")(e)])
    np.testing.assert_array_equal(residual._keras_mask, TOKENS != 0)
    joined = adv.layers.Concatenate(axis=1)([e, adv.constant(np.ones((2, 2, 3)))])    # along the steps
    np.testing.assert_array_equal(joined._keras_mask, np.concatenate([TOKENS != 0, np.ones((2, 2), bool)], axis=1))
    features = adv.layers.Concatenate()([e, e])                                          # along the features
    np.testing.assert_array_equal(features._keras_mask, TOKENS != 0)
    lstm = adv.layers.LSTM(2, dtype="float64")
    np.testing.assert_allclose(lstm(residual).numpy(), lstm(residual, mask=TOKENS != 0).numpy(), rtol=1e-12)


def test_attention_uses_the_carried_masks_and_passes_the_querys_on():
    emb = adv.layers.Embedding(10, 4, mask_zero=True, dtype="float64")
    e = emb(TOKENS)
    att = adv.layers.Attention(dtype="float64")
    out = att([e, e])
    np.testing.assert_array_equal(out.numpy(), att([e.numpy(), e.numpy()], mask=[TOKENS != 0, TOKENS != 0]).numpy())
    np.testing.assert_array_equal(out._keras_mask, TOKENS != 0)


# ----- masks in pooling, batch normalization and multi-head attention (Keras 3) ---------------------------
def test_global_average_pooling_1d_averages_the_real_steps_only():
    """Embedding(mask_zero) → GlobalAveragePooling1D, the text-classification set-up of Keras' tutorials."""
    emb = adv.layers.Embedding(10, 3, mask_zero=True, dtype="float64")
    gap = adv.layers.GlobalAveragePooling1D(dtype="float64")
    with adv.GradientTape() as tape:
        e = emb(TOKENS)
        with warnings.catch_warnings():
            warnings.simplefilter("error")              # the layer takes the mask: no "mask stops here"
            out = gap(e)
        total = adv.sum(out)
    mask = TOKENS != 0
    want = np.stack([e.numpy()[i][mask[i]].mean(axis=0) for i in range(2)])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    assert getattr(out, "_keras_mask", None) is None             # averaged away: no mask after it
    g = tape.gradient(total, emb.embeddings).numpy()
    np.testing.assert_allclose(g[0], 0.0)                          # padding token: no gradient
    np.testing.assert_allclose(g[3], 1 / 3)                        # one of 3 real steps in the first sequence
    np.testing.assert_allclose(g[2], 1 / 3 + 1 / 5)                # in both sequences
    kept = adv.layers.GlobalAveragePooling1D(keepdims=True, dtype="float64")(e.numpy(), mask=mask)
    np.testing.assert_allclose(kept.numpy()[:, 0], want, rtol=1e-12)


def test_global_average_pooling_1d_refuses_a_mask_of_the_wrong_shape_and_warns_on_an_empty_sequence():
    x = np.ones((2, 5, 3))
    gap = adv.layers.GlobalAveragePooling1D(name="pool")
    with pytest.raises(ValueError, match=r"pool \(GlobalAveragePooling1D\): mask should have shape "
                                         r"\(batch, time\) = \(2, 5\), got \(2, 4\)"):
        gap(x, mask=np.ones((2, 4), bool))
    with pytest.warns(RuntimeWarning, match=r"every step of sample\(s\) \[1\] is masked.*NaN") as caught:
        out = gap(x, mask=np.array([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]]))
    assert caught[0].filename == __file__
    np.testing.assert_allclose(out.numpy()[0], 1.0)
    assert np.isnan(out.numpy()[1]).all()


def test_a_model_with_an_input_shape_builds_a_masked_average_without_a_warning():
    """Sequential builds by running a batch of zeros, all padding for Embedding(mask_zero=True): no data warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = adv.Sequential([adv.layers.Input((5,), dtype="int32"), adv.layers.Embedding(10, 3, mask_zero=True),
                                adv.layers.GlobalAveragePooling1D(), adv.layers.Dense(1, activation="sigmoid")])
        assert model.output_shape == (None, 1) and np.isfinite(model.predict(TOKENS, verbose=0)).all()
    with pytest.warns(RuntimeWarning, match=r"every step of sample\(s\) \[0\] is masked"):
        model.predict(np.zeros((1, 5), dtype="int64"), verbose=0)       # a real batch of padding still warns


def test_batch_normalization_takes_its_batch_statistics_over_the_real_steps():
    adv.layers.set_random_seed(5)
    emb = adv.layers.Embedding(10, 3, mask_zero=True, dtype="float64")
    bn = adv.layers.BatchNormalization(momentum=0.0, dtype="float64")
    e = emb(TOKENS)
    out = bn(e, training=True)
    real = e.numpy()[TOKENS != 0]
    np.testing.assert_allclose(bn.moving_mean.numpy(), real.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), real.var(axis=0), rtol=1e-5)
    np.testing.assert_allclose(out.numpy(), (e.numpy() - real.mean(axis=0)) / np.sqrt(real.var(axis=0) + 1e-3),
                               rtol=1e-5)
    np.testing.assert_array_equal(out._keras_mask, TOKENS != 0)   # passed on to the next layer
    with pytest.raises(ValueError, match=r"mask should have shape \(batch, time\) = \(2, 5\)"):
        bn(e.numpy(), training=True, mask=np.ones((2, 3), bool))
    channels_first = adv.layers.BatchNormalization(axis=1, momentum=0.0, dtype="float64")
    x = np.random.default_rng(1).normal(size=(2, 3, 5))           # (batch, features, steps)
    channels_first(x, training=True, mask=TOKENS != 0)
    np.testing.assert_allclose(channels_first.moving_mean.numpy(),
                               np.moveaxis(x, 1, -1)[TOKENS != 0].mean(axis=0), rtol=1e-6)


def test_multi_head_attention_reads_the_masks_its_inputs_carry():
    emb = adv.layers.Embedding(10, 8, mask_zero=True, dtype="float64")
    mha = adv.layers.MultiHeadAttention(num_heads=2, key_dim=4, dtype="float64")
    e = emb(TOKENS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # neither the layer nor its projections drop the mask
        out, scores = mha(e, e, return_attention_scores=True)
    np.testing.assert_allclose(scores.numpy()[0, :, :, 3:], 0.0)       # padded keys get no weight
    mask = TOKENS != 0
    explicit = mha(e.numpy(), e.numpy(), query_mask=mask, value_mask=mask)
    np.testing.assert_allclose(out.numpy(), explicit.numpy(), rtol=1e-12)
    assert not np.allclose(out.numpy(), mha(e.numpy(), e.numpy()).numpy())
    np.testing.assert_array_equal(out._keras_mask, mask)                 # the query's mask goes on
    assert getattr(scores, "_keras_mask", None) is None


def test_pooling_normalization_and_attention_configs_rebuild_the_same_layer():
    given = [
        (adv.layers.GlobalAveragePooling1D, {"keepdims": True, "dtype": "float64"}),
        (adv.layers.MaxPooling2D, {"pool_size": (3, 3), "strides": (1, 1), "padding": "same"}),
        (adv.layers.BatchNormalization, {"axis": 1, "momentum": 0.9, "epsilon": 1e-5, "center": False,
                                         "gamma_initializer": "zeros", "moving_variance_initializer": "zeros"}),
        (adv.layers.LayerNormalization, {"axis": [1, 2], "epsilon": 1e-6, "scale": False}),
        (adv.layers.MultiHeadAttention, {"num_heads": 3, "key_dim": 2, "value_dim": 5, "dropout": 0.1,
                                         "kernel_initializer": "he_normal", "output_shape": 7, "trainable": False}),
        (adv.layers.Attention, {"use_scale": True, "dropout": 0.2, "seed": 3}),
    ]
    for cls, kwargs in given:
        config = cls(**kwargs).get_config()
        assert {k: config.get(k) for k in kwargs} == kwargs, cls.__name__     # every argument is kept
        assert cls.from_config(config).get_config() == config, cls.__name__
