"""``adv.backend``: the ``keras.backend`` names a guide types (``keras.backend.clear_session()``,
``floatx()``, ``epsilon()``), gathered from :mod:`autodiff_viz.base.session` where they live.

    >>> adv.backend.clear_session()     # default layer names start again at "dense"
    >>> adv.backend.floatx()            # "float32", the default dtype of new layers
"""
from .base.session import clear_session, floatx, set_floatx
from .losses import EPSILON


def epsilon() -> float:
    """Keras' fuzz factor, ``1e-7``: the clip of probabilities in the cross-entropies (``keras.backend.epsilon``)."""
    return EPSILON


def image_data_format() -> str:
    """``"channels_last"``: the only layout of images here, Keras' default (``keras.backend.image_data_format``)."""
    return "channels_last"


__all__ = ["clear_session", "floatx", "set_floatx", "epsilon", "image_data_format"]
