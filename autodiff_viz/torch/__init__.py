"""The PyTorch bridge: see and explain a real PyTorch gradient; take a model on to PyTorch.

Only ``import autodiff_viz.torch`` imports torch, 2.4 or newer (``pip install 'autodiff_viz[torch]'``
keeps a torch already installed); the rest of the package never does.

    >>> import autodiff_viz as adv
    >>> with adv.torch.record() as rec:
    ...     loss = model(x).pow(2).mean()
    ...     loss.backward()
    >>> adv.show(rec.trace(loss, list(model.parameters())))   # PyTorch's own gradients, our explorer
    >>> rec.explain(loss, model.fc2.weight).reason          # why is .grad None?

* :func:`record` — a :class:`Recording` of every torch operation run inside
  (a ``torch.overrides.TorchFunctionMode``), with the user's ``file:line``,
  the variable the line assigns, shapes, dtypes, ``requires_grad``, grad
  mode, and the ``nn.Module`` each op ran in (as a scope, so graphs fold by
  module as they fold by layer).
* ``rec.trace(target, sources)`` — an :class:`autodiff_viz.Trace` whose
  gradients are computed by PyTorch's autograd, with the rule table's
  factor text on every op that maps to a rule.
* ``rec.explain`` / :func:`explain` — why a ``.grad`` is None or zero.
* ``rec.compare`` — exercise mode on a PyTorch worksheet.
* :func:`to_module` / :func:`load_from` — an autodiff_viz model as a
  ``torch.nn.Module`` with the same weights, and back.
"""
from __future__ import annotations

from ..bridges.requirements import too_old as _too_old

TORCH_FLOOR = (2, 4)    # the oldest torch with every API the bridge calls (pyproject.toml's [torch] extra says which)
_INSTALL = ("pip install 'autodiff_viz[torch]' (torch>=2.4; a torch already installed at 2.4 or newer, CUDA or "
            "CPU build, is kept)")

try:
    import torch as _torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError(f"autodiff_viz.torch needs PyTorch, which is not installed. Install it with: {_INSTALL} "
                      "(see docs/install.md).") from exc

_error = _too_old("autodiff_viz.torch", "PyTorch", _torch.__version__, TORCH_FLOOR,
                  f"Upgrade it with: {_INSTALL}")
if _error is not None:
    raise _error

from .explain import REASONS
from .graph_only import explain
from .export import load_from, to_module
from .record import Recording, record

__all__ = ["record", "Recording", "explain", "REASONS", "to_module", "load_from"]
