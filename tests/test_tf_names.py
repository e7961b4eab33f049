"""Names a TensorFlow (or Keras ops, PyTorch, numpy) user brings, and the ops they expect.

* ``adv.unstack``, ``adv.clamp``, ``adv.gather`` ... (names whose meaning is spelled otherwise here) raise
  an AttributeError that names the spelling to write here; a name nobody uses raises Python's usual one
  (``hasattr`` is False for both). TensorFlow's ``adv.reduce_sum``, ``adv.math.*`` work: tests/test_tf_math.py.
* ``adv.eye``, ``adv.zeros_like``, ``adv.ones_like`` (constants),
  ``adv.identity`` (a recorded op, gradient ḡ) and ``adv.clip_by_norm``
  (TensorFlow's formula, checked against PyTorch).
* Sizes given as a 0-d integer tensor (``adv.prod(x.shape)``), as numpy takes any ``__index__``.
"""
import re

import numpy as np
import pytest
import torch

import autodiff_viz as adv
from autodiff_viz.core import ops


# ----- other libraries' names -------------------------------------------------------------------------------
@pytest.mark.parametrize("name, ours", [
    ("ForwardAccumulator", "adv.jvp(f, (primals,), (tangents,))"),
    ("relu", "adv.nn.relu(x)"),
    ("top_k", "adv.math.top_k(x, k)"),
    ("clamp", "adv.clip(x, min, max)"),
    ("cat", "adv.concatenate"),
    ("unsqueeze", "adv.expand_dims(x, axis)"),      # the Tensor's PyTorch table
    ("median", "adv.sort"),                           # the Tensor's table of numpy functions without a rule
])
def test_another_librarys_name_raises_an_attribute_error_that_names_ours(name, ours):
    with pytest.raises(AttributeError) as caught:
        getattr(adv, name)
    message = str(caught.value)
    assert message.startswith(f"module 'autodiff_viz' has no attribute '{name}' (")
    assert ours in message
    assert not hasattr(adv, name)
    assert getattr(adv, name, "fallback") == "fallback"


