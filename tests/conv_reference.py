"""TensorFlow's ``padding="same"`` written out: the reference the convolution and pooling tests compare with
(tests/test_layers_conv.py, tests/test_layers_conv_more.py, tests/test_layers_torch_parity_conv.py)."""


def same_pads(n, k, s, d):
    """``(before, after)`` padding of one spatial axis of size ``n`` for kernel ``k``, stride ``s``, dilation ``d``:
    ``ceil(n / s)`` outputs, the odd entry after, as TensorFlow."""
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2
