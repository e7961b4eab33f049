"""Follow-ups of issue 47: the partial-gradient warning under ``model.fit``; the library-set grad mode; weights
created inside a Keras layer's ``call``."""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.diagnosis import escapes


@pytest.fixture(autouse=True)
def fresh_lines():
    """Each test starts with no line warned about yet (the warning is once per line and process)."""
    saved = set(escapes._WARNED)
    escapes._WARNED.clear()
    yield
    escapes._WARNED.clear()
    escapes._WARNED.update(saved)


def _line(text: str, fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, ln in enumerate(lines) if text in ln)


class NumpyDot(adv.layers.Layer):
    """A custom layer whose call escapes through an ndarray, as CS231n's ``X.dot(W)`` with ``X`` numpy; its L2
    penalty (``add_loss``) keeps ``w`` connected, so the gradient is partial, not None."""

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], 1), initializer="ones")
        self.b = self.add_weight(shape=(1,), initializer="zeros")

    def call(self, x):
        self.add_loss(0.01 * adv.ops.sum(self.w * self.w))
        return np.asarray(x).dot(self.w) + self.b                       # <- escape


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3))
    return x, x @ np.array([[1.0], [-2.0], [0.5]])


def test_fit_warns_once_at_the_users_line_when_a_layer_escapes_through_an_ndarray():
    x, y = _data()
    model = adv.Sequential([adv.layers.Input((3,)), NumpyDot()])
    model.compile("sgd", "mse")
    with pytest.warns(adv.PartialGradientWarning) as caught:
        model.fit(x, y, epochs=2, batch_size=4, verbose=0)              # <- fit
    partial = [w for w in caught if issubclass(w.category, adv.PartialGradientWarning)]
    assert len(partial) == 1, [str(w.message) for w in partial]
    here = test_fit_warns_once_at_the_users_line_when_a_layer_escapes_through_an_ndarray
    assert partial[0].filename == __file__
    assert partial[0].lineno == _line("# <- fit", here)
    assert f"line {_line('# <- escape', NumpyDot)}" in str(partial[0].message)


def test_fit_on_a_normal_model_does_not_warn():
    x, y = _data()
    model = adv.Sequential([adv.layers.Input((3,)), adv.layers.Dense(1)])
    model.compile("sgd", "mse")
    with warnings.catch_warnings():
        warnings.simplefilter("error", adv.PartialGradientWarning)
        model.fit(x, y, epochs=2, batch_size=4, verbose=0)


def test_a_no_grad_decorated_library_helper_is_named_by_the_users_call_into_it(monkeypatch):
    """The grad mode was set by the library's decorator, not by the user: the line is the user's call into the
    helper, and the fix does not tell the user to remove a ``with torch.no_grad()`` they never wrote.

    ``tests/fake_library.py`` is counted as installed code for this test (as a package in site-packages is)."""
    torch = pytest.importorskip("torch")
    from autodiff_viz.torch import provenance
    from tests import fake_library
    monkeypatch.setattr(provenance.LIBRARY, "dirs", provenance.LIBRARY.dirs + (fake_library.__file__,))
    monkeypatch.setattr(provenance.LIBRARY, "known", {})
    lin = torch.nn.Linear(3, 2)
    with adv.torch.record() as rec:
        h = fake_library.project(torch.randn(4, 3), lin.weight)        # <- library call
        loss = (h ** 2).sum()
    assert not loss.requires_grad
    e = rec.explain(loss, lin.weight)
    here = test_a_no_grad_decorated_library_helper_is_named_by_the_users_call_into_it
    assert e.reason == "no_grad"
    assert e.location == f"{__file__}:{_line('# <- library', here)}"
    assert "fake_library.py" not in str(e.location)
    assert "project" in e.message and "decorated" in e.message
    assert "outside `with torch.no_grad()`" not in e.message and "remove the with" not in e.message.lower()
