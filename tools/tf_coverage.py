"""The TensorFlow surface by coverage: every public name of TensorFlow 2.21, classified, with parity checks.

Walks TensorFlow's public API (``tf``, ``tf.math``, ``tf.nn``, ``tf.random``, ``tf.linalg``, ``tf.image``,
``tf.signal``, ``tf.data``, ``tf.config``, ``tf.keras.initializers``, ``keras.ops``) and gives each name
one status:

* **implemented** — ``adv.<same path>`` exists. Where a call can be generated (the first argument pattern
  of :data:`PATTERNS` that TensorFlow accepts, or the name's own entry in :data:`PROBES`), the same call is
  made on both sides and compared: values, dtype, shape and, where TensorFlow has a gradient, the gradient
  of ``Σ w·output`` with respect to every float input. A failing comparison is a defect of this package.
* **different** — it works, with the difference written in ``autodiff_viz/base/tf_surface.py``
  (``DIFFERENT``); the parity check still runs, values only where the difference allows.
* **out of scope** — deliberately absent; ``adv.<name>`` raises the reason and what to write instead
  (``OUT_OF_SCOPE``, by kind: graph building, distribution, TPUs, sparse tensors, strings …).
* **missing** — none of the above: a gap.

Usage (TensorFlow installed)::

    python tools/tf_coverage.py            # print the counts and any parity failures
    python tools/tf_coverage.py --write    # regenerate docs/tf-coverage.md and the counts in docs/coming-from.md

``tests/test_tf_coverage.py`` regenerates both pages in memory and fails when a committed page is stale or
a parity check fails.
"""
from __future__ import annotations

import os
import sys
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import autodiff_viz as adv  # noqa: E402
from autodiff_viz.base.tf_surface import difference, out_of_scope  # noqa: E402

#: TensorFlow namespace → the attribute path of its counterpart here ("" is the package itself)
NAMESPACES = {
    "tf": "", "tf.math": "math", "tf.nn": "nn", "tf.random": "random", "tf.linalg": "linalg",
    "tf.image": "image", "tf.signal": None, "tf.data": "data", "tf.config": "config",
    "tf.keras.initializers": "initializers", "keras.ops": "ops",
}

#: the namespaces whose implemented names must pass their parity checks (the rest are reported)
CHECKED = ("tf", "tf.math", "tf.nn", "tf.random", "tf.linalg")

STATUSES = ("implemented", "different", "out of scope", "missing")

_RNG = np.random.default_rng(43)
X = _RNG.uniform(0.1, 0.9, size=(3, 4))
Y = _RNG.uniform(0.1, 0.9, size=(3, 4))
_B = _RNG.normal(size=(3, 3))
M = _B @ _B.T + 3 * np.eye(3)
R = _RNG.uniform(0.1, 0.9, size=(3, 1))
V = _RNG.uniform(0.1, 0.9, size=(4,))
IMG = _RNG.uniform(0.1, 0.9, size=(2, 6, 6, 3))
KERNEL = _RNG.normal(size=(3, 3, 3, 2))
VOLUME = _RNG.uniform(0.1, 0.9, size=(2, 4, 4, 4, 3))
IDX = np.array([2, 0, 1], dtype=np.int32)
LABELS = np.array([3, 0, 1], dtype=np.int32)

#: argument patterns tried in order; the first one TensorFlow accepts is the name's generated check
PATTERNS = [(X,), (X, Y), (M,), (M, R), (M, M), ([X, Y],), (X, IDX), (X, 1), (IMG, KERNEL, 1, "SAME"),
            (IMG, 2, 2, "VALID"), (IMG,), (IDX,), (5,), ((2, 3),)]

