"""``adv.data.Dataset``: the input pipelines of ``tf.data``, over numpy.

What you can do with it, as in TensorFlow's guides::

    ds = adv.data.Dataset.from_tensor_slices((x_train, y_train))
    ds = ds.shuffle(1000, seed=0).batch(32).prefetch(adv.data.AUTOTUNE)
    model.fit(ds, epochs=3)                 # a Dataset re-iterates each epoch
    for xb, yb in ds.take(1):               # adv tensors, in the element's structure
        print(xb.shape, yb.shape)

A dataset is a *recipe*, not data: every ``iter(ds)`` (every ``for`` loop,
every epoch of ``fit``) runs the recipe again from its source, which is why a
``shuffle`` gives a new order each epoch and a ``cache()`` is what keeps the
first pass. Elements are nested structures (tuples and dicts, as TensorFlow's
``tf.nest``; a Python list is one array, as in TensorFlow) whose leaves are
numpy arrays inside the pipeline; iterating gives :func:`adv.constant`
tensors (text stays numpy), ``as_numpy_iterator()`` numpy values.

Dtypes follow the package, not TensorFlow: Python floats become float64 and
Python ints int64 (``tf.data`` makes float32/int32), numpy arrays keep their
dtype. ``range`` gives int64, as ``tf.data``.

What is different from ``tf.data``, on purpose: nothing runs in parallel
(``num_parallel_calls``, ``deterministic`` and ``prefetch`` are accepted and
change nothing); ``map`` calls your function eagerly on each element, with the
package's tensors, and nothing it does is recorded on a tape; ``element_spec``
of a mapped dataset runs the function once on the first element (TensorFlow
traces it instead); ``cache(filename)`` with a file is refused (only memory).
"""
from __future__ import annotations

import inspect
import itertools
import math
from numbers import Integral

import numpy as np

from .base import session
from .base.state import paused
from .core.tensor import Tensor, constant

INFINITE_CARDINALITY = -1     # tf.data.INFINITE_CARDINALITY
UNKNOWN_CARDINALITY = -2      # tf.data.UNKNOWN_CARDINALITY
AUTOTUNE = -1                 # tf.data.AUTOTUNE: accepted wherever TensorFlow takes it; nothing is tuned here

__all__ = ["Dataset", "TensorSpec", "Iterator", "NumpyIterator", "Options", "ThreadingOptions", "AUTOTUNE",
           "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]


# ---------------------------------------------------------------------------
# element structures: tuples (namedtuples) and dicts are structure, everything else is a leaf
# ---------------------------------------------------------------------------
def _is_struct(x) -> bool:
    return isinstance(x, (tuple, dict))


def _flatten(x) -> list:
    if isinstance(x, dict):
        return [leaf for v in x.values() for leaf in _flatten(v)]
    if isinstance(x, tuple):
        return [leaf for v in x for leaf in _flatten(v)]
    return [x]


def _pack(template, leaves):
    """``leaves`` (in :func:`_flatten` order) put back into the structure of ``template``."""
    it = iter(leaves)

    def build(t):
        if isinstance(t, dict):
            return {k: build(v) for k, v in t.items()}
        if isinstance(t, tuple):
            parts = [build(v) for v in t]
            return type(t)(*parts) if hasattr(t, "_fields") else tuple(parts)
        return next(it)
    return build(template)


def _leaves_like(value, template, what: str) -> list:
    """The parts of ``value`` at the leaves of ``template``'s structure, taken whole (a shape such as
    ``(6,)`` is one leaf where the template has a leaf); a structure that differs is an error."""
    if isinstance(template, dict):
        if not isinstance(value, dict) or list(value) != list(template):
            raise ValueError(f"{what} must have the structure of the elements {_describe(template)}, got {value!r}.")
        return [leaf for k in template for leaf in _leaves_like(value[k], template[k], what)]
    if isinstance(template, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(template):
            raise ValueError(f"{what} must have the structure of the elements {_describe(template)}, got {value!r}.")
        return [leaf for v, t in zip(value, template) for leaf in _leaves_like(v, t, what)]
    return [value]


def _paths(x, prefix="") -> list:
    """The name of each leaf, for error messages: ``[0]``, ``['image']``, or ``element`` for a lone leaf."""
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in _paths(v, f"{prefix}[{k!r}]")]
    if isinstance(x, tuple):
        return [p for i, v in enumerate(x) for p in _paths(v, f"{prefix}[{i}]")]
    return [prefix or "element"]


def _same_structure(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same_structure(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_structure(p, q) for p, q in zip(a, b))
    return not _is_struct(a) and not _is_struct(b)


def _describe(x) -> str:
    """A short picture of a structure: ``(shape (3,), shape ())`` or ``{'a': ..., 'b': ...}``."""
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in x.items()) + "}"
    if isinstance(x, tuple):
        return "(" + ", ".join(_describe(v) for v in x) + ("," if len(x) == 1 else "") + ")"
    if isinstance(x, TensorSpec):
        return repr(x)
    return f"shape {np.shape(x)}"


def _to_numpy(value, where: str) -> np.ndarray:
    """One leaf as a numpy array (a Tensor's value, a TensorFlow tensor's ``.numpy()``, a list as one array)."""
    if isinstance(value, Tensor):
        return value._value
    if isinstance(value, Dataset):
        raise TypeError(f"{where}: got a Dataset where a value is expected. To combine datasets use "
                        "Dataset.zip((a, b)) or a.concatenate(b); to build one from another use a.flat_map(fn).")
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    try:
        return np.asarray(value)
    except ValueError as exc:
        if "inhomogeneous" not in str(exc):
            raise
        raise ValueError(f"{where}: a list is one array (TensorFlow's convention too), and this one's rows have "
                         "different lengths. For features and labels pass a tuple, e.g. (x, y), not [x, y]; for "
                         "sequences of different lengths pad them first (adv.utils.pad_sequences).") from None


def _numpy_struct(value, where: str):
    """A user's value (a map output, a generator item) as a structure of numpy arrays; lists of the top
    level of a map's output become tuples, as TensorFlow does."""
    if isinstance(value, dict):
        return {k: _numpy_struct(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, tuple):
        return _pack(value, [_numpy_struct(v, f"{where}[{i}]") for i, v in enumerate(value)])
    return _to_numpy(value, where)


def _as_tensor(leaf):
    """What iteration gives for one leaf: a package tensor, or the numpy array for text and objects."""
    return constant(leaf) if leaf.dtype.kind in "biufc" else leaf


def _as_numpy_value(leaf):
    """``as_numpy_iterator``'s leaf: numpy scalars for 0-d arrays (as TensorFlow), else the array."""
    return leaf[()] if leaf.ndim == 0 else leaf


# ---------------------------------------------------------------------------
# TensorSpec: the shape (None for unknown) and dtype of one component
# ---------------------------------------------------------------------------
class TensorSpec:
    """The type of one component of an element: ``shape`` (a tuple, ``None`` where it may vary), ``dtype``.

    ``adv.data.TensorSpec(shape=(None, 3), dtype="float32")`` is what
    ``tf.TensorSpec`` is in ``Dataset.from_generator(output_signature=...)``;
    ``ds.element_spec`` is a structure of them. A TensorFlow ``tf.TensorSpec``
    is accepted where one is expected.
    """

    def __init__(self, shape, dtype="float32", name=None):
        if shape is None:
            raise ValueError("TensorSpec: shape=None (unknown rank) is not supported; give the shape with None for "
                             "the sizes that vary, e.g. TensorSpec(shape=(None,), dtype='int64').")
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = _dtype(dtype, "TensorSpec")
        self.name = name

    @classmethod
    def from_value(cls, value) -> "TensorSpec":
        value = np.asarray(value)
        return cls(value.shape, value.dtype)

    def is_compatible_with(self, value) -> bool:
        """Whether ``value`` (an array or a spec) has a shape this spec allows and this dtype."""
        shape = value.shape if isinstance(value, TensorSpec) else np.shape(value)
        dtype = value.dtype if isinstance(value, TensorSpec) else np.asarray(value).dtype
        return _shape_fits(shape, self.shape) and np.dtype(dtype) == self.dtype

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype, self.name) == \
            (other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name}, name={self.name!r})"