def test_a_foreign_name_used_in_code_fails_at_the_name_not_later():
    x = adv.constant([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(AttributeError, match=r"'unbind' \(that is PyTorch's spelling\)\. In autodiff_viz: "
                                             r"list\(x\) \(the slices along axis 0\)"):
        adv.unbind(x)
    with pytest.raises(AttributeError, match=r"'clamp' \(that is PyTorch's spelling\)\. In autodiff_viz: "
                                             r"adv\.clip\(x, min, max\)\.$"):
        adv.clamp(x, 0.0, 1.0)


def test_unknown_names_keep_pythons_message_and_suggestion():
    with pytest.raises(AttributeError) as caught:
        adv.no_such_thing
    assert str(caught.value) == "module 'autodiff_viz' has no attribute 'no_such_thing'"
    assert caught.value.name == "no_such_thing" and caught.value.obj is adv     # Python's "Did you mean" reads these
    assert not hasattr(adv, "no_such_thing") and not hasattr(adv, "__no_such_dunder__")
    with pytest.raises(ImportError):
        from autodiff_viz import no_such_thing  # noqa: F401
    assert adv.sum is ops.sum and adv.dot(adv.constant([1.0, 2.0]), [3.0, 4.0]).item() == 11.0


def test_every_hinted_name_is_missing_and_every_name_a_hint_gives_exists():
    from autodiff_viz.core import spellings
    from autodiff_viz.core.methods import _NEAREST
    from autodiff_viz.core.tensor import _TORCH_HINTS
    for name, (_, hint) in spellings._SPELLINGS.items():
        assert name not in vars(adv), f"adv.{name} exists: its hint can never show"
        for dotted in re.findall(r"\badv\.([A-Za-z_][\w.]*\w)", hint):
            obj = adv
            for part in dotted.split("."):
                assert hasattr(obj, part), f"the hint for {name} names adv.{dotted}, which does not exist"
                obj = getattr(obj, part)
        for np_name in re.findall(r"\bnp\.(\w+)", hint):
            assert hasattr(np, np_name), f"the hint for {name} names np.{np_name}"
    for name in spellings._TORCH_FUNCTIONS:
        assert name in _TORCH_HINTS and name not in vars(adv)
    assert "median" in _NEAREST and spellings.foreign_spelling("median") is not None
    assert spellings.foreign_spelling("no_such_thing") is None and spellings.foreign_spelling("__path__") is None


def test_the_bridges_load_on_first_use_and_the_core_imports_neither_framework():
    """``adv.torch.record()`` works right after ``import autodiff_viz``; until then torch is not imported."""
    import subprocess
    import sys
    script = ("import sys, autodiff_viz as adv\n"
              "assert 'torch' not in sys.modules and 'tensorflow' not in sys.modules\n"
              "rec = adv.torch.record\n"
              "assert 'torch' in sys.modules and adv.torch is sys.modules['autodiff_viz.torch']\n"
              "assert 'tensorflow' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# ----- eye, zeros_like, ones_like ------------------------------------------------------------------------
@pytest.mark.parametrize("args, kwargs", [((3,), {}), ((2, 4), {}), ((3,), {"k": 1}), ((4, 3), {"k": -2}),
                                          ((0,), {})])
def test_eye_is_numpys_eye_in_float32(args, kwargs):
    got = adv.eye(*args, **kwargs)
    assert isinstance(got, adv.Tensor) and not isinstance(got, adv.Variable)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), np.eye(*args, **kwargs))


def test_eye_takes_tensorflows_keywords_and_a_dtype():
    assert adv.eye(2, dtype="float64").dtype == np.float64 and adv.eye(2, dtype="int32").dtype == np.int32
    np.testing.assert_array_equal(adv.eye(2, num_columns=3).numpy(), np.eye(2, 3))
    batched = adv.eye(2, batch_shape=[3])
    assert batched.shape == (3, 2, 2)
    np.testing.assert_array_equal(batched.numpy(), np.broadcast_to(np.eye(2), (3, 2, 2)))
    assert adv.eye(np.int64(2)).shape == adv.eye(adv.sum(adv.constant([1, 1]))).shape == (2, 2)


@pytest.mark.parametrize("call, error, message", [
    (lambda: adv.eye(2.5), TypeError, r"eye: N \(the number of rows\) must be a whole number, got 2\.5; "
                                      r"write e\.g\. adv\.eye\(3\)"),
    (lambda: adv.eye(True), TypeError, r"eye: N .* got True"),
    (lambda: adv.eye(3, 2.0), TypeError, r"M \(the number of columns\) .* adv\.eye\(3, 4\)"),
    (lambda: adv.eye(3, k=0.5), TypeError, r"k \(which diagonal"),
    (lambda: adv.eye(-2), ValueError, r"eye: the matrix would be -2 × -2; .* 0 or more"),
    (lambda: adv.eye(2, 3, num_columns=3), TypeError, r"M=3 and num_columns=3 both given"),
    (lambda: adv.eye(2, dtype="nonsense"), TypeError, r"eye: 'nonsense' is not a dtype"),
    (lambda: adv.zeros_like([1.0], dtype="nonsense"), TypeError, r"zeros_like: 'nonsense' is not a dtype"),
])
def test_eye_and_zeros_like_refuse_bad_arguments_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("like, np_like", [(adv.zeros_like, np.zeros_like), (adv.ones_like, np.ones_like)])
def test_zeros_like_and_ones_like_keep_shape_and_dtype(like, np_like):
    for value in (np.arange(6, dtype=np.int32).reshape(2, 3), np.array([[1.5, -2.0]], dtype=np.float32), 3.0,
                  [1.0, 2.0], np.array([True, False])):
        got = like(adv.constant(value) if not isinstance(value, list) else value)
        want = np_like(np.asarray(value))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    assert like(adv.constant([1, 2]), dtype="float32").dtype == np.float32
    assert type(like(adv.Variable([1.0, 2.0]))) is adv.Tensor


def test_zeros_like_and_ones_like_are_constants_without_a_gradient():
    v = adv.Variable([1.0, np.nan, 3.0])                   # the value is never read: NaN does not leak
    with adv.GradientTape(persistent=True) as tape:
        ones = adv.ones_like(v)
        zeros = adv.zeros_like(v)
        loss = adv.sum(ones * 3.0 + zeros)
    np.testing.assert_array_equal(ones.numpy(), [1.0, 1.0, 1.0])
    assert loss.item() == 9.0
    assert tape.gradient(loss, v) is None and tape.gradient(ones, v) is None


# ----- identity ---------------------------------------------------------------------------------------------
def test_identity_is_a_recorded_op_whose_gradient_is_the_upstream_gradient():
    v = adv.Variable([1.0, -2.0, 3.0], name="v")
    with adv.GradientTape() as tape:
        y = adv.identity(v)
        loss = adv.sum(y * y * adv.constant([1.0, 2.0, 3.0]))
    assert y is not v and type(y) is adv.Tensor and y.dtype == v.dtype
    np.testing.assert_array_equal(y.numpy(), v.numpy())
    trace = tape.trace(loss)
    edge = next(e for e in trace.edges if e.src == next(n.id for n in trace.nodes if n.name == "v"))
    assert edge.factor.endswith("= 1") and edge.formula == "ḡ_x = ḡ_y"
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), 2 * v.numpy() * [1.0, 2.0, 3.0])


