"""``adv.initializers`` has Keras 3's initializers (issue 43): the variance-scaling family with Keras' spreads,
``Identity``, the snake_case names Keras exports for its classes, and ``serialize`` / ``deserialize`` in
Keras' format — each compared with ``keras.initializers`` itself."""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import autodiff_viz as adv  # noqa: E402

keras = pytest.importorskip("keras")
init = adv.initializers
SHAPE = (200, 300)          # enough draws that the spreads are within 2 %


@pytest.mark.parametrize("mode,distribution", [(m, d) for m in ("fan_in", "fan_out", "fan_avg")
                                               for d in ("truncated_normal", "untruncated_normal", "uniform")])
def test_variance_scaling_spreads_match_keras(mode, distribution):
    ours = np.asarray(init.VarianceScaling(2.0, mode, distribution, seed=1)(SHAPE))
    theirs = np.asarray(keras.initializers.VarianceScaling(2.0, mode, distribution, seed=1)(SHAPE))
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours.std(), theirs.std(), rtol=0.02)
    assert abs(ours.mean()) < 0.01
    if distribution != "untruncated_normal":                       # bounded: the same bound as Keras'
        assert np.abs(ours).max() <= np.abs(theirs).max() * 1.02


@pytest.mark.parametrize("name", ["LecunNormal", "LecunUniform", "lecun_normal", "lecun_uniform"])
def test_lecun_initializers_match_keras(name):
    ours, theirs = getattr(init, name)(seed=3)(SHAPE), getattr(keras.initializers, name)(seed=3)(SHAPE)
    np.testing.assert_allclose(np.asarray(ours).std(), np.asarray(theirs).std(), rtol=0.02)
    again = getattr(init, name)(seed=3)(SHAPE)
    np.testing.assert_array_equal(ours, again)                     # a seeded initializer repeats


def test_identity_and_snake_case_names_are_keras_classes():
    for ours in (init.Identity(gain=2.0), init.IdentityInitializer(2.0), init.identity(gain=2.0)):
        np.testing.assert_array_equal(ours((2, 3)), np.asarray(keras.initializers.Identity(gain=2.0)((2, 3))))
    with pytest.raises(ValueError, match=r"Identity initializer: the shape must have 2 axes.*\(3, 3, 2\)"):
        init.Identity()((3, 3, 2))
    assert init.OrthogonalInitializer is init.Orthogonal and init.constant is init.Constant
    assert init.truncated_normal is init.TruncatedNormal and init.variance_scaling is init.VarianceScaling
    np.testing.assert_array_equal(init.constant(0.5)((2,)), [0.5, 0.5])


def test_serialize_and_deserialize_use_keras_format():
    for ours, theirs in ((init.VarianceScaling(2.0, "fan_out", "uniform", seed=3),
                          keras.initializers.VarianceScaling(2.0, "fan_out", "uniform", seed=3)),
                         (init.Constant(2.0), keras.initializers.Constant(2.0)),
                         (init.LecunNormal(seed=1), keras.initializers.LecunNormal(seed=1))):
        got, want = init.serialize(ours), keras.initializers.serialize(theirs)
        assert {k: got[k] for k in ("module", "class_name")} == {k: want[k] for k in ("module", "class_name")}
        for key, value in got["config"].items():
            assert want["config"][key] == value, (key, got, want)
        back = init.deserialize(want)                       # Keras' own dict comes back as ours
        assert type(back).__name__ == want["class_name"] and back.get_config() == got["config"]
    assert isinstance(init.deserialize("lecun_uniform"), init.LecunUniform)
    with pytest.raises(ValueError, match="unknown initializer 'lecun'"):
        init.deserialize("lecun")


def test_layers_take_the_new_names():
    layer = adv.layers.Dense(4, kernel_initializer="lecun_normal", bias_initializer=init.Constant(0.1))
    layer.build((None, 300))
    assert abs(float(np.std(layer.kernel.numpy())) - np.sqrt(1 / 300)) < 0.1 * np.sqrt(1 / 300)
    np.testing.assert_allclose(layer.bias.numpy(), 0.1, rtol=1e-6)
    dense = adv.layers.Dense(3, kernel_initializer="identity")
    dense.build((None, 3))
    np.testing.assert_array_equal(dense.kernel.numpy(), np.eye(3))
