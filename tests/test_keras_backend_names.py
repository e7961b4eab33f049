"""Keras 3 names a guide types that are not ops (issue 37): ``keras.backend.clear_session`` / ``floatx`` /
``epsilon`` as ``adv.backend.*``, and ``variable.path``."""
import numpy as np
import pytest

import autodiff_viz as adv


def test_backend_clear_session_restarts_default_names():
    adv.layers.Dense(1)
    adv.backend.clear_session()
    assert adv.layers.Dense(1).name == "dense" and adv.layers.Dense(1).name == "dense_1"
    assert adv.backend.floatx() == "float32" and adv.backend.epsilon() == 1e-7
    assert adv.backend.image_data_format() == "channels_last"


def test_variable_path_is_where_the_weight_lives():
    adv.backend.clear_session()
    model = adv.Sequential([adv.layers.Dense(2, name="hidden"), adv.layers.Dense(1)])
    model.build((None, 3))
    # built by the model: its name comes first, as Keras 3's "sequential/hidden/kernel"
    assert [v.path for v in model.weights] == [f"sequential/{p}" for p in ("hidden/kernel", "hidden/bias",
                                                                           "dense/kernel", "dense/bias")]
    assert [v.name for v in model.weights] == ["kernel", "bias"] * 2
    assert adv.Variable(np.zeros(2), name="w").path == "w"


LEGACY_CASES = [  # (name, args): K.<name>(*args), compared with TensorFlow 2.21's tf.keras.backend where installed
    ("square", ([[1.0, -2.0], [3.0, 0.5]],)), ("transpose", ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],)),
    ("sum", ([[1.0, 2.0], [3.0, 4.0]], 0)), ("mean", ([[1.0, 2.0], [3.0, 5.0]], -1, True)),
    ("mean", ([True, False, True, True],)), ("max", ([[1.0, 7.0], [3.0, 4.0]], 1)), ("min", ([1.0, -7.0, 3.0],)),
    ("std", ([1.0, 2.0, 4.0],)), ("var", ([1.0, 2.0, 4.0],)), ("abs", ([-1.5, 2.0],)), ("sqrt", ([4.0, -1.0],)),
    ("exp", ([0.0, 1.0],)), ("log", ([1.0, 2.0],)), ("pow", ([2.0, 3.0], 3)), ("clip", ([-2.0, 0.5, 3.0], 0.0, 1.0)),
    ("clip", ([-2.0, 0.5, 3.0], 1.0, 0.0)), ("maximum", ([1.0, 5.0], [3.0, 2.0])), ("argmax", ([[1.0, 3.0, 2.0]],)),
    ("dot", ([[1.0, 2.0]], [[3.0], [4.0]])), ("concatenate", ([[[1.0]], [[2.0]]],)), ("flatten", ([[1.0, 2.0]],)),
    ("relu", ([-2.0, 0.5, 9.0], 0.1, 6.0)), ("softmax", ([[1.0, 2.0, 3.0]],)), ("sigmoid", ([0.0, 2.0],)),
    ("cumsum", ([1.0, 2.0, 3.0],)), ("prod", ([2.0, 3.0],)), ("expand_dims", ([1.0, 2.0],)),
    ("permute_dimensions", ([[1.0, 2.0, 3.0]], (1, 0))), ("l2_normalize", ([3.0, 4.0], 0)),
]


@pytest.mark.parametrize("name,args", LEGACY_CASES, ids=[c[0] for c in LEGACY_CASES])
def test_the_legacy_keras_backend_functions_give_tensorflows_values(name, args):
    """``K = tf.keras.backend; K.square(...)`` (Géron ch. 12): TensorFlow 2.21's ``tf.keras.backend`` still has the
    Keras 2 functions; here each is the package's op with the legacy function's value."""
    K = adv.keras.backend
    arrays = [np.asarray(a, dtype=None if isinstance(a[0], bool) else np.float32) if isinstance(a, list) else a
              for a in args]
    ours = np.asarray(K.get_value(getattr(K, name)(*[adv.constant(a) if isinstance(a, np.ndarray) else a
                                                      for a in arrays])))
    try:
        import tensorflow as real_tf
    except ImportError:
        return
    theirs = np.asarray(getattr(real_tf.keras.backend, name)(*[real_tf.constant(a) if isinstance(a, np.ndarray)
                                                                else a for a in arrays]))
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_legacy_backend_constant_variable_zeros_use_floatx():
    K = adv.keras.backend
    assert K.constant(3).dtype == np.float32 and K.variable([1, 2]).dtype == np.float32
    assert isinstance(K.zeros((2, 3)), adv.Variable) and K.ones((2,)).dtype == np.float32
    assert K.int_shape(K.zeros((2, 3))) == (2, 3) and K.ndim(K.zeros((2, 3))) == 2
    assert K.variable(1.0, constraint=adv.abs).constraint is adv.abs