def test_identity_of_ints_and_the_hint_for_the_identity_matrix():
    assert adv.identity(adv.constant([1, 2])).dtype == np.int64
    assert adv.identity(2.5).item() == 2.5
    with pytest.raises(TypeError, match=r"identity matrix .* write adv\.eye\(3\)"):
        adv.identity(3)


# ----- clip_by_norm against PyTorch --------------------------------------------------------------------------
def torch_clip_by_norm(x, clip, dims):
    """TensorFlow's formula written in PyTorch: x · c / max(‖x‖ over dims, c)."""
    norm = torch.sqrt((x * x).sum(dim=dims, keepdim=True))
    return x * clip / torch.maximum(norm, clip)


@pytest.mark.parametrize("axes, dims", [(None, (0, 1)), (1, (1,)), (0, (0,)), ([0, 1], (0, 1)), (-1, (-1,))])
@pytest.mark.parametrize("clip", [0.8, 2.5, 100.0])
def test_clip_by_norm_matches_torch_in_value_and_gradient(axes, dims, clip):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 4))
    x[1] *= 0.1                                                  # one row under the clip, others over
    g = rng.normal(size=(3, 4))
    c = adv.constant(clip)
    y, back = adv.vjp(lambda a, b: adv.clip_by_norm(a, b, axes=axes), adv.constant(x), c)
    gx, gc = back(adv.constant(g))
    tx = torch.tensor(x, requires_grad=True)
    tc = torch.tensor(clip, dtype=torch.float64, requires_grad=True)
    ty = torch_clip_by_norm(tx, tc, dims)
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gc.numpy(), tc.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_clip_by_norm_matches_tensorflows_documented_example_and_keeps_float32():
    got = adv.clip_by_norm(adv.constant([[1, 2, 3, 4, 5]], dtype="float32"), 2.0)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), [[0.26967996, 0.5393599, 0.80903983, 1.0787199, 1.3483998]], rtol=1e-6)
    assert np.isclose(np.linalg.norm(got.numpy()), 2.0)


def test_clip_by_norm_at_zero_and_under_the_clip_passes_the_gradient_through():
    for value in ([0.0, 0.0, 0.0], [0.1, -0.2, 0.2]):
        v = adv.Variable(value)
        with adv.GradientTape() as tape:
            loss = adv.sum(adv.clip_by_norm(v, 1.0) * adv.constant([1.0, 2.0, 3.0]))
        grad = tape.gradient(loss, v).numpy()
        assert np.all(np.isfinite(grad))
        np.testing.assert_allclose(grad, [1.0, 2.0, 3.0])


