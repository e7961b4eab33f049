"""``adv.utils``: the Keras 3 utilities a course notebook uses, with Keras' names, arguments and results.

    >>> adv.utils.to_categorical([0, 2, 1])            # one-hot labels for categorical_crossentropy
    >>> adv.utils.pad_sequences([[1, 2, 3], [4, 5]])    # ragged token lists -> one int32 array
    >>> adv.utils.set_random_seed(0)                    # repeatable weights and fit shuffling
    >>> adv.utils.plot_model(model, show_shapes=True)   # one box per layer, as SVG in a notebook

Like ``keras.utils``, this is a namespace that gathers utilities living where
their meaning is: :mod:`~autodiff_viz.utils.array_utils` (``to_categorical``,
``normalize``, ``pad_sequences``), :mod:`~autodiff_viz.utils.image_utils` (``save_img``,
``img_to_array``, ``load_img``, ``array_to_img``: PNG without Pillow, the rest
with ``pip install pillow``), :mod:`~autodiff_viz.base.session` (``set_random_seed``),
:mod:`~autodiff_viz.views.model_plot` (``plot_model``).
"""
from .array_utils import normalize, pad_sequences, to_categorical
from ..base.session import set_random_seed
from .image_utils import array_to_img, img_to_array, load_img, save_img
from ..views.model_plot import ModelPlot, plot_model

__all__ = ["to_categorical", "normalize", "pad_sequences", "set_random_seed", "plot_model", "ModelPlot",
           "array_to_img", "img_to_array", "load_img", "save_img"]