#: names whose check needs its own arguments (a pattern would not reach them, or would test the wrong thing)
PROBES = {
    "tf.range": [(2, 11, 3)], "tf.fill": [((2, 3), 1.5)], "tf.meshgrid": [(V, V[:3])],
    "tf.conv": [(IMG, KERNEL, [1, 1, 1, 1], "SAME")],
    "tf.logical_and": [(X > 0.5, Y > 0.5)], "tf.logical_or": [(X > 0.5, Y > 0.5)],
    "tf.math.logical_and": [(X > 0.5, Y > 0.5)], "tf.math.logical_or": [(X > 0.5, Y > 0.5)],
    "tf.math.logical_xor": [(X > 0.5, Y > 0.5)], "tf.broadcast_dynamic_shape": [((3, 1), (1, 4))],
    "tf.boolean_mask": [(X, np.array([True, False, True]))], "tf.gather": [(X, IDX)],
    "tf.gather_nd": [(X, np.array([[0, 1], [2, 3]], dtype=np.int32))],
    "tf.scatter_nd": [(np.array([[1], [3]], dtype=np.int32), V[:2], (5,))],
    "tf.tensor_scatter_nd_update": [(X, np.array([[0, 1], [2, 2], [0, 1]], dtype=np.int32), V[:3])],
    "tf.tensor_scatter_nd_add": [(X, np.array([[0, 1], [2, 2], [0, 1]], dtype=np.int32), V[:3])],
    "tf.tensor_scatter_nd_sub": [(X, np.array([[0, 1], [2, 2]], dtype=np.int32), V[:2])],
    "tf.tensor_scatter_nd_max": [(X, np.array([[0, 1], [2, 2]], dtype=np.int32), V[:2])],
    "tf.tensor_scatter_nd_min": [(X, np.array([[0, 1], [2, 2]], dtype=np.int32), V[:2])],
    "tf.sequence_mask": [(np.array([1, 3, 2], dtype=np.int32), 4)],
    "tf.reverse_sequence": [(X, np.array([2, 4, 1], dtype=np.int64), 1, 0)],
    "tf.slice": [(X, [1, 1], [2, -1])], "tf.strided_slice": [(X, [0, 1], [3, 4], [2, 2])],
    "tf.unstack": [(X,)], "tf.reverse": [(X, [1])], "tf.one_hot": [(IDX, 4)],
    "tf.searchsorted": [(np.sort(X, axis=1), Y)], "tf.unique_with_counts": [(np.array([3, 1, 3, 2, 1]),)],
    "tf.dynamic_partition": [(X, np.array([1, 0, 1], dtype=np.int32), 2)],
    "tf.dynamic_stitch": [([np.array([0, 2]), np.array([1, 3])], [V[:2], V[2:]])],
    "tf.histogram_fixed_width": [(V, [0.0, 1.0], 5)], "tf.histogram_fixed_width_bins": [(V, [0.0, 1.0], 5)],
    "tf.split": [(X, 2, 1)], "tf.clip_by_global_norm": [([X, Y], 0.5)],
    "tf.truncatediv": [(np.array([7, -7]), np.array([2, 2]))], "tf.truncatemod": [(X * 5 - 2, Y + 0.5)],
    "tf.saturate_cast": [(X * 1000 - 300, "int8")], "tf.eye": [(3, 4)], "tf.linspace": [(0.0, 1.0, 5)],
    "tf.math.segment_sum": [(X, np.array([0, 0, 2]))], "tf.math.segment_mean": [(X, np.array([0, 0, 2]))],
    "tf.math.segment_max": [(X, np.array([0, 0, 2]))], "tf.math.segment_min": [(X, np.array([0, 0, 2]))],
    "tf.math.segment_prod": [(X, np.array([0, 0, 2]))],
    "tf.math.unsorted_segment_sum": [(X, np.array([1, 0, 1]), 3)],
    "tf.math.unsorted_segment_mean": [(X, np.array([1, 0, 1]), 3)],
    "tf.math.unsorted_segment_sqrt_n": [(X, np.array([1, 0, 1]), 3)],
    "tf.math.unsorted_segment_max": [(X, np.array([1, 0, 1]), 2)],
    "tf.math.unsorted_segment_min": [(X, np.array([1, 0, 1]), 2)],
    "tf.math.unsorted_segment_prod": [(X, np.array([1, 0, 1]), 3)],
    "tf.math.top_k": [(X, 2)], "tf.nn.top_k": [(X, 2)], "tf.math.in_top_k": [(LABELS % 4, X, 2)],
    "tf.nn.in_top_k": [(LABELS % 4, X, 2)], "tf.math.polyval": [([V[0], V[1], V[2]], X)],
    "tf.math.bincount": [(np.array([1, 1, 3, 0], dtype=np.int32),)],
    "tf.math.confusion_matrix": [(np.array([0, 1, 2, 1]), np.array([0, 2, 2, 1]))],
    "tf.math.invert_permutation": [(IDX,)], "tf.math.polygamma": [(np.full((3, 4), 1.0), X + 1)],
    "tf.math.igamma": [(Y + 1, X)], "tf.math.igammac": [(Y + 1, X)], "tf.math.betainc": [(Y + 1, Y + 2, X)],
    "tf.math.zeta": [(Y + 2, X + 1)], "tf.math.erfinv": [(X - 0.5,)], "tf.math.ndtri": [(X,)],
    "tf.math.erfcinv": [(X + 0.05,)],
    "tf.math.cumulative_logsumexp": [(X, 1)], "tf.math.count_nonzero": [(X - 0.5 > 0,)],
    "tf.nn.moments": [(X, [0])], "tf.nn.weighted_moments": [(X, [1], Y)],
    "tf.nn.sufficient_statistics": [(X, [0])], "tf.nn.normalize_moments": [(3.0, V, V + 1, None)],
    "tf.nn.avg_pool1d": [(IMG[:, 0], 2, 2, "VALID")], "tf.nn.max_pool1d": [(IMG[:, 0], 2, 2, "VALID")],
    "tf.nn.batch_normalization": [(X, V, V + 1, V, V, 1e-3)], "tf.nn.bias_add": [(X, V)],
    "tf.nn.l2_normalize": [(X, 1)], "tf.math.l2_normalize": [(X, 1)], "tf.linalg.l2_normalize": [(X, 1)],
    "tf.nn.softmax_cross_entropy_with_logits": [(Y / Y.sum(1, keepdims=True), X)],
    "tf.nn.sparse_softmax_cross_entropy_with_logits": [(LABELS % 4, X)],
    "tf.nn.sigmoid_cross_entropy_with_logits": [(Y, (X - 0.5) * 30)],
    "tf.nn.weighted_cross_entropy_with_logits": [(Y, (X - 0.5) * 30, 2.0)],
    "tf.nn.log_poisson_loss": [(Y * 4, X, True)], "tf.nn.embedding_lookup": [(X, IDX)],
    "tf.nn.depth_to_space": [(_RNG.uniform(size=(1, 2, 2, 8)), 2)], "tf.nn.space_to_depth": [(IMG, 2)],
    "tf.nn.conv1d": [(IMG[:, 0], KERNEL[0], 1, "SAME")], "tf.nn.conv3d": [
        (IMG[:, None].repeat(3, 1), KERNEL[None].repeat(2, 0), [1, 1, 1, 1, 1], "SAME")],
    "tf.nn.max_pool3d": [(VOLUME, 2, 2, "VALID")], "tf.nn.avg_pool3d": [(VOLUME, 2, 2, "VALID")],
    "tf.nn.batch_norm_with_global_normalization": [(X, V, V + 1, V, V, 1e-3, True)],
    "tf.nn.atrous_conv2d": [(IMG, KERNEL, 2, "SAME")],
    "tf.nn.depthwise_conv2d": [(IMG, KERNEL, [1, 1, 1, 1], "SAME")],
    "tf.nn.separable_conv2d": [(IMG, KERNEL, _RNG.normal(size=(1, 1, 6, 4)), [1, 1, 1, 1], "SAME")],
    "tf.nn.conv2d_transpose": [(IMG, KERNEL.transpose(0, 1, 3, 2), (2, 12, 12, 2), 2, "SAME")],
    "tf.nn.conv_transpose": [(IMG, KERNEL.transpose(0, 1, 3, 2), (2, 13, 13, 2), 2, "VALID")],
    "tf.nn.conv1d_transpose": [(IMG[:, 0], KERNEL[0].transpose(0, 2, 1), (2, 12, 2), 2, "SAME")],
    "tf.nn.conv3d_transpose": [(IMG[:, None], KERNEL[None].transpose(0, 1, 2, 4, 3), (2, 1, 6, 6, 2),
                                [1, 1, 1, 1, 1], "SAME")],
    "tf.nn.atrous_conv2d_transpose": [(IMG, KERNEL.transpose(0, 1, 3, 2), (2, 6, 6, 2), 2, "SAME")],
    "tf.nn.max_pool_with_argmax": [(IMG, 2, 2, "SAME")], "tf.nn.pool": [(IMG, [2, 2], "AVG", [2, 2])],
    "tf.nn.local_response_normalization": [(IMG, 1)], "tf.nn.lrn": [(IMG, 1)], "tf.nn.crelu": [(X,)],
    "tf.nn.compute_average_loss": [(V,)], "tf.nn.dropout": [(X, 0.5)],
    "tf.linalg.band_part": [(M, 1, 0)], "tf.linalg.set_diag": [(M, V[:3])], "tf.linalg.diag": [(X,)],
    "tf.linalg.matvec": [(M, V[:3])], "tf.linalg.tensor_diag": [(X[:2, :2],)],
    "tf.linalg.tensor_diag_part": [(np.einsum("ij,kl->ijkl", X[:2, :2], X[:2, :2]),)],
    "tf.linalg.triangular_solve": [(M, R)], "tf.linalg.cholesky_solve": [(np.linalg.cholesky(M), R)],
    "tf.linalg.global_norm": [([X, Y],)], "tf.linalg.cross": [(X[:, :3], Y[:, :3])],
    "tf.linalg.tridiagonal_matmul": [(np.stack([V[:3], V[:3] + 2, V[1:]]), R)],
    "tf.linalg.tridiagonal_solve": [(np.stack([V[:3], V[:3] + 2, V[1:]]), R)],
    "tf.linalg.lu_reconstruct": [("lu", M)], "tf.linalg.lu_solve": [("lu", M, R)],
    "tf.linalg.lu_matrix_inverse": [("lu", M)], "tf.linalg.einsum": [("ij,kj->ik", X, Y)],
    "tf.linalg.normalize": [(X, "euclidean", 1)], "tf.linalg.expm": [(M / 4,)], "tf.linalg.sqrtm": [(M,)],
    "tf.random.categorical": [(np.log(Y), 3)], "tf.random.gamma": [((5,), 2.0)], "tf.random.poisson": [((5,), 2.0)],
    "tf.random.stateless_normal": [((2, 3), [1, 2])], "tf.random.stateless_uniform": [((2, 3), [1, 2])],
    "tf.random.stateless_truncated_normal": [((2, 3), [1, 2])],
    "tf.random.stateless_categorical": [(np.log(Y), 3, [1, 2])],
    "tf.random.stateless_binomial": [((2, 3), [1, 2], 5.0, 0.5)],
    "tf.random.stateless_gamma": [((2, 3), [1, 2], 2.0)], "tf.random.stateless_poisson": [((2, 3), [1, 2], 2.0)],
    "tf.random.stateless_parameterized_truncated_normal": [((2, 3), [1, 2])],
    "tf.random.split": [([1, 2],)], "tf.random.fold_in": [([1, 2], 7)], "tf.random.shuffle": [(X,)],
    "tf.random.normal": [((2, 3),)], "tf.random.uniform": [((2, 3),)], "tf.random.truncated_normal": [((2, 3),)],
    "tf.math.argmax": [(X,)], "tf.math.argmin": [(X, 1)], "tf.math.cumsum": [(X,)], "tf.math.cumprod": [(X, 1)],
    "tf.math.reduce_std": [(X, 1)], "tf.math.reduce_variance": [(X, 0)],
    "tf.math.reduce_euclidean_norm": [(X, 1)],
    "tf.math.bessel_i0": [(X * 3,)], "tf.math.bessel_i1": [(X * 3,)], "tf.math.bessel_i0e": [(X * 3 - 1,)],
    "tf.math.bessel_i1e": [(X * 3 - 1,)], "tf.math.lgamma": [(X * 3,)], "tf.math.digamma": [(X * 3,)],
    "tf.sort": [(X, 1, "DESCENDING")], "tf.argsort": [(np.round(X * 3), 1, "DESCENDING")],
    "tf.matmul": [(X, Y, False, True)], "tf.transpose": [(X, [1, 0])], "tf.reshape": [(X, [2, 6])],
    "tf.tile": [(X, [1, 2])], "tf.pad": [(X, [[1, 0], [0, 2]])], "tf.roll": [(X, 1, 1)],
    "tf.expand_dims": [(X, 1)], "tf.squeeze": [(X[:, :1], [1])], "tf.stack": [([X, Y], 1)],
    "tf.concat": [([X, Y], 1)], "tf.repeat": [(X, 2, 1)], "tf.broadcast_to": [(V, (3, 4))],
    "tf.tensordot": [(X, Y.T, 1)], "tf.einsum": [("ij,kj->ik", X, Y)], "tf.norm": [(X,)],
    "tf.clip_by_value": [(X, 0.3, 0.6)], "tf.clip_by_norm": [(X, 0.5)], "tf.cast": [(X, "float32")],
    "tf.where": [(X > Y, X, Y)], "tf.identity_n": [([X, Y],)], "tf.shape_n": [([X, V],)],
    "tf.ensure_shape": [(X, (3, None))],
    "tf.math.reduce_logsumexp": [(X, 1)], "tf.cumsum": [(X, 1)], "tf.math.accumulate_n": [([X, Y],)],
    "tf.math.add_n": [([X, Y],)], "tf.add_n": [([X, Y],)], "tf.math.scalar_mul": [(2.0, X)],
    "tf.scalar_mul": [(2.0, X)], "tf.math.squared_difference": [(X, Y)],
    "tf.zeros": [((2, 3),)], "tf.ones": [((2, 3),)], "tf.zeros_like": [(X,)], "tf.ones_like": [(X,)],
    "tf.tuple": [([X, Y],)], "tf.linalg.tensordot": [(X, Y.T, 1)],
    "tf.math.floormod": [(X * 5 - 2, Y + 0.5)], "tf.math.mod": [(X * 5 - 2, Y + 0.5)],
    "keras.ops.adaptive_average_pool": [(IMG[:, :5], (3, 4))], "keras.ops.adaptive_max_pool": [(IMG[:, :5], 4)],
    "keras.ops.unfold": [(IMG.transpose(0, 3, 1, 2), 2, 1, 1, 2)],
    "keras.ops.fold": [(_RNG.uniform(size=(2, 12, 16)), (6, 6), 2, 1, 1, 2)],
    "keras.ops.rearrange": [(IMG, "b h w c -> c (b w) h")], "keras.ops.lu_factor": [(M,)],
    "keras.ops.conv_transpose": [(IMG, KERNEL.transpose(0, 1, 3, 2), 2)],
    "keras.ops.separable_conv": [(IMG, KERNEL, _RNG.normal(size=(1, 1, 6, 4)), 1, "same")],
}