def test_clip_by_norm_removes_the_part_of_the_gradient_along_x_where_it_clips():
    x = np.array([3.0, 4.0])                  # ‖x‖ = 5, clipped to 1: y = x/5
    g = np.array([1.0, 0.0])
    _, back = adv.vjp(lambda a: adv.clip_by_norm(a, 1.0), adv.constant(x))
    unit = x / 5
    np.testing.assert_allclose(back(adv.constant(g))[0].numpy(), (1 / 5) * (g - unit * (unit @ g)))


@pytest.mark.parametrize("call, error, message", [
    (lambda: adv.clip_by_norm([1.0, 2.0], 0.0), ValueError, r"clip_norm must be > 0 .* got 0\.0"),
    (lambda: adv.clip_by_norm([1.0, 2.0], -1), ValueError, r"clip_norm must be > 0"),
    (lambda: adv.clip_by_norm([1.0, 2.0], [1.0, 2.0]), ValueError, r"clip_norm must be one number > 0"),
    (lambda: adv.clip_by_norm([1.0, 2.0], "1"), TypeError, r"clip_norm must be one number"),
    (lambda: adv.clip_by_norm(adv.constant([1, 2]), 1.0), TypeError, r"dtype int64; a norm needs floats.*adv\.cast"),
    (lambda: adv.clip_by_norm([[1.0, 2.0]], 1.0, axes=2), ValueError, r"clip_by_norm: axis 2 is out of range"),
])
def test_clip_by_norm_refuses_bad_arguments_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ----- sizes given as 0-d integer tensors --------------------------------------------------------------------
def test_reshape_takes_a_0d_integer_tensor_as_a_size():
    n = adv.prod(adv.ones((5, 8)).shape)
    assert isinstance(n, adv.Tensor) and n.ndim == 0 and n.dtype.kind == "i"
    assert adv.reshape(adv.ones(40), [n, 1]).shape == (40, 1)
    assert adv.reshape(adv.ones(40), n).shape == (40,)
    assert adv.ones(40).reshape(n, -1).shape == (40, 1)
    assert adv.reshape(adv.ones(6), (np.int64(2), np.array(3))).shape == (2, 3)
    assert adv.zeros((n, 2)).shape == (40, 2)
    v = adv.Variable(np.arange(6.0))
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.reshape(v, (adv.sum(adv.constant([1, 1])), -1))[1] ** 2)
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), [0, 0, 0, 6, 8, 10])


@pytest.mark.parametrize("size", [40.0, True, np.float64(40.0), adv.constant(40.0), adv.constant([40])])
def test_reshape_still_refuses_floats_and_bools_as_sizes(size):
    with pytest.raises(TypeError, match=r"reshape: sizes must be integers, got .* \(int\(n\) if n is a computed "
                                        r"float\)"):
        adv.reshape(adv.ones(40), [size, 1])


def test_calling_the_tensor_module_as_torch_tensor_says_to_write_constant():
    import inspect
    assert inspect.isfunction(adv.tensor)                   # a plain function, not a module made callable
    with pytest.raises(TypeError, match=r"torch\.tensor\(data\).*adv\.constant\(data\).*adv\.Variable\(data\)"):
        adv.tensor([1.0, 2.0])


def test_a_dtype_name_is_numpys_dtype_so_tensorflow_guides_dtype_arguments_run_renamed():
    """``tf.constant(3.0, dtype=tf.float32)``, ``tf.cast(x, tf.int32)`` (the official guides) run with
    ``tf.`` → ``adv.``: the dtype names are numpy's own objects, so they mean what numpy means too."""
    for name in ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "complex64"):
        assert getattr(adv, name) is getattr(np, name)
    x = adv.constant(3.0, dtype=adv.float32)
    assert x.dtype == np.float32
    assert adv.cast(adv.constant([1.7, -2.2]), adv.int32).numpy().tolist() == [1, -2]
    w = adv.Variable(adv.zeros((2,), dtype=adv.float32))
    with adv.GradientTape() as tape:
        y = adv.sum(w * adv.constant([1.0, 2.0], dtype=adv.float32))
    assert tape.gradient(y, w).dtype == np.float32


