"""What a learner types, as a type checker reads it (``mypy``: see ``[tool.mypy]`` in pyproject.toml).

Not a test module (pytest collects ``test_*.py`` only): ``tests/test_install_typing.py``
runs mypy over this file and the public modules. Every call below is one the
docs show; ``assert_type`` pins what an editor infers, so a signature that
loses its annotations, or changes what it returns, fails the check.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from typing_extensions import assert_type

import autodiff_viz as adv

w = adv.Variable([[0.5, -1.0], [2.0, 0.3]], name="w")
x = adv.constant([1.0, 2.0])
assert_type(x, adv.Tensor)
with adv.GradientTape() as tape:
    assert_type(tape, adv.GradientTape)
    h = adv.tanh(adv.matmul(x, w))
    loss = adv.sum(adv.square(h), axis=None)
assert_type(h, adv.Tensor)
assert_type(loss, adv.Tensor)
assert_type(adv.exp(2.0), adv.Tensor)
assert_type(adv.log1p(np.ones(3)), adv.Tensor)          # made by a factory from the rule table
assert_type(adv.maximum([1.0, 2.0], 0.0), adv.Tensor)
assert_type(adv.mean(loss, axis=(0,), keepdims=True), adv.Tensor)
assert_type(adv.reshape(w, (4,)), adv.Tensor)
assert_type(adv.split(w, 2, axis=0), list[adv.Tensor])
assert_type(adv.reduce_sum(w, axis=1), adv.Tensor)
assert_type(adv.linalg.norm(w), adv.Tensor)
assert_type(adv.zeros((2, 3), dtype=adv.float64), adv.Tensor)
assert_type(adv.grad(lambda v: adv.sum(v ** 2)), Callable[..., Any])
assert_type(adv.check_grads(adv.tanh, (x,)), adv.GradCheckReport)
assert_type(adv.__version__, str)
explorer = adv.show(tape, target=loss, sources=[w])
page: str = explorer.static_html()


def bridges() -> None:
    """The bridges' public functions, typed as they are documented (not run: no framework needed to check)."""
    import torch

    model = adv.Sequential([adv.layers.Dense(3), adv.layers.Dense(1)])
    with adv.torch.record() as rec:
        y = torch.ones(3, requires_grad=True).pow(2).sum()
    assert_type(rec, adv.torch.Recording)
    assert_type(rec.trace(y), adv.Trace)
    assert_type(adv.torch.to_module(model), torch.nn.Module)
    with adv.tf.record() as tf_rec:
        pass
    assert_type(tf_rec.trace(y), adv.Trace)
    adv.tf.load_from(model, adv.tf.to_keras(model))