def _dtype(dtype, where) -> np.dtype:
    """A numpy dtype from a name, a numpy dtype or a TensorFlow dtype (its ``as_numpy_dtype``)."""
    if hasattr(dtype, "as_numpy_dtype"):
        dtype = dtype.as_numpy_dtype
    if dtype in (str, bytes) or getattr(dtype, "name", None) == "string" or dtype == "string":
        return np.dtype(object)
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{where}: {dtype!r} is not a dtype; use a name such as 'float32', 'int64' or 'bool', "
                        "or a numpy dtype.") from None


def _spec_of(spec, where):
    """A user's spec (ours, a ``tf.TensorSpec``, anything with ``shape`` and ``dtype``) as a TensorSpec."""
    if isinstance(spec, TensorSpec):
        return spec
    if hasattr(spec, "shape") and hasattr(spec, "dtype"):
        shape = spec.shape.as_list() if hasattr(spec.shape, "as_list") else spec.shape
        return TensorSpec(shape, _dtype(spec.dtype, where), getattr(spec, "name", None))
    raise TypeError(f"{where}: expected a TensorSpec (adv.data.TensorSpec(shape=..., dtype=...)) or a structure "
                    f"of them, got {type(spec).__name__} {spec!r:.60}.")


def _shape_fits(shape, pattern) -> bool:
    return len(shape) == len(pattern) and all(p is None or p == s for s, p in zip(shape, pattern))


def _merge_shapes(a, b):
    """The most specific shape both ``a`` and ``b`` fit (None where they differ), or None for other ranks."""
    if len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def _specs_of(element):
    return _pack(element, [TensorSpec.from_value(v) for v in _flatten(element)])


def _spec_map(fn, spec):
    return _pack(spec, [fn(s) for s in _flatten(spec)])


def _cardinality_text(n) -> str:
    return {INFINITE_CARDINALITY: "infinite", UNKNOWN_CARDINALITY: "unknown"}.get(n, str(n))


def _count(value, what, minimum=-1) -> int:
    """An element count: an int ≥ ``minimum`` (-1 means "all" for take/skip/repeat, as TensorFlow)."""
    if isinstance(value, Tensor):
        value = value._value.item() if value._value.ndim == 0 else value
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        allowed = "a positive integer" if minimum == 1 else "a non-negative integer" if minimum == 0 \
            else "an integer ≥ 0, or -1 for all of them"
        raise ValueError(f"{what} must be {allowed}, got {value!r} ({type(value).__name__}).")
    return int(value)