#: names that are not called by the check (their effect is on the process: printing, global state)
NOT_CALLED = {"tf.print", "tf.random.set_seed", "tf.random.set_global_generator", "tf.timestamp",
              "tf.random.get_global_generator", "tf.random.create_rng_state"}

_TF = None
UNREGISTERED = object()     # TensorFlow raised LookupError: the op has no gradient there (this package's may)


def tensorflow():
    """TensorFlow and Keras, imported once (``import tensorflow`` costs seconds)."""
    global _TF
    if _TF is None:
        import keras
        import tensorflow as tf
        _TF = tf, keras
    return _TF


def _tf_module(namespace):
    tf, keras = tensorflow()
    obj = {"tf": tf, "keras": keras}[namespace.split(".")[0]]
    for part in namespace.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _ours(namespace, name):
    path = NAMESPACES[namespace]
    if path is None:
        return None, False
    obj = adv
    try:
        for part in [p for p in path.split(".") if p] + [name]:
            obj = getattr(obj, part)
    except AttributeError:
        return None, False
    return obj, True


@dataclass
class Entry:
    namespace: str
    name: str
    status: str
    note: str = ""
    check: str = ""          # "passed", "failed: …", "" when no call was generated
    kind: str = ""
    failures: list = field(default_factory=list)

    @property
    def qualified(self):
        return f"{self.namespace}.{self.name}"