# ----- issue 43: a course's TensorFlow cells, typed in with `import autodiff_viz as tf` ---------------------
tf = pytest.importorskip("tensorflow")


def test_d2l_alias_block_imports_and_each_alias_is_tensorflows():
    """Dive into Deep Learning's TensorFlow helper module opens with one-line aliases
    (``arange = tf.range``, ``meshgrid = tf.meshgrid``, ``sigmoid = tf.sigmoid`` …;
    https://github.com/d2l-ai/d2l-en, d2l/tensorflow.py): a missing name stops the import."""
    def aliases(lib):
        return dict(ones_like=lib.ones_like, ones=lib.ones, zeros_like=lib.zeros_like, zeros=lib.zeros,
                    arange=lib.range, meshgrid=lib.meshgrid, sin=lib.sin, sinh=lib.sinh, cos=lib.cos, cosh=lib.cosh,
                    tanh=lib.tanh, linspace=lib.linspace, exp=lib.exp, log=lib.math.log, normal=lib.random.normal,
                    rand=lib.random.uniform, matmul=lib.matmul, reduce_sum=lib.reduce_sum, argmax=lib.argmax,
                    tensor=lib.constant, sigmoid=lib.sigmoid, size=lambda x: lib.size(x).numpy(),
                    reshape=lib.reshape, reduce_mean=lib.reduce_mean, astype=lib.cast, transpose=lib.transpose,
                    concat=lib.concat, stack=lib.stack, abs=lib.abs, eye=lib.eye)
    ours, theirs = aliases(adv), aliases(tf)
    x = np.arange(-3.0, 3.0, 0.5, dtype=np.float32)
    assert ours["arange"](12).dtype == theirs["arange"](12).dtype.as_numpy_dtype == np.int32
    np.testing.assert_array_equal(ours["arange"](1.0, 2.0, 0.25).numpy(), theirs["arange"](1.0, 2.0, 0.25).numpy())
    for got, want in zip(ours["meshgrid"](x[:3], x[:4]), theirs["meshgrid"](x[:3], x[:4])):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_allclose(ours["sigmoid"](x).numpy(), theirs["sigmoid"](x).numpy(), rtol=3e-7)
    assert ours["size"](np.ones((3, 4))) == theirs["size"](np.ones((3, 4))) == 12


