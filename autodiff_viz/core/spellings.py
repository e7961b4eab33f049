"""Other libraries' spellings, and what to write here instead.

``adv.gather(x, i)`` (TensorFlow) or ``adv.clamp(x, 0, 1)`` (PyTorch) raise
an ``AttributeError`` whose message is the call to write in this package
(``adv.take(x, i, axis=...)``, ``adv.clip(x, 0, 1)``); :func:`foreign_spelling`
gives that message for a name, and the package face asks it for any name it
does not have. The tensor's own PyTorch methods (``t.detach()``) get their
hint from :mod:`~autodiff_viz.core.tensor`.
"""
from __future__ import annotations

from ..base.tf_surface import out_of_scope_message
from .methods import _NEAREST
from .tensor import _TORCH_HINTS

# ----- other libraries' names: what to write here (``adv.clamp`` raises with the answer) --------------------
# TensorFlow's names that only spell an op differently are real here (adv.reduce_sum, adv.concat, adv.math.*:
# autodiff_viz/math.py); a hint stays for a name whose meaning has no counterpart under that name.
_TF = "that is TensorFlow's spelling"
_TORCH = "that is PyTorch's spelling"
_TF_TORCH = "that is TensorFlow's and PyTorch's spelling"
_KERAS = "that is the spelling of keras.ops"
_EVERYONE = "that is the spelling of TensorFlow, keras.ops and PyTorch"
_NP_KERAS_TORCH = "that is the spelling of numpy, keras.ops and PyTorch"
_NUMPY = "numpy has it, with no gradient rule here"

_SPELLINGS = {
    "clamp": (_TORCH, "adv.clip(x, min, max)"),
    "cat": (_TORCH, "adv.concatenate(tensors, axis=...)"),
    "ndim": ("that is the spelling of numpy and keras.ops", "x.ndim"),
    "numel": (_TORCH, "x.size"),
    "squared_difference": ("TensorFlow keeps it in tf.math", "adv.math.squared_difference(a, b)"),
    "rsqrt": ("TensorFlow keeps it in tf.math; PyTorch's spelling too", "adv.math.rsqrt(x)"),
    "divide_no_nan": ("TensorFlow keeps it in tf.math", "adv.math.divide_no_nan(a, b)"),
    "l2_normalize": ("TensorFlow keeps it in tf.math and tf.nn", "adv.math.l2_normalize(x, axis=...)"),
    "normalize": (_KERAS, "x / adv.norm(x, axis=..., keepdims=True)"),
    "moments": ("that is the spelling of tf.nn and keras.ops", "adv.nn.moments(x, axes=[...])"),
    "relu6": (_KERAS, "adv.clip(x, 0.0, 6.0)"),
    "count_nonzero": (_EVERYONE, "adv.math.count_nonzero(x) (a count: no gradient)"),
    "fori_loop": (_KERAS, "a Python for loop (every step is recorded)"),
    "convert_to_numpy": (_KERAS, "x.numpy()"),
    "ForwardAccumulator": ("that is TensorFlow's forward mode, tf.autodiff.ForwardAccumulator",
                           "out, tangent_out = adv.jvp(f, (primals,), (tangents,)) (one Jacobian-vector product), "
                           "or adv.jacobian(f, mode='forward')(x)"),
    "empty": (_NP_KERAS_TORCH, "adv.zeros(shape) (a tensor always holds values)"),
    "empty_like": ("that is the spelling of numpy and PyTorch", "adv.zeros_like(x)"),
    "full_like": (_NP_KERAS_TORCH, "adv.full(adv.shape(x), value, dtype=x.dtype)"),
    "arange": (_NP_KERAS_TORCH, "adv.constant(np.arange(start, stop, step)) (a range of numbers has no gradient)"),
    "array": ("that is numpy's spelling", "adv.constant(value)"),
    "asarray": ("that is numpy's spelling", "adv.constant(value) (or x.numpy() for the numbers)"),
    "as_tensor": (_TORCH, "adv.constant(value)"),
    "from_numpy": (_TORCH, "adv.constant(array)"),
    "no_grad": (_TORCH, "ops outside a GradientTape are not recorded; inside one, use a "
                        "with tape.stop_recording() block"),
    "manual_seed": (_TORCH, "adv.layers.set_random_seed(seed) (or seed= on the adv.random functions)"),
    "randn": (_TORCH, "adv.random.normal(shape)"),
    "rand": (_TORCH, "adv.random.uniform(shape)"),
    "randint": (_TORCH, "adv.random.randint(shape, minval, maxval)"),
    "flatten": (_TORCH, "adv.ravel(x), or x.reshape(n, -1) to keep the batch axis (adv.layers.Flatten in a model)"),
    "bmm": (_TORCH, "x @ y or adv.matmul(x, y) (stacked matrices multiply as in numpy)"),
    "mul": (_TORCH, "x * y or adv.multiply(x, y)"),
    "sub": (_TORCH, "x - y or adv.subtract(x, y)"),
    "div": (_TORCH, "x / y or adv.divide(x, y)"),
    "floordiv": (_TF, "x // y or adv.floor_divide(x, y)"),
    "neg": (_TORCH, "-x or adv.negative(x)"),
    "unbind": (_TORCH, "list(x) (the slices along axis 0), or [x[:, i] for i in range(n)]"),
    "top_k": ("TensorFlow keeps it in tf.math and tf.nn", "adv.math.top_k(x, k) (values and indices)"),
    "topk": (_TORCH, "adv.sort(x)[..., -k:] for the k largest values (ascending), adv.argsort(x)[..., -k:] "
                     "for their positions"),
    "autograd": (_TORCH, "tape.gradient(y, x) with adv.GradientTape, or adv.grad / adv.vjp / adv.jacobian"),
    "func": (_TORCH, "adv.grad, adv.vjp, adv.jvp, adv.jacobian, adv.hessian (JAX's names, as torch.func)"),
    "optim": (_TORCH, "adv.optimizers (SGD, Adam, RMSprop, with Keras 3 names)"),
    "cuda": (_TORCH, "nothing to set up: everything runs on the CPU with numpy"),
}
for _name in ("reduce_std", "reduce_variance", "reduce_euclidean_norm"):
    _SPELLINGS[_name] = ("TensorFlow keeps it in tf.math", f"adv.math.{_name}(x, axis=..., keepdims=...)")