def classify(namespace, name):
    """The status of ``namespace.name`` here (no call made)."""
    qualified = f"{namespace}.{name}"
    _, exists = _ours(namespace, name)
    diff = difference(qualified)
    found = out_of_scope(qualified)
    if exists or (diff is not None and found is None):
        return Entry(namespace, name, "implemented" if diff is None else "different", diff or "")
    if found is not None:
        kind, why, fix = found
        return Entry(namespace, name, "out of scope", f"{why}. Instead: {fix}", kind=kind)
    return Entry(namespace, name, "missing")


def walk():
    """Every public name of every namespace of :data:`NAMESPACES`, classified (sorted by namespace, name)."""
    entries = []
    for namespace in NAMESPACES:
        module = _tf_module(namespace)
        for name in sorted(n for n in dir(module) if not n.startswith("_")):
            entries.append(classify(namespace, name))
    return entries


# ----- parity checks ---------------------------------------------------------------------------------------
def _flat(result):
    """A result as a list of numpy arrays, or None when it is not made of tensors and numbers."""
    tf, _ = tensorflow()
    if isinstance(result, (list, tuple)):
        parts = [_flat(r) for r in result if r is not None]
        return None if any(p is None for p in parts) or not parts else [a for p in parts for a in p]
    if isinstance(result, adv.Tensor):
        return [result.numpy()]
    if isinstance(result, (tf.Tensor, tf.Variable)):
        return [result.numpy()]
    if isinstance(result, (np.ndarray, np.generic, int, float, bool)) and not isinstance(result, type):
        return [np.asarray(result)]
    return None