def test_d2l_cross_entropy_picks_with_a_one_hot_boolean_mask():
    """d2l 4.4 "Softmax Regression Implementation from Scratch", TensorFlow tab
    (https://d2l.ai/chapter_linear-classification/softmax-regression-scratch.html): the predicted probability
    of each true class is picked with ``tf.boolean_mask(y_hat, tf.one_hot(y, depth=y_hat.shape[-1]))`` — a
    float mask — and the loss is ``-tf.math.log`` of it. Values and the gradient to ``y_hat`` as TensorFlow's."""
    def cell(lib):
        y_hat = lib.Variable([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
        y = lib.constant([0, 2])
        with lib.GradientTape() as tape:
            loss = -lib.math.log(lib.boolean_mask(y_hat, lib.one_hot(y, depth=y_hat.shape[-1])))
            total = lib.reduce_mean(loss)
        return loss.numpy(), tape.gradient(total, y_hat).numpy()

    (loss, grad), (tf_loss, tf_grad) = cell(adv), cell(tf)
    np.testing.assert_allclose(loss, tf_loss, rtol=1e-6)
    np.testing.assert_allclose(grad, tf_grad, rtol=1e-6)


def test_d2l_try_gpu_runs_on_a_cpu_only_machine():
    """d2l 6.7 "GPUs", TensorFlow tab (https://d2l.ai/chapter_builders-guide/use-gpu.html): ``try_gpu`` asks
    ``tf.config.experimental.list_physical_devices('GPU')`` and returns ``tf.device(...)`` for a ``with``."""
    def try_gpu(lib, i=0):
        if len(lib.config.experimental.list_physical_devices("GPU")) >= i + 1:
            return lib.device(f"/GPU:{i}")
        return lib.device("/CPU:0")

    def try_all_gpus(lib):
        devices = [lib.device(f"/GPU:{i}") for i in range(len(lib.config.experimental.list_physical_devices("GPU")))]
        return devices if devices else [lib.device("/CPU:0")]

    with try_gpu(adv):
        x = adv.ones((2, 3))
    with try_gpu(tf):
        tx = tf.ones((2, 3))
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    assert len(try_all_gpus(adv)) == len(try_all_gpus(tf)) == 1


def test_control_flow_runs_eagerly_with_tensorflows_values_and_gradients():
    def cell(lib):
        x = lib.Variable([1.0, 2.0, 3.0])
        with lib.GradientTape() as tape:
            y = lib.cond(lib.reduce_sum(x) > 5.0, lambda: x * 2.0, lambda: x * 3.0)
            i, acc = lib.while_loop(lambda i, acc: i < 3, lambda i, acc: (i + 1, acc * x), [0, lib.ones_like(x)])
            squares = lib.map_fn(lambda row: row * row, lib.reshape(x, (3, 1)))
            running = lib.scan(lambda a, e: a + e, x)
            folded = lib.foldl(lambda a, e: a * e, x)
            picked = lib.switch_case(lib.constant(1), [lambda: x, lambda: x + 10.0])
            loss = (lib.reduce_sum(y) + lib.reduce_sum(acc) + lib.reduce_sum(squares) + lib.reduce_sum(running)
                    + folded + lib.reduce_sum(picked))
        return [t.numpy() for t in (y, acc, squares, running, folded, picked)], tape.gradient(loss, x).numpy()

    (values, grad), (tf_values, tf_grad) = cell(adv), cell(tf)
    for got, want in zip(values, tf_values):
        np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(grad, tf_grad)


def test_vanishing_gradient_plot_of_sigmoid_matches_tensorflow_in_float32():
    """d2l 5.4 "Numerical Stability and Initialization", TensorFlow tab
    (https://d2l.ai/chapter_multilayer-perceptrons/numerical-stability-and-init.html): ``x = tf.Variable(
    tf.range(-8.0, 8.0, 0.1))``, ``y = tf.nn.sigmoid(x)``, plot ``y`` and ``t.gradient(y, x)``. Issue 43: here
    the float32 sigmoid was 6 % off at −16 and 0 below −17. Both now agree with TensorFlow's on the lesson's
    range and far into the negative tail (the positive tail is more accurate here than TensorFlow's
    y(1 − y): tests/test_accuracy.py)."""
    def cell(lib, lo):
        x = lib.Variable(lib.range(lo, 8.0, 0.1))
        with lib.GradientTape() as t:
            y = lib.nn.sigmoid(x)
        return y.numpy(), t.gradient(y, x).numpy()

    for lo in (-8.0, -30.0):
        (y, g), (ty, tg) = cell(adv, lo), cell(tf, lo)
        assert y.dtype == ty.dtype == np.float32
        np.testing.assert_allclose(y, ty, rtol=1e-6)
        np.testing.assert_allclose(g[:-60], tg[:-60], rtol=1e-6)      # up to x = 2 (TensorFlow rounds after)
        assert np.all(g > 0)


def test_an_out_of_scope_tensorflow_name_says_why_and_what_to_write():
    with pytest.raises(AttributeError, match=r"TensorFlow's tf\.function is out of scope here \(it builds, "
                                             r"compiles or inspects a TensorFlow graph.*Instead: call the Python "
                                             r"function itself"):
        adv.function
    with pytest.raises(AttributeError, match=r"tf\.nn\.ctc_loss is out of scope"):
        adv.nn.ctc_loss
    assert not hasattr(adv, "distribute") and not hasattr(adv.linalg, "LinearOperatorDiag")