for _name in ("relu", "softmax", "log_softmax", "softplus", "softsign", "elu", "selu", "gelu", "silu",
              "swish", "leaky_relu", "log_sigmoid", "hard_sigmoid"):
    _SPELLINGS[_name] = ("an activation, kept in adv.nn", f"adv.nn.{_name}(x)")
for _name in ("binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy"):
    _SPELLINGS[_name] = (_KERAS, f"adv.losses.{_name}(y_true, y_pred, from_logits=...)")
_SPELLINGS["logical_xor"] = ("TensorFlow keeps it in tf.math", "adv.math.logical_xor(a, b) (booleans: no gradient)")
for _name in ("is_nan", "is_inf", "is_finite"):
    _SPELLINGS[_name] = ("TensorFlow keeps it in tf.math", f"adv.math.{_name}(x) (booleans: no gradient)")
for _name in ("isnan", "isinf", "isfinite", "isclose", "allclose"):
    _SPELLINGS[_name] = (_NP_KERAS_TORCH, f"np.{_name}(...) (booleans: no gradient)")

# PyTorch functions whose hint the Tensor already gives for the method of the same name
_TORCH_FUNCTIONS = {"unsqueeze", "permute", "detach", "clone", "mm", "narrow", "masked_fill", "index_select",
                    "chunk"}


def foreign_spelling(name: str) -> str | None:
    """What ``adv.<name>`` should say when ``name`` is another library's spelling of something here, else None.

    The package's module ``__getattr__`` raises it as an AttributeError, as a Tensor does for a PyTorch
    method name (``x.view``): the name, whose spelling it is, and what to write instead. PyTorch's
    function names that are also tensor methods (``torch.unsqueeze``, ``torch.permute`` ...) and numpy
    functions without a rule (``np.median`` ...) take their hint from the Tensor's tables.
    """
    out_of_scope = out_of_scope_message(f"tf.{name}", "autodiff_viz")
    if out_of_scope is not None:
        return out_of_scope
    if name in _SPELLINGS:
        whose, hint = _SPELLINGS[name]
    elif name in _TORCH_FUNCTIONS:
        whose, hint = _TORCH, _TORCH_HINTS[name]
    elif name in _NEAREST:
        whose, hint = _NUMPY, _NEAREST[name]
    else:
        return None
    return f"module 'autodiff_viz' has no attribute {name!r} ({whose}). In autodiff_viz: {hint}."
