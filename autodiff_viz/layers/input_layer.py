"""The functional API's layers of its own: ``Input`` / ``InputLayer``, and ``Operation`` (an operator as a graph step).

``adv.layers.Input(shape=(4,))`` makes an :class:`InputLayer` and returns its
symbolic output; ``x + h`` on symbolic tensors becomes an :class:`Operation`
(Keras 3 lets the functional API use operators), so importing this module
gives :class:`~autodiff_viz.layers.keras_tensor.KerasTensor` its operators.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import ModelFileError
from ..base.naming import INPUT
from ..base.session import floatx, unique_name
from ..core.ops import cast
from ..core.tensor import Tensor, constant
from .base import Layer
from .keras_tensor import KerasTensor, _only, _SymbolicNode

if TYPE_CHECKING:
    from typing import Sequence

    from numpy.typing import DTypeLike


class Operation(Layer):
    """An operator used on symbolic tensors (``x + shortcut``, ``2 * h``, ``h[:, 0]``), as a graph step.

    Keras 3 lets the functional API use operators on symbolic tensors; each
    becomes one step of the model, named after the op (``add``,
    ``multiply``, ``get_item`` ...), with no weights and no casting.
    """

    _autocast = False
    _keras_kind = "operation"
    #: The operators a graph step may run, by the name its config holds.
    OPS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv,
           "matmul": operator.matmul, "power": operator.pow, "negative": operator.neg, "get_item": operator.getitem}

    def __init__(self, fn, op_name, **kwargs):
        super().__init__(name=kwargs.pop("name", None) or unique_name(op_name), **kwargs)
        self.fn = fn

    def _convert_inputs(self, inputs):
        """The operands as given: the operator converts its own (``h[:, 0]``'s index stays an index, ``2 * h``'s
        number a Python number, as outside a model)."""
        return inputs

    def call(self, inputs):
        return self.fn(*inputs)

    def get_config(self) -> dict:
        """``{"name", "op"}``: the step as data; an operator outside :attr:`OPS` cannot be written."""
        op = next((k for k, fn in self.OPS.items() if fn is self.fn), None)
        if op is None:
            raise TypeError(f"the graph step {self.name!r} runs {self.fn!r}, which cannot be written as data. Write "
                            "it as a layer: adv.layers.Lambda(function) (saved as code, loaded with safe_mode=False) "
                            "or a Layer subclass with get_config().")
        return {"name": self.name, "op": op}

    @classmethod
    def from_config(cls, config: dict):
        op = config.get("op")
        if op not in cls.OPS:
            raise ModelFileError(f"a graph step of unknown op {op!r}; the ops that are written as data are "
                                 f"{sorted(cls.OPS)}.")
        return cls(cls.OPS[op], op, name=config.get("name"))


class InputLayer(Layer):
    """The layer behind :func:`Input`: it passes its input on, cast to its dtype."""

    _autocast = False
    _keras_kind = "input"

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None, batch_shape=None):
        super().__init__(name=name or unique_name("input_layer"))
        if batch_shape is None:
            if shape is None:
                raise ValueError("Input: give the shape of one sample, e.g. Input(shape=(784,)).")
            if isinstance(shape, (int, np.integer)):
                shape = (shape,)
            batch_shape = (batch_size, *shape)
        try:
            batch_shape = tuple(None if s is None else int(s) for s in batch_shape)
        except (TypeError, ValueError):
            raise TypeError(f"Input: shape must be a tuple of ints (None for any size), got {shape!r}.") from None
        if any(s is not None and s < 0 for s in batch_shape):
            raise ValueError(f"Input: sizes must be non-negative, got {batch_shape[1:]}.")
        self._explicit_dtype = dtype is not None
        self.dtype = np.dtype(dtype or floatx()).name
        if np.dtype(self.dtype).kind not in "fiub":
            raise TypeError(f"Input: dtype must be numeric, got {self.dtype!r}.")
        self.batch_shape = batch_shape
        self.built = True
        node = _SymbolicNode(self, (), {}, ([(batch_shape, self.dtype)], _only))
        self._tensor = node.outputs

    def call(self, inputs):
        return inputs

    def get_config(self) -> dict:
        """``batch_shape``, ``dtype`` (None when it was not given: the data's float stays) and ``name``, as Keras 3."""
        return {"batch_shape": list(self.batch_shape), "dtype": self.dtype if self._explicit_dtype else None,
                "name": self.name}

    @classmethod
    def from_config(cls, config: dict):
        return cls(batch_shape=config.get("batch_shape"), shape=config.get("shape"), dtype=config.get("dtype"),
                   name=config.get("name"))

    def _convert(self, x):
        if isinstance(x, Tensor):
            return cast(x, self.dtype) if x.dtype != self.dtype and self._explicit_dtype else x
        return constant(np.asarray(x), dtype=self.dtype if self._explicit_dtype or
                        np.asarray(x).dtype.kind not in "f" else None, name=INPUT)   # drawn as the model's input


def Input(shape: Sequence[int | None] | None = None, batch_size: int | None = None, dtype: DTypeLike | None = None,
          name: str | None = None, batch_shape: Sequence[int | None] | None = None) -> KerasTensor:
    """A symbolic input: ``x = Input(shape=(784,))``, then call layers on ``x`` (Keras' functional API).

    Args:
        shape: the shape of one sample, without the batch axis (``None``
            for a size that may vary, e.g. ``(None, 8)`` for sequences).
        batch_size: a fixed batch size (default: any).
        dtype: the dtype the model casts this input to (default
            :func:`floatx`; use ``"int32"`` for indices fed to ``Embedding``).
        name: the name of the input (and of its ``InputLayer``).

    As the first entry of ``Sequential([Input((4,)), ...])`` it gives the
    model its input shape, so the model is built at once.
    """
    return InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, name=name, batch_shape=batch_shape)._tensor


def _operator(name, fn, swap=False):
    """A symbolic tensor's operator: a graph step that runs ``fn`` (``x + h`` is ``Operation(add)([x, h])``)."""
    def method(self, *other):
        args = [*other, self] if swap else [self, *other]
        return Operation(fn, name)(args)
    method.__name__ = method.__qualname__ = name
    return method


for _dunder, _name, _fn in (("add", "add", operator.add), ("sub", "subtract", operator.sub),
                            ("mul", "multiply", operator.mul), ("truediv", "divide", operator.truediv),
                            ("matmul", "matmul", operator.matmul)):
    setattr(KerasTensor, f"__{_dunder}__", _operator(_name, _fn))
    setattr(KerasTensor, f"__r{_dunder}__", _operator(_name, _fn, swap=True))
KerasTensor.__pow__ = _operator("power", operator.pow)
KerasTensor.__neg__ = _operator("negative", operator.neg)
KerasTensor.__getitem__ = _operator("get_item", operator.getitem)