def _lu_args(args, lib):
    """``("lu", M, …)`` stands for the packed LU factors of M, computed by each library itself."""
    if args and isinstance(args[0], str) and args[0] == "lu":
        tf, _ = tensorflow()
        if lib == "tf":
            lu, p = tf.linalg.lu(args[1])
        else:
            lu, p = adv.linalg.lu(args[1])
        return (lu, p) + tuple(args[2:])
    return args


def _convert(arg, lib, watched):
    tf, _ = tensorflow()
    if isinstance(arg, list) and arg and all(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in arg):
        return [_convert(a, lib, watched) for a in arg]
    if isinstance(arg, np.ndarray):
        t = tf.constant(arg) if lib == "tf" else adv.constant(arg)
        if arg.dtype.kind == "f":
            watched.append(t)
        return t
    return arg


def _weights(shape):
    n = int(np.prod(shape))
    return np.sin(np.arange(1, n + 1, dtype=np.float64)).reshape(shape)


def _run(lib, fn, args):
    """``fn(*args)`` on one side: the flat outputs and the gradients of ``Σ w·output`` for the float inputs."""
    tf, _ = tensorflow()
    watched = []
    if lib == "tf":
        with tf.GradientTape(persistent=True) as tape:
            real = _lu_args(args, "tf")
            converted = [_convert(a, "tf", watched) for a in real]
            for t in watched:
                tape.watch(t)
            out = fn(*converted)
            flat = _flat_tensors(out)
            loss = None
            for o in flat or []:
                if o.dtype.is_floating:
                    term = tf.reduce_sum(tf.cast(o, tf.float64) * _weights(o.shape))
                    loss = term if loss is None else loss + term
        try:
            grads = [None] * len(watched) if loss is None else tape.gradient(loss, watched)
        except LookupError:     # TensorFlow registers no gradient for the op: nothing to compare with
            grads = [UNREGISTERED] * len(watched)
        return _flat(out), [g if g is None or g is UNREGISTERED else np.asarray(tf.convert_to_tensor(g))
                            for g in grads]
    with adv.GradientTape(persistent=True) as tape:
        real = _lu_args(args, "adv")
        converted = [_convert(a, "adv", watched) for a in real]
        for t in watched:
            tape.watch(t)
        out = fn(*converted)
        flat = _flat_tensors(out)
        loss = None
        for o in flat or []:
            if o.dtype.kind == "f":
                term = adv.sum(adv.cast(o, "float64") * _weights(o.shape))
                loss = term if loss is None else loss + term
    try:
        grads = [None] * len(watched) if loss is None else tape.gradient(loss, watched)
    except LookupError:     # no gradient here either, said as TensorFlow says it (lu_factor, adjust_hue)
        grads = [UNREGISTERED] * len(watched)
    return _flat(out), [g if g is None or g is UNREGISTERED else g.numpy() for g in grads]