# ---------------------------------------------------------------------------
# Dataset
# ---------------------------------------------------------------------------
class Iterator:
    """``tf.data.Iterator``: what ``iter(dataset)`` returns — ``next(it)`` / ``it.get_next()`` give the next
    element, ``element_spec`` says its structure. One pass; ``iter(dataset)`` again starts a new one."""

    def __init__(self, dataset, elements):
        self._elements, self._dataset = elements, dataset

    @property
    def element_spec(self):
        """The structure of an element (computed when asked: it may run the pipeline's functions once)."""
        return self._dataset.element_spec

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._elements)

    def get_next(self, name=None):
        """The next element; StopIteration (TensorFlow: OutOfRangeError) at the end."""
        return next(self._elements)


class NumpyIterator(Iterator):
    """``tf.data.NumpyIterator``: what ``dataset.as_numpy_iterator()`` returns (elements as numpy values)."""


class ThreadingOptions:
    """``tf.data.ThreadingOptions``: ``private_threadpool_size`` and ``max_intra_op_parallelism``. Accepted and
    kept; a pipeline here runs in the caller's thread."""

    def __init__(self):
        self.private_threadpool_size = None
        self.max_intra_op_parallelism = None


class Options:
    """``tf.data.Options``: settings of an input pipeline (``deterministic``, ``threading``, ``autotune``,
    ``experimental_optimization`` …), set by attribute and attached with ``dataset.with_options(options)``.
    Kept and read back as TensorFlow does; they change nothing here (one thread, always in order)."""

    def __init__(self):
        self.deterministic = None
        self.threading = ThreadingOptions()
        self.experimental_threading = self.threading
        self.autotune = None
        self.experimental_optimization = None
        self.experimental_slack = None
        self.experimental_distribute = None
        self.experimental_external_state_policy = None

    def merge(self, options) -> "Options":
        """These options with every value ``options`` sets (not None) taking precedence."""
        out = Options()
        for source in (self, options):
            for key, value in vars(source).items():
                if key == "threading" or key == "experimental_threading":
                    for k, v in vars(value).items():
                        if v is not None:
                            setattr(out.threading, k, v)
                elif value is not None:
                    setattr(out, key, value)
        return out


