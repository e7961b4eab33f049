"""Keras 3's attention layers written out in numpy, one query step at a time: the reference the layer tests
compare with (tests/test_layers_conv_more.py, tests/test_layers_rms_concat.py)."""
import numpy as np


def masked_attention(scores, v, v_mask=None, q_mask=None, causal=False):
    """``(out, weights)`` from scores ``(batch, T, S)``: softmax over the keys a step may see (``v_mask``,
    ``causal``), so masked keys get no weight and a query whose keys are all masked gets weights 0 (as this
    package's attention layers); the rows of a masked query step (``q_mask``) are 0."""
    B, T, S = scores.shape
    out, weights = np.zeros((B, T, v.shape[-1])), np.zeros((B, T, S))
    for n in range(B):
        for t in range(T):
            s = scores[n, t]
            ok = np.ones(S, bool)
            if v_mask is not None:
                ok &= v_mask[n]
            if causal:
                ok &= np.arange(S) <= t
            if ok.any():
                e = np.where(ok, np.exp(s - s[ok].max()), 0.0)
                weights[n, t] = e / e.sum()
            out[n, t] = weights[n, t] @ v[n]
            if q_mask is not None and not q_mask[n, t]:
                out[n, t] = 0.0
    return out, weights