def _flat_tensors(result):
    tf, _ = tensorflow()
    if isinstance(result, (list, tuple)):
        return [t for r in result for t in (_flat_tensors(r) or [])]
    if isinstance(result, (adv.Tensor, tf.Tensor, tf.Variable)):
        return [result]
    return []


def _single(args):
    """``args`` with every float64 array made float32 (for TensorFlow kernels that have no float64 version)."""
    def one(a):
        if isinstance(a, np.ndarray) and a.dtype == np.float64:
            return a.astype(np.float32)
        if isinstance(a, list):
            return [one(b) for b in a]
        return a
    return tuple(one(a) for a in args)


def _compare(qualified, want, got, gwant, ggot, values=True):
    problems = []
    loose = any(w.dtype == np.float32 for w in want)
    rtol, atol = (1e-5, 1e-6) if loose else (1e-6, 1e-8)
    if got is None or len(got) != len(want):
        return [f"{len(want)} outputs in TensorFlow, {'no tensors' if got is None else len(got)} here"]
    for i, (w, g) in enumerate(zip(want, got)):
        if w.shape != g.shape:
            problems.append(f"output {i}: shape {g.shape}, TensorFlow {w.shape}")
            continue
        if w.dtype != g.dtype:
            problems.append(f"output {i}: dtype {g.dtype}, TensorFlow {w.dtype}")
        if values and not np.allclose(g.astype(np.float64) if g.dtype.kind != "b" else g,
                                      w.astype(np.float64) if w.dtype.kind != "b" else w,
                                      rtol=rtol, atol=atol, equal_nan=True):
            problems.append(f"output {i}: values differ (max |Δ| {np.max(np.abs(g.astype(float) - w)):.3g})")
    if values:
        for i, (w, g) in enumerate(zip(gwant, ggot)):
            if w is UNREGISTERED:       # TensorFlow has no gradient: this package's may have one, or none
                continue
            if g is UNREGISTERED:
                problems.append(f"gradient {i}: LookupError here, TensorFlow has one")
                continue
            w0 = w is None or not np.any(w)
            g0 = g is None or not np.any(g)
            if w0 and g0:
                continue
            if w is None or g is None or w.shape != g.shape or not np.allclose(g, w, rtol=rtol, atol=atol,
                                                                               equal_nan=True):
                problems.append(f"gradient {i}: {'None' if g is None else 'differs'} here, TensorFlow's "
                                f"{'None' if w is None else 'is not'}")
    return problems


