"""Dense: ``activation(inputs @ kernel + bias)``."""
from __future__ import annotations

from .. import regularizers
from . import activations
from .base import Layer, positive_int


def weight_options(layer, activation, use_bias, activity_regularizer, **weights) -> None:
    """Store a layer's ``activation`` and ``use_bias``, its activity regularizer and, for each weight
    ``name=(initializer, regularizer, constraint)``, Keras' ``<name>_initializer`` (as given),
    ``<name>_regularizer`` (resolved, as Keras) and ``<name>_constraint``."""
    layer.activation = activations.get(activation)
    layer.use_bias = bool(use_bias)
    layer.activity_regularizer = regularizers.get(activity_regularizer)
    for name, (initializer, regularizer, constraint) in weights.items():
        setattr(layer, f"{name}_initializer", initializer)
        setattr(layer, f"{name}_regularizer", regularizers.get(regularizer))
        setattr(layer, f"{name}_constraint", constraint)


def option_weight(layer, option: str, shape, name: str | None = None):
    """``layer.add_weight(shape)`` with the initializer, regularizer and constraint :func:`weight_options`
    stored for ``option`` (``"kernel"``, ``"bias"``, ``"depthwise"`` ...), named ``name`` (default: ``option``)."""
    return layer.add_weight(shape, getattr(layer, f"{option}_initializer"), name=name or option,
                            regularizer=getattr(layer, f"{option}_regularizer"),
                            constraint=getattr(layer, f"{option}_constraint"))


def kernel_and_bias_options(layer, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                            bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint) -> None:
    """Store the options that ``Dense`` and the convolutions share (names resolved, as Keras)."""
    weight_options(layer, activation, use_bias, activity_regularizer,
                   kernel=(kernel_initializer, kernel_regularizer, kernel_constraint),
                   bias=(bias_initializer, bias_regularizer, bias_constraint))


def activation_config(activation):
    """An activation as a config value: its name when ``activations.get(name)`` gives this very function back
    (``"relu"``), else the callable itself (``adv.saving`` writes a function by its name and module)."""
    return activations.name_of(activation) or activation


def weight_config(layer, *names) -> dict:
    """The options :func:`weight_options` stored, for the weights ``names``, as ``get_config`` entries
    (objects as given: a regularizer, a constraint or an initializer function is written by ``adv.saving``)."""
    config = {"activation": activation_config(layer.activation), "use_bias": layer.use_bias,
              "activity_regularizer": layer.activity_regularizer}
    for name in names:
        for option in ("initializer", "regularizer", "constraint"):
            config[f"{name}_{option}"] = getattr(layer, f"{name}_{option}")
    return config


def kernel_and_bias_config(layer) -> dict:
    """The options of :func:`kernel_and_bias_options` as ``get_config`` entries."""
    return weight_config(layer, "kernel", "bias")


class Dense(Layer):
    """A fully connected layer, as ``keras.layers.Dense``.

    ``kernel`` has shape ``(input_dim, units)`` and multiplies the last axis
    of the input, so ``(batch, input_dim)`` gives ``(batch, units)`` and
    ``(batch, time, input_dim)`` gives ``(batch, time, units)``.

        >>> layer = Dense(3, activation="relu")
        >>> layer(np.ones((2, 4))).shape
        (2, 3)

    Args:
        units: number of outputs.
        activation: a name (``"relu"``, ``"tanh"``, ``"sigmoid"``,
            ``"softmax"``, ``"linear"``, ``"leaky_relu"``, ``"softplus"``), a
            callable, or None (linear).
        use_bias: add a bias vector.
        kernel_initializer: a name or a callable (default ``"glorot_uniform"``, as Keras).
        bias_initializer: a name or a callable (default ``"zeros"``, as Keras).
        kernel_regularizer: a penalty on the kernel (``adv.regularizers.L2(0.01)``,
            ``"l1"`` ...) added to ``layer.losses``.
        bias_regularizer: the same for the bias.
        activity_regularizer: a penalty on the layer's output, added the same way.
        kernel_constraint: a function applied to the kernel after each optimizer step.
        bias_constraint: the same for the bias.
    """
    backward_text = {"x": "ḡ_x = (ḡ_y ⊙ f′(z)) · Wᵀ", "kernel": "ḡ_W = xᵀ · (ḡ_y ⊙ f′(z))",
                     "bias": "ḡ_b = Σ_batch (ḡ_y ⊙ f′(z))",     # z = x·W + b, y = f(z); W is (in, out)
                     # PyTorch's Linear (views/figure.py's ALIASES): y = x·Wᵀ + b, no activation, W is (out, in)
                     "x (torch)": "ḡ_x = ḡ_y · W", "kernel (torch)": "ḡ_W = ḡ_yᵀ · x  (W is (out, in) in torch)",
                     "bias (torch)": "ḡ_b = Σ_batch ḡ_y"}

    _single_input = True
    supports_masking = True

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.units = positive_int("Dense", "units", units)
        kernel_and_bias_options(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                                bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint)

    def build(self, input_shape):
        if not input_shape:
            raise ValueError(f"{self.name}: Dense needs inputs with at least one axis (features last), "
                             f"got shape {input_shape}.")
        self.kernel = option_weight(self, "kernel", (input_shape[-1], self.units))
        self.bias = option_weight(self, "bias", (self.units,)) if self.use_bias else None

    def call(self, inputs):
        if inputs.shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"{self.name}: this layer was built for inputs with {self.kernel.shape[0]} features "
                             f"(last axis), got shape {inputs.shape}. A layer keeps the input size of its first call.")
        y = inputs @ self.kernel
        if self.use_bias:
            y = y + self.bias
        y = self.activation(y)
        if self.activity_regularizer is not None:
            self.add_loss(self.activity_regularizer(y))
        return y

    def get_config(self) -> dict:
        """Keras 3's base keys and every argument: ``units``, ``activation`` (its name when it has one),
        ``use_bias``, the initializers, regularizers and constraints. ``Dense.from_config(d.get_config())``
        is a new, unbuilt layer of the same kind."""
        return {**super().get_config(), "units": self.units, **kernel_and_bias_config(self)}
