"""Keras 3 names a guide types that are not ops (issue 37): ``keras.backend.clear_session`` / ``floatx`` /
``epsilon`` as ``adv.backend.*``, and ``variable.path``."""
import numpy as np

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