def check(entry):
    """Run the generated parity check of an implemented (or different) name; sets ``entry.check``."""
    if entry.qualified in NOT_CALLED or entry.namespace == "tf.config":
        return entry
    ours, exists = _ours(entry.namespace, entry.name)
    theirs = getattr(_tf_module(entry.namespace), entry.name)
    if not exists or isinstance(theirs, (types.ModuleType, type)) or not callable(theirs):
        return entry
    values = not (entry.namespace == "tf.random" or entry.qualified in ("tf.nn.dropout",)
                  or entry.qualified.startswith(("tf.image.random_", "tf.image.stateless_random_")))
    candidates = PROBES.get(entry.qualified, PATTERNS)
    for args in [variant for a in candidates for variant in (a, _single(a))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want, gwant = _run("tf", theirs, args)
            except Exception:     # noqa: BLE001  (TensorFlow refused these arguments: try the next pattern)
                continue
            if want is None:
                continue
            try:
                got, ggot = _run("adv", ours, args)
            except Exception as exc:     # noqa: BLE001
                entry.check = f"failed: {type(exc).__name__}: {str(exc)[:160]}"
                entry.failures.append(entry.check)
                return entry
        problems = _compare(entry.qualified, want, got, gwant, ggot, values)
        entry.check = "passed" if not problems else "failed: " + "; ".join(problems)
        if problems:
            entry.failures.append(entry.check)
        return entry
    return entry


def run(checks=True):
    entries = walk()
    if checks:
        for e in entries:
            if e.status in ("implemented", "different"):
                check(e)
    return entries


# ----- the pages -------------------------------------------------------------------------------------------
def counts(entries):
    table = {}
    for e in entries:
        row = table.setdefault(e.namespace, dict.fromkeys(STATUSES, 0))
        row[e.status] += 1
    return table


def counts_markdown(entries):
    lines = ["| namespace | implemented | different | out of scope | missing | checked against TensorFlow |",
             "|---|---:|---:|---:|---:|---:|"]
    for namespace, row in counts(entries).items():
        checked = sum(1 for e in entries if e.namespace == namespace and e.check == "passed")
        lines.append(f"| `{namespace}` | {row['implemented']} | {row['different']} | {row['out of scope']} | "
                     f"{row['missing']} | {checked} |")
    return "\n".join(lines)


def _escape(text):
    return text.replace("|", "\\|").replace("\n", " ")


def page(entries):
    tf, keras = tensorflow()
    out = ["# TensorFlow coverage", "",
           "<!-- Generated by tools/tf_coverage.py from TensorFlow itself; do not edit by hand: run",
           "     `python tools/tf_coverage.py --write`. tests/test_tf_coverage.py fails when it is stale. -->", "",
           f"Every public name of TensorFlow {tf.__version__} (Keras {keras.__version__}) in the namespaces "
           "below, and its status here:", "",
           "* **implemented**: `adv.<same path>` means what TensorFlow means. *checked* marks a name whose "
           "generated parity check (the same call on both sides: values, dtype, shape and the gradient) "
           "passed;",
           "* **different**: it works, with the difference stated;",
           "* **out of scope**: deliberately absent; using it raises the reason and what to write instead;",
           "* **missing**: a gap.", "", counts_markdown(entries), ""]
    for namespace in NAMESPACES:
        rows = [e for e in entries if e.namespace == namespace]
        out += [f"## `{namespace}`", "", "| name | status | note |", "|---|---|---|"]
        for e in rows:
            status = e.status + (" · checked" if e.check == "passed" else "")
            note = e.note if e.status != "out of scope" else f"{e.kind}: {e.note}"
            if e.check.startswith("failed"):
                note = (note + " " if note else "") + f"**parity {e.check}**"
            out.append(f"| `{e.name}` | {status} | {_escape(note)} |")
        out.append("")
    return "\n".join(out)


START, END = "<!-- tf-coverage:start -->", "<!-- tf-coverage:end -->"


def coming_from(text, entries):
    """``docs/coming-from.md`` with its generated counts block replaced."""
    block = (f"{START}\n{counts_markdown(entries)}\n\nEvery name with its status: [TensorFlow coverage]"
             f"(tf-coverage.md) (generated by `tools/tf_coverage.py`).\n{END}")
    if START in text:
        head, rest = text.split(START, 1)
        return head + block + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n## TensorFlow, name by name\n\n" + block + "\n"


def main(argv):
    entries = run()
    print(counts_markdown(entries))
    failures = [e for e in entries if e.failures]
    for e in failures:
        print(f"{e.qualified}: {e.check}")
    if "--write" in argv:
        (ROOT / "docs" / "tf-coverage.md").write_text(page(entries) + "\n")
        cf = ROOT / "docs" / "coming-from.md"
        cf.write_text(coming_from(cf.read_text(), entries))
    return 1 if any(e.namespace in CHECKED for e in failures) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