class Dataset:
    """A sequence of elements, built by a recipe and read by iterating (``tf.data.Dataset``'s surface).

    Make one with :meth:`from_tensor_slices`, :meth:`from_tensors`,
    :meth:`from_generator` or :meth:`range`; every transformation returns a
    new dataset and leaves its input as it was. ``fit``, ``evaluate`` and
    ``predict`` take a dataset of batches as ``x``.
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("Dataset cannot be made directly (nor in TensorFlow): start from "
                        "Dataset.from_tensor_slices((x, y)), Dataset.from_tensors(x), Dataset.from_generator(gen, "
                        "output_signature=...) or Dataset.range(n).")

    @classmethod
    def _make(cls, elements, cardinality, spec, kind, samples=False) -> "Dataset":
        """``elements()``: a fresh iterator of numpy structures per call; ``spec``: a structure of
        TensorSpec, or a zero-argument function computing it when first asked (``map``). ``samples``:
        known to give one sample per element (slices not batched since), which ``fit`` warns about."""
        ds = object.__new__(cls)
        ds._elements, ds._cardinality, ds._spec, ds._kind = elements, cardinality, spec, kind
        ds._one_sample_per_element = samples
        return ds

    # -- sources -----------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors, name=None) -> "Dataset":
        """One element per entry along the first axis of ``tensors`` (an array, or a tuple/dict of arrays
        whose first dimensions agree): ``from_tensor_slices((x, y))`` gives ``(x[i], y[i])``."""
        what = "Dataset.from_tensor_slices"
        data = _numpy_struct(tensors, what)
        leaves, paths = _flatten(data), _paths(data)
        if not leaves:
            raise ValueError(f"{what}: got an empty structure; give at least one array.")
        for leaf, path in zip(leaves, paths):
            if leaf.ndim == 0:
                raise ValueError(f"{what}: {path} is a single value (shape ()), which has no first dimension to "
                                 "slice. Give an array with one entry per element, or use Dataset.from_tensors "
                                 "for one element.")
        sizes = {len(leaf) for leaf in leaves}
        if len(sizes) > 1:
            shown = ", ".join(f"{p}: shape {leaf.shape}" for p, leaf in zip(paths, leaves))
            raise ValueError(f"{what}: every component must have the same size in its first dimension (one entry "
                             f"per element), got {shown}. Cut them to the same number of samples, e.g. "
                             f"x[:{min(sizes)}], or check that features and labels belong together.")
        n = sizes.pop()
        leaves = [np.array(leaf) for leaf in leaves]       # a copy, as tf.constant: later edits do not leak in

        def elements():
            for i in range(n):
                yield _pack(data, [leaf[i] for leaf in leaves])
        spec = _pack(data, [TensorSpec(leaf.shape[1:], leaf.dtype) for leaf in leaves])
        return Dataset._make(elements, n, spec, "TensorSliceDataset", samples=True)

    @staticmethod
    def from_tensors(tensors, name=None) -> "Dataset":
        """A dataset of one element: ``tensors`` whole (``from_tensors((x, y))`` is one ``(x, y)``)."""
        data = _numpy_struct(tensors, "Dataset.from_tensors")
        data = _pack(data, [np.array(leaf) for leaf in _flatten(data)])
        return Dataset._make(lambda: iter([data]), 1, _specs_of(data), "TensorDataset")

    @staticmethod
    def range(*args, dtype="int64", name=None) -> "Dataset":
        """``range(stop)``, ``range(start, stop[, step])`` as Python's, each element a scalar (int64)."""
        if not 1 <= len(args) <= 3 or not all(isinstance(a, Integral) and not isinstance(a, bool) for a in args):
            raise TypeError(f"Dataset.range takes 1 to 3 integers (stop), (start, stop) or (start, stop, step), "
                            f"as Python's range; got {args!r}.")
        r = range(*args)
        kind = _dtype(dtype, "Dataset.range")
        return Dataset._make(lambda: (np.asarray(i, dtype=kind) for i in r), len(r), TensorSpec((), kind),
                             "RangeDataset")

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None) -> "Dataset":
        """The items of ``generator()`` (a callable; called again for each iteration), checked against
        ``output_signature`` (a structure of :class:`TensorSpec`), or against ``output_types`` with
        optional ``output_shapes`` (TensorFlow's older form). ``args``: a tuple passed to the call."""
        what = "Dataset.from_generator"
        if not callable(generator):
            raise TypeError(f"{what}: generator must be a callable that returns an iterator (the generator "
                            f"function itself, not its result), got {type(generator).__name__}. Pass gen, not "
                            "gen(); to give it arguments use args=(...).")
        if output_signature is not None and (output_types is not None or output_shapes is not None):
            raise TypeError(f"{what}: give output_signature alone, or output_types (with output_shapes), not "
                            "both; output_signature is the current form.")
        if output_signature is None and output_types is None:
            raise TypeError(f"{what}: say what the generator yields, e.g. output_signature=(adv.data.TensorSpec("
                            "shape=(3,), dtype='float32'), adv.data.TensorSpec(shape=(), dtype='int64')) for "
                            "(features, label) items.")
        if output_signature is not None:
            spec = _spec_struct(output_signature, what)
        else:
            spec = _types_and_shapes(output_types, output_shapes, what)
        call_args = tuple(args) if args is not None else ()

        def elements():
            for i, item in enumerate(generator(*call_args)):
                yield _checked_item(item, spec, i, what)
        return Dataset._make(elements, UNKNOWN_CARDINALITY, spec, "FlatMapDataset")

    # -- what it holds -----------------------------------------------------
    @property
    def element_spec(self):
        """The structure of each element, with a :class:`TensorSpec` per component."""
        if callable(self._spec):
            self._spec = self._spec()
        return self._spec

    def cardinality(self) -> Tensor:
        """The number of elements as a scalar int64 tensor; ``INFINITE_CARDINALITY`` (-1) or
        ``UNKNOWN_CARDINALITY`` (-2) when it is endless or not known without reading it (after ``filter``,
        ``from_generator``)."""
        return constant(np.int64(self._cardinality))

    def __len__(self) -> int:
        if self._cardinality == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite (it has a repeat() without count); len() has no answer. Use "
                            "take(n) to cut it, or pass steps_per_epoch to fit.")
        if self._cardinality == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown (filter and from_generator cannot know it without "
                            "reading everything). Count it with sum(1 for _ in ds), or use "
                            "ds.cardinality(), which says -2 for unknown.")
        return self._cardinality

    def __bool__(self) -> bool:
        return True     # truth must not call len(), which refuses endless datasets

    def __iter__(self) -> "Iterator":
        """The elements, as package tensors in the element's structure; a new pass over the recipe."""
        return Iterator(self, (_pack(e, [_as_tensor(leaf) for leaf in _flatten(e)]) for e in self._elements()))

    def as_numpy_iterator(self) -> "NumpyIterator":
        """The elements as numpy values (numpy scalars for scalars, as TensorFlow)."""
        return NumpyIterator(self, (_pack(e, [_as_numpy_value(leaf) for leaf in _flatten(e)])
                                    for e in self._elements()))

    def with_options(self, options, name=None) -> "Dataset":
        """The same elements, carrying ``options`` (merged with any set before). Options tune TensorFlow's
        pipeline (threads, determinism, optimisations); here they are kept and read back, and change nothing."""
        if not isinstance(options, Options):
            raise TypeError(f"Dataset.with_options: expected a tf.data.Options, got {type(options).__name__}.")
        out = self._derived(self._elements, self._cardinality, self._spec, self._kind)
        out._options = self.options().merge(options)
        return out

    def options(self) -> "Options":
        """The options set with :meth:`with_options` (an ``Options`` with nothing set when none were)."""
        return getattr(self, "_options", None) or Options()

    def __repr__(self) -> str:
        try:
            spec = _describe(self.element_spec)
        except Exception:   # noqa: BLE001 -- a repr must not raise because a map function does
            spec = "(not computed: the map function raised)"
        return f"<{self._kind} element_spec={spec}>"

    # -- transformations -------------------------------------------------------
    def _derived(self, elements, cardinality, spec, kind, samples=None) -> "Dataset":
        """A dataset made from this one (its options carried on); it gives samples if this one does, unless
        ``samples`` says."""
        out = Dataset._make(elements, cardinality, spec, kind,
                            self._one_sample_per_element if samples is None else samples)
        if getattr(self, "_options", None) is not None:
            out._options = self._options
        return out

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None) -> "Dataset":
        """The elements in random order, drawn from a buffer of ``buffer_size`` as TensorFlow does.

        The buffer is filled with the first ``buffer_size`` elements; each step
        gives a random one of them and puts the next input element in its
        place. So a buffer smaller than the dataset only shuffles locally (an
        element can move forward at most ``buffer_size - 1`` places); use a
        buffer at least the dataset's size for a full shuffle.

        ``seed``: the same orders on every run (each iteration still gets a new
        one with ``reshuffle_each_iteration=True``, the default; with False
        every iteration repeats the first order). Without a seed the seed is
        drawn once from the generator of :func:`adv.layers.set_random_seed`.
        """
        what = "Dataset.shuffle"
        size = _count(buffer_size, f"{what}: buffer_size", minimum=1)
        if seed is None:
            seed = int(session.generator().integers(2 ** 63))
        else:
            seed = _count(seed, f"{what}: seed", minimum=0)
        passes = itertools.count()

        def elements():
            rng = np.random.default_rng([seed, next(passes) if reshuffle_each_iteration else 0])
            source, buffer = self._elements(), []
            for element in source:
                buffer.append(element)
                if len(buffer) == size:
                    break
            for element in source:
                i = int(rng.integers(len(buffer)))
                yield buffer[i]
                buffer[i] = element
            while buffer:
                i = int(rng.integers(len(buffer)))
                buffer[i], buffer[-1] = buffer[-1], buffer[i]
                yield buffer.pop()
        return self._derived(elements, self._cardinality, self._spec, "ShuffleDataset")

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None,
              name=None) -> "Dataset":
        """Consecutive elements stacked into batches of ``batch_size`` (a new first axis); the last batch
        is smaller unless ``drop_remainder=True`` drops it. Elements of a batch must have equal shapes
        (:meth:`padded_batch` pads them)."""
        size = _count(batch_size, "Dataset.batch: batch_size", minimum=1)
        return self._batched(size, drop_remainder, lambda parts, k: _stack(parts, k, "Dataset.batch"),
                             lambda s: _batched_spec(s, size if drop_remainder else None, s.shape),
                             "BatchDataset")

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False,
                     name=None) -> "Dataset":
        """:meth:`batch` for elements of different shapes: each component is padded at the end of each axis
        with ``padding_values`` (0 by default) to ``padded_shapes`` (a structure of shapes; None sizes, or
        ``padded_shapes=None``, pad to the longest in the batch)."""
        what = "Dataset.padded_batch"
        size = _count(batch_size, f"{what}: batch_size", minimum=1)
        spec = self.element_spec
        if padded_shapes is None:
            shapes = [tuple(None for _ in s.shape) for s in _flatten(spec)]
        else:
            shapes = [tuple(None if d is None or d == -1 else int(d) for d in s)
                      for s in _leaves_like(padded_shapes, spec, f"{what}: padded_shapes")]
        values = [0] * len(shapes) if padding_values is None else \
            (_leaves_like(padding_values, spec, f"{what}: padding_values") if _is_struct(padding_values)
             else [padding_values] * len(shapes))       # one value pads every component

        def stack(parts, k):
            leaves = list(zip(*[_flatten(p) for p in parts]))
            out = [_pad_stack(col, shape, value, k, j, what) for j, (col, shape, value) in
                   enumerate(zip(leaves, shapes, values))]
            return _pack(parts[0], out)
        out_specs = iter(shapes)
        return self._batched(size, drop_remainder, stack,
                             lambda s: _batched_spec(s, size if drop_remainder else None, next(out_specs)),
                             "PaddedBatchDataset")

    def _batched(self, size, drop_remainder, stack, spec_fn, kind) -> "Dataset":
        def elements():
            source, k = self._elements(), 0
            while True:
                parts = list(itertools.islice(source, size))
                if not parts or (drop_remainder and len(parts) < size):
                    return
                yield stack(parts, k)
                k += 1
        n = self._cardinality
        if n >= 0:
            n = n // size if drop_remainder else math.ceil(n / size)
        return self._derived(elements, n, lambda: _spec_map(spec_fn, self.element_spec), kind, samples=False)

    def unbatch(self, name=None) -> "Dataset":
        """The inverse of :meth:`batch`: each element split along its first axis into its rows."""
        def elements():
            for k, element in enumerate(self._elements()):
                leaves = _flatten(element)
                if any(leaf.ndim == 0 for leaf in leaves):
                    raise ValueError(f"Dataset.unbatch: element {k} has a scalar component ({_describe(element)}); "
                                     "only batched elements (a first axis to split) can be unbatched.")
                sizes = {len(leaf) for leaf in leaves}
                if len(sizes) > 1:
                    raise ValueError(f"Dataset.unbatch: element {k} has components of different batch sizes "
                                     f"({_describe(element)}); they must share their first dimension.")
                for i in range(sizes.pop()):
                    yield _pack(element, [leaf[i] for leaf in leaves])
        return self._derived(elements, UNKNOWN_CARDINALITY if self._cardinality != INFINITE_CARDINALITY
                             else INFINITE_CARDINALITY,
                             lambda: _spec_map(lambda s: TensorSpec(s.shape[1:], s.dtype), self.element_spec),
                             "UnbatchDataset", samples=True)

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None) -> "Dataset":
        """``map_func`` applied to each element; a tuple element is passed as separate arguments
        (``map(lambda x, y: (x / 255, y))``, as TensorFlow), anything else as one argument (a dict too).

        The function gets package tensors and may return tensors, arrays or
        numbers, in any structure (a list becomes a tuple); nothing it does is
        recorded on a tape.
        """
        what = "Dataset.map"
        _check_callable(map_func, what, "map_func")

        def elements():
            for k, element in enumerate(self._elements()):
                out = _call(map_func, element, what, k)
                yield _numpy_struct(tuple(out) if isinstance(out, list) else out, f"{what}: the result for "
                                    f"element {k}")

        def spec():
            first = next(iter(elements()), None)
            if first is None:
                raise ValueError(f"{what}: the dataset is empty, so its element_spec cannot be found by running "
                                 "the function.")
            return _specs_of(first)
        return self._derived(elements, self._cardinality, spec, "MapDataset")

    def flat_map(self, map_func, name=None) -> "Dataset":
        """``map_func`` maps each element to a Dataset; their elements are given one after the other."""
        what = "Dataset.flat_map"
        _check_callable(map_func, what, "map_func")

        def elements():
            for k, element in enumerate(self._elements()):
                inner = _call(map_func, element, what, k)
                if not isinstance(inner, Dataset):
                    raise TypeError(f"{what}: map_func must return a Dataset for each element, got "
                                    f"{type(inner).__name__} for element {k}. Use map for a function that "
                                    "returns values.")
                yield from inner._elements()

        def spec():
            first = next(iter(elements()), None)
            if first is None:
                raise ValueError(f"{what}: no element, so its element_spec is not known.")
            return _specs_of(first)
        return self._derived(elements, UNKNOWN_CARDINALITY, spec, "FlatMapDataset", samples=False)

    def filter(self, predicate, name=None) -> "Dataset":
        """The elements for which ``predicate`` (called as :meth:`map` calls its function) is True."""
        what = "Dataset.filter"
        _check_callable(predicate, what, "predicate")

        def elements():
            for k, element in enumerate(self._elements()):
                keep = _call(predicate, element, what, k)
                value = np.asarray(keep._value if isinstance(keep, Tensor) else keep)
                if value.shape != () or value.dtype != np.bool_:
                    raise TypeError(f"{what}: predicate must return one boolean (a scalar bool tensor or a "
                                    f"Python bool), got shape {value.shape} and dtype {value.dtype} for element "
                                    f"{k}. Reduce it, e.g. adv.all(x > 0), or compare one value, y == 1.")
                if bool(value):
                    yield element
        return self._derived(elements, UNKNOWN_CARDINALITY if self._cardinality != INFINITE_CARDINALITY
                             else INFINITE_CARDINALITY, self._spec, "FilterDataset")

    def take(self, count, name=None) -> "Dataset":
        """The first ``count`` elements (all of them for -1)."""
        count = _count(count, "Dataset.take: count")
        n = self._cardinality
        if count >= 0 and n != UNKNOWN_CARDINALITY:
            n = count if n == INFINITE_CARDINALITY else min(n, count)
        return self._derived(lambda: itertools.islice(self._elements(), None if count < 0 else count), n,
                             self._spec, "TakeDataset")

    def skip(self, count, name=None) -> "Dataset":
        """All but the first ``count`` elements (none for -1)."""
        count = _count(count, "Dataset.skip: count")
        n = self._cardinality
        if count < 0:
            n = 0 if n != INFINITE_CARDINALITY else INFINITE_CARDINALITY
        elif n >= 0:
            n = max(n - count, 0)

        def elements():
            if count < 0:
                for _ in self._elements():
                    pass
                return iter(())
            return itertools.islice(self._elements(), count, None)
        return self._derived(elements, n, self._spec, "SkipDataset")

    def repeat(self, count=None, name=None) -> "Dataset":
        """The dataset ``count`` times over (endlessly for None or -1); each repetition is a new pass,
        so a shuffle before ``repeat`` gives each its own order."""
        count = -1 if count is None else _count(count, "Dataset.repeat: count")
        n = self._cardinality
        if n == 0 or count == 0:
            n = 0
        elif count < 0:
            n = INFINITE_CARDINALITY if n != UNKNOWN_CARDINALITY else UNKNOWN_CARDINALITY
        elif n >= 0:
            n = n * count

        def elements():
            for _ in (itertools.count() if count < 0 else range(count)):
                got = False
                for element in self._elements():
                    got = True
                    yield element
                if not got:         # an empty pass: repeating it forever would never return
                    return
        return self._derived(elements, n, self._spec, "RepeatDataset")

    def prefetch(self, buffer_size, name=None) -> "Dataset":
        """The same elements (TensorFlow prepares them ahead in the background; here nothing runs ahead)."""
        _count(buffer_size, "Dataset.prefetch: buffer_size")
        return self._derived(self._elements, self._cardinality, self._spec, "PrefetchDataset")

    def cache(self, filename="", name=None) -> "Dataset":
        """Keep the elements of the first complete pass in memory and give them again afterwards (a
        shuffle before ``cache`` is then frozen in its first order; put it after the cache)."""
        if filename:
            raise ValueError(f"Dataset.cache: caching to a file ({filename!r}) is not supported here; call cache() "
                             "without a filename to keep the elements in memory.")
        kept: list = []
        done = [False]

        def elements():
            if done[0]:
                yield from kept
                return
            pass_elements = []
            for element in self._elements():
                pass_elements.append(element)
                yield element
            kept[:], done[0] = pass_elements, True     # only a complete pass is kept, as TensorFlow
        return self._derived(elements, self._cardinality, self._spec, "CacheDataset")

    def concatenate(self, dataset, name=None) -> "Dataset":
        """This dataset's elements, then those of ``dataset`` (same structure and dtypes)."""
        what = "Dataset.concatenate"
        if not isinstance(dataset, Dataset):
            raise TypeError(f"{what}: expected a Dataset, got {type(dataset).__name__}. Wrap arrays first: "
                            "Dataset.from_tensor_slices(...).")
        a, b = self.element_spec, dataset.element_spec
        if not _same_structure(a, b) or any(p.dtype != q.dtype for p, q in zip(_flatten(a), _flatten(b))):
            raise TypeError(f"{what}: the two datasets must have elements of the same structure and dtypes, got "
                            f"{_describe(a)} and {_describe(b)}. Cast one with map(lambda ...: ...astype(...)).")
        for p, q in zip(_flatten(a), _flatten(b)):
            if len(p.shape) != len(q.shape):
                raise TypeError(f"{what}: components of different ranks, {p} and {q}; reshape one with map.")
        spec = _pack(a, [TensorSpec(_merge_shapes(p.shape, q.shape), p.dtype) for p, q in
                         zip(_flatten(a), _flatten(b))])
        m, n = self._cardinality, dataset._cardinality
        card = INFINITE_CARDINALITY if INFINITE_CARDINALITY in (m, n) else \
            UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in (m, n) else m + n
        return self._derived(lambda: itertools.chain(self._elements(), dataset._elements()), card, spec,
                             "ConcatenateDataset", self._one_sample_per_element and dataset._one_sample_per_element)

    @staticmethod
    def zip(*datasets, name=None) -> "Dataset":
        """Elements of several datasets side by side: ``Dataset.zip((a, b))`` (or ``zip(a, b)``) gives
        ``(a_i, b_i)``, a dict of datasets a dict; it stops with the shortest."""
        structure = datasets[0] if len(datasets) == 1 else tuple(datasets)     # zip(a): a's own elements
        members = _flatten(structure)
        bad = [type(d).__name__ for d in members if not isinstance(d, Dataset)]
        if not members or bad:
            raise TypeError(f"Dataset.zip: expected datasets, e.g. Dataset.zip((a, b)), got "
                            f"{', '.join(bad) or 'nothing'}. Wrap arrays with Dataset.from_tensor_slices first.")
        cards = [d._cardinality for d in members]
        finite = [c for c in cards if c >= 0]
        card = min(finite) if finite else (UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in cards
                                           else INFINITE_CARDINALITY)
        if finite and UNKNOWN_CARDINALITY in cards:
            card = UNKNOWN_CARDINALITY

        def elements():
            for parts in zip(*[d._elements() for d in members]):
                yield _pack(structure, list(parts))
        return Dataset._make(elements, card, lambda: _pack(structure, [d.element_spec for d in members]),
                             "ZipDataset", all(d._one_sample_per_element for d in members))

    def enumerate(self, start=0, name=None) -> "Dataset":
        """``(i, element)`` pairs, ``i`` an int64 counting from ``start``."""
        start = _count(start, "Dataset.enumerate: start", minimum=0)

        def elements():
            for i, element in enumerate(self._elements(), start):
                yield np.asarray(i, dtype=np.int64), element
        return self._derived(elements, self._cardinality, lambda: (TensorSpec((), np.int64), self.element_spec),
                             "EnumerateDataset")

    def shard(self, num_shards, index, name=None) -> "Dataset":
        """Every ``num_shards``-th element, starting at ``index`` (one worker's share)."""
        num_shards = _count(num_shards, "Dataset.shard: num_shards", minimum=1)
        index = _count(index, "Dataset.shard: index", minimum=0)
        if index >= num_shards:
            raise ValueError(f"Dataset.shard: index must be below num_shards ({num_shards}), got {index}.")
        n = self._cardinality
        if n >= 0:
            n = len(range(index, n, num_shards))
        return self._derived(lambda: itertools.islice(self._elements(), index, None, num_shards), n, self._spec,
                             "ShardDataset")

    def reduce(self, initial_state, reduce_func, name=None):
        """``reduce_func(state, element)`` folded over the elements from ``initial_state``; the final state
        (package tensors), e.g. ``ds.reduce(0, lambda count, _: count + 1)``."""
        _check_callable(reduce_func, "Dataset.reduce", "reduce_func")
        state = _numpy_struct(initial_state, "Dataset.reduce: initial_state")
        with paused():
            for element in self._elements():
                tensors = _pack(element, [_as_tensor(leaf) for leaf in _flatten(element)])
                current = _pack(state, [_as_tensor(leaf) for leaf in _flatten(state)])
                state = _numpy_struct(reduce_func(current, tensors), "Dataset.reduce: the new state")
        return _pack(state, [_as_tensor(leaf) for leaf in _flatten(state)])

    def apply(self, transformation_func) -> "Dataset":
        """``transformation_func(self)``: a chain-friendly way to use a function of datasets."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(f"Dataset.apply: transformation_func must return a Dataset, got {type(out).__name__}.")
        return out

    def get_single_element(self, name=None):
        """The one element of a dataset that has exactly one (an error otherwise)."""
        found = list(itertools.islice(iter(self), 2))
        if len(found) != 1:
            raise ValueError(f"Dataset.get_single_element: the dataset has {'no' if not found else 'more than one'} "
                             "element; it must have exactly one (use take(1) first).")
        return found[0]


# ---------------------------------------------------------------------------
# helpers of the transformations
# ---------------------------------------------------------------------------
def _check_callable(fn, what, arg):
    if not callable(fn):
        raise TypeError(f"{what}: {arg} must be a function, got {type(fn).__name__} {fn!r:.40}.")


def _call(fn, element, what, k):
    """``fn`` on one element as TensorFlow calls it: a tuple's parts as separate arguments, else one
    argument. Run with no tape recording (a pipeline is not part of the model's computation)."""
    tensors = _pack(element, [_as_tensor(leaf) for leaf in _flatten(element)])
    args = tuple(tensors) if isinstance(tensors, tuple) and not hasattr(tensors, "_fields") else (tensors,)
    try:
        if k == 0:      # the elements share one structure: checking the first call is enough
            inspect.signature(fn).bind(*args)
    except TypeError:
        shown = "the element (one argument)" if len(args) == 1 else \
            f"the {len(args)} parts of each element {_describe(element)} as {len(args)} separate arguments"
        raise TypeError(f"{what}: the function cannot be called with {shown}, which is how TensorFlow calls it "
                        f"for {'a tuple' if len(args) > 1 else 'this'} element. Give it that many parameters, "
                        f"e.g. lambda {', '.join('xyzw'[i] if i < 4 else f'a{i}' for i in range(len(args)))}: ..., "
                        "or lambda *parts: ....") from None
    except ValueError:
        pass        # a builtin without a signature: just call it
    with paused():
        return fn(*args)


def _stack(parts, k, what):
    """The elements ``parts`` stacked component by component; unequal shapes name the component."""
    columns = list(zip(*[_flatten(p) for p in parts]))
    paths = _paths(parts[0])
    out = []
    for column, path in zip(columns, paths):
        first = column[0].shape
        for i, leaf in enumerate(column):
            if leaf.shape != first:
                where = "" if path == "element" else f" in component {path}"
                raise ValueError(f"{what}: cannot batch elements of different shapes{where}: in batch {k}, the "
                                 f"first element has shape {first} and element {i} has shape {leaf.shape}. Pad "
                                 "them with padded_batch(batch_size) (or adv.utils.pad_sequences before "
                                 "from_tensor_slices), resize them with map, or batch(1).")
        out.append(np.stack(column))
    return _pack(parts[0], out)


def _batched_spec(spec, first, shape):
    """The spec of a batch of elements of ``spec`` (``shape`` per element; None: any shape)."""
    if shape is None:
        return _LooseSpec(None, spec.dtype)
    return TensorSpec((first, *shape), spec.dtype)


def _pad_stack(column, shape, value, k, j, what):
    rank = column[0].ndim
    if any(leaf.ndim != rank for leaf in column) or len(shape) != rank:
        raise ValueError(f"{what}: component {j} must have the same rank in every element and in padded_shapes "
                         f"(got ranks {sorted({leaf.ndim for leaf in column})} and padded shape {shape}) in "
                         f"batch {k}.")
    longest = [max(leaf.shape[a] for leaf in column) for a in range(rank)]
    target = [longest[a] if shape[a] is None else shape[a] for a in range(rank)]
    for a in range(rank):
        if longest[a] > target[a]:
            raise ValueError(f"{what}: in batch {k}, component {j} has size {longest[a]} on axis {a}, more than "
                             f"padded_shapes allows ({target[a]}); raise it or cut the elements with map.")
    out = np.full((len(column), *target), value, dtype=column[0].dtype)
    for i, leaf in enumerate(column):
        out[(i, *[slice(0, s) for s in leaf.shape])] = leaf
    return out


def _spec_struct(signature, what):
    if isinstance(signature, dict):
        return {k: _spec_struct(v, what) for k, v in signature.items()}
    if isinstance(signature, (tuple, list)):
        return tuple(_spec_struct(v, what) for v in signature)
    return _spec_of(signature, f"{what}: output_signature")


def _types_and_shapes(types, shapes, what):
    """``output_types`` (+ ``output_shapes``, unknown sizes when left out) as a structure of TensorSpec."""
    if isinstance(types, list):
        types = tuple(types)
    type_leaves = _flatten(types)
    shape_leaves = [None] * len(type_leaves) if shapes is None else \
        _leaves_like(shapes, types, f"{what}: output_shapes")
    specs = []
    for t, s in zip(type_leaves, shape_leaves):
        shape = None if s is None else tuple(s.as_list() if hasattr(s, "as_list") else s)
        specs.append(_LooseSpec(shape, _dtype(t, f"{what}: output_types")))
    return _pack(types, specs)


class _LooseSpec(TensorSpec):
    """A spec from ``output_types`` without ``output_shapes``: any shape (TensorFlow's unknown rank)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.name = shape, dtype, None

    def is_compatible_with(self, value) -> bool:
        return self.shape is None or super().is_compatible_with(value)


def _checked_item(item, spec, i, what):
    """A generator's item as numpy arrays of the signature's dtypes, or an error naming what differs."""
    if isinstance(item, list) and isinstance(spec, tuple):
        item = tuple(item)
    if not _same_structure(item, spec):
        raise TypeError(f"{what}: item {i} of the generator is {_describe(_numpy_struct(item, what))}, where the "
                        f"signature says {_describe(spec)}. Yield that structure (a tuple for several "
                        "components), or fix output_signature.")
    out = []
    for value, s, path in zip(_flatten(item), _flatten(spec), _paths(spec)):
        arr = _to_numpy(value, f"{what}: item {i}")
        try:
            converted = arr.astype(s.dtype, casting="same_kind") if arr.dtype != s.dtype else arr
        except TypeError:
            raise TypeError(f"{what}: item {i} of the generator, component {path}, has dtype {arr.dtype}, which "
                            f"cannot become {s.dtype} without losing its kind (TensorFlow refuses it too). Yield "
                            f"{s.dtype} values, or set dtype={arr.dtype.name!r} in the signature.") from None
        shape = np.shape(converted)
        if s.shape is not None and not _shape_fits(shape, s.shape):
            raise ValueError(f"{what}: item {i} of the generator, component {path}, has shape {shape}, where the "
                             f"signature says {s.shape}. Put None in the signature for sizes that vary, e.g. "
                             f"TensorSpec(shape={tuple(None for _ in s.shape)}, ...).")
        out.append(converted)
    return _pack(spec, out)
