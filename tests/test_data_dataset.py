"""adv.data.Dataset: tf.data's semantics (structures, shuffle buffer, batching, cardinality, from_generator
signatures) and fit/evaluate/predict reading a Dataset as Keras 3 reads a tf.data.Dataset."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autodiff_viz as adv
from autodiff_viz.data import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, TensorSpec


def values(ds):
    return [np.asarray(e).tolist() if not isinstance(e, (tuple, dict)) else e for e in ds.as_numpy_iterator()]


# ---------------------------------------------------------------------------
# sources and structures
# ---------------------------------------------------------------------------
def test_from_tensor_slices_of_a_tuple_gives_pairs_of_package_tensors():
    x, y = np.arange(6.0).reshape(3, 2), np.array([10, 11, 12])
    pairs = list(Dataset.from_tensor_slices((x, y)))
    assert len(pairs) == 3 and all(isinstance(p, tuple) and len(p) == 2 for p in pairs)
    xb, yb = pairs[1]
    assert isinstance(xb, adv.Tensor) and xb.numpy().tolist() == [2.0, 3.0] and int(yb) == 11
    assert Dataset.from_tensor_slices((x, y)).element_spec == (TensorSpec((2,), "float64"), TensorSpec((), "int64"))


def test_dicts_and_nesting_keep_their_structure_and_a_list_is_one_array():
    ds = Dataset.from_tensor_slices({"image": np.zeros((2, 3)), "meta": (np.array([1, 2]), np.array([3., 4.]))})
    first = next(iter(ds))
    assert set(first) == {"image", "meta"} and first["image"].shape == (3,) and int(first["meta"][0]) == 1
    assert values(Dataset.from_tensor_slices([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]    # TensorFlow: a list is a tensor


def test_from_tensor_slices_errors_name_the_shapes_and_the_fix():
    with pytest.raises(ValueError, match=r"from_tensor_slices: every component must have the same size in its first "
                                         r"dimension.*\[0\]: shape \(100, 3\), \[1\]: shape \(90,\).*x\[:90\]"):
        Dataset.from_tensor_slices((np.zeros((100, 3)), np.zeros(90)))
    with pytest.raises(ValueError, match=r"\[1\] is a single value \(shape \(\)\).*from_tensors"):
        Dataset.from_tensor_slices((np.zeros(3), 5.0))
    with pytest.raises(ValueError, match=r"pass a tuple, e.g. \(x, y\), not \[x, y\]"):
        Dataset.from_tensor_slices([np.zeros((4, 3)), np.zeros(4)])


def test_the_dataset_copies_its_arrays_as_tf_constant_does():
    x = np.arange(3)
    ds = Dataset.from_tensor_slices(x)
    x[0] = 99
    assert values(ds) == [0, 1, 2]


def test_from_tensors_range_and_as_numpy_iterator():
    assert [e.shape for e in Dataset.from_tensors(np.ones((2, 3)))] == [(2, 3)]
    assert values(Dataset.range(2, 9, 3)) == [2, 5, 8] and len(Dataset.range(2, 9, 3)) == 3
    first = next(Dataset.range(3).as_numpy_iterator())
    assert isinstance(first, np.int64)                                   # a numpy scalar, as TensorFlow
    assert next(iter(Dataset.range(3))).dtype == np.int64
    with pytest.raises(TypeError, match="Dataset cannot be made directly.*from_tensor_slices"):
        Dataset()


# ---------------------------------------------------------------------------
# shuffle: TensorFlow's buffer, seeds, a new order per iteration
# ---------------------------------------------------------------------------
def test_a_small_buffer_shuffles_only_locally_as_tensorflow():
    n, size = 50, 4
    for seed in range(20):
        out = values(Dataset.range(n).shuffle(size, seed=seed))
        assert sorted(out) == list(range(n))
        # the k-th output was drawn from a buffer holding inputs up to k + size - 1
        assert all(v <= k + size - 1 for k, v in enumerate(out))
    assert values(Dataset.range(10).shuffle(1, seed=0)) == list(range(10))        # a buffer of one: no shuffle


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 40), size=st.integers(1, 50), seed=st.integers(0, 2 ** 31), batch=st.integers(1, 9),
       take=st.integers(-1, 45), skip=st.integers(-1, 45))
def test_pipelines_agree_with_the_same_steps_on_a_python_list(n, size, seed, batch, take, skip):
    out = values(Dataset.range(n).shuffle(size, seed=seed))
    assert sorted(out) == list(range(n)) and all(v <= k + size - 1 for k, v in enumerate(out))
    batched = Dataset.range(n).batch(batch)
    assert values(batched) == [list(range(n))[i:i + batch] for i in range(0, n, batch)] and \
        len(batched) == len(values(batched))
    assert values(batched.unbatch()) == list(range(n))
    cut = Dataset.range(n).skip(skip).take(take)
    rest = [] if skip < 0 else list(range(n))[skip:]
    assert values(cut) == (rest if take < 0 else rest[:take]) and len(cut) == len(values(cut))


def test_a_full_buffer_can_put_any_element_first():
    firsts = {values(Dataset.range(6).shuffle(6, seed=s))[0] for s in range(200)}
    assert firsts == set(range(6))
    firsts_small = {values(Dataset.range(6).shuffle(2, seed=s))[0] for s in range(200)}
    assert firsts_small == {0, 1}


def test_seeded_shuffles_repeat_across_runs_and_reshuffle_each_iteration():
    a, b = Dataset.range(20).shuffle(20, seed=5), Dataset.range(20).shuffle(20, seed=5)
    epochs_a, epochs_b = [values(a) for _ in range(3)], [values(b) for _ in range(3)]
    assert epochs_a == epochs_b                        # the same seed: the same sequence of orders
    assert epochs_a[0] != epochs_a[1] != epochs_a[2]   # a new order each iteration
    frozen = Dataset.range(20).shuffle(20, seed=5, reshuffle_each_iteration=False)
    assert values(frozen) == values(frozen) != list(range(20))


def test_an_unseeded_shuffle_follows_set_random_seed():
    adv.layers.set_random_seed(4)
    first = values(Dataset.range(30).shuffle(30))
    adv.layers.set_random_seed(4)
    assert values(Dataset.range(30).shuffle(30)) == first


def test_shuffle_then_repeat_gives_each_repetition_its_own_order():
    out = values(Dataset.range(10).shuffle(10, seed=1).repeat(2))
    assert sorted(out[:10]) == sorted(out[10:]) == list(range(10)) and out[:10] != out[10:]


# ---------------------------------------------------------------------------
# batch, padded_batch, unbatch
# ---------------------------------------------------------------------------
def test_batch_stacks_components_and_the_last_batch_is_smaller():
    ds = Dataset.from_tensor_slices((np.arange(10.0).reshape(5, 2), np.arange(5))).batch(2)
    shapes = [(xb.shape, yb.shape) for xb, yb in ds]
    assert shapes == [((2, 2), (2,)), ((2, 2), (2,)), ((1, 2), (1,))] and len(ds) == 3
    assert ds.element_spec[0] == TensorSpec((None, 2), "float64")
    dropped = Dataset.range(5).batch(2, drop_remainder=True)
    assert values(dropped) == [[0, 1], [2, 3]] and len(dropped) == 2
    assert dropped.element_spec == TensorSpec((2,), "int64")


def test_batch_of_unequal_shapes_names_the_component_and_suggests_padded_batch():
    def gen():
        yield np.ones(3), 0
        yield np.ones(4), 1
    ds = Dataset.from_generator(gen, output_signature=(TensorSpec((None,), "float64"), TensorSpec((), "int64")))
    with pytest.raises(ValueError, match=r"Dataset.batch: cannot batch elements of different shapes in component "
                                         r"\[0\]: in batch 0, the first element has shape \(3,\) and element 1 has "
                                         r"shape \(4,\).*padded_batch"):
        list(ds.batch(2))
    (xb, yb), = list(ds.padded_batch(2))
    assert xb.numpy().tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]] and yb.numpy().tolist() == [0, 1]
    (xb, _), = list(ds.padded_batch(2, padded_shapes=((6,), ()), padding_values=(-1.0, 0)))
    assert xb.shape == (2, 6) and xb.numpy()[0].tolist() == [1, 1, 1, -1, -1, -1]
    (xb, _), = list(ds.padded_batch(2, padding_values=7))      # one value pads every component
    assert xb.numpy()[0].tolist() == [1, 1, 1, 7]


def test_unbatch_undoes_batch():
    ds = Dataset.from_tensor_slices((np.arange(7), np.arange(7) * 2)).batch(3).unbatch()
    assert [(int(a), int(b)) for a, b in ds] == [(i, 2 * i) for i in range(7)]
    assert ds.element_spec == (TensorSpec((), "int64"), TensorSpec((), "int64"))


# ---------------------------------------------------------------------------
# map and filter: TensorFlow's calling convention
# ---------------------------------------------------------------------------
def test_map_unpacks_a_tuple_element_and_passes_a_dict_whole():
    seen = []

    def scale(x, y):
        seen.append((type(x), type(y)))
        return x / 2, [y, y + 1]                         # a list inside the result stays one array
    ds = Dataset.from_tensor_slices((np.array([2.0, 4.0]), np.array([1, 2]))).map(scale,
                                                                                  num_parallel_calls=AUTOTUNE)
    assert [(float(a), b.numpy().tolist()) for a, b in ds] == [(1.0, [1, 2]), (2.0, [2, 3])]
    assert seen[0] == (adv.Tensor, adv.Tensor)
    d = Dataset.from_tensor_slices({"a": np.array([1, 2]), "b": np.array([3, 4])}).map(lambda e: e["a"] + e["b"])
    assert values(d) == [4, 6]
    assert values(Dataset.range(2).map(lambda x: [x, x * 10])) == [(0, 0), (1, 10)]      # a list result: a tuple


def test_map_with_the_wrong_number_of_parameters_says_how_tensorflow_calls_it():
    ds = Dataset.from_tensor_slices((np.zeros((2, 3)), np.zeros(2)))
    with pytest.raises(TypeError, match=r"Dataset.map: the function cannot be called with the 2 parts of each "
                                        r"element.*lambda x, y: \.\.\."):
        list(ds.map(lambda pair: pair))


def test_map_inside_a_tape_records_nothing():
    w = adv.Variable(2.0)
    with adv.GradientTape(persistent=True) as tape:
        doubled = list(Dataset.range(3).map(lambda x: adv.cast(x, "float64") * 2.0))
        loss = w * 3.0
    assert [float(d) for d in doubled] == [0.0, 2.0, 4.0]
    assert float(tape.gradient(loss, w)) == 3.0
    assert tape.gradient(doubled[1], w) is None


def test_map_element_spec_runs_the_function_once_on_the_first_element():
    ds = Dataset.range(4).map(lambda x: (adv.cast(x, "float32"), x > 1))
    assert ds.element_spec == (TensorSpec((), "float32"), TensorSpec((), "bool"))


def test_filter_keeps_elements_and_refuses_a_non_scalar_predicate():
    assert values(Dataset.range(10).filter(lambda x: x % 3 == 0)) == [0, 3, 6, 9]
    assert int(Dataset.range(10).filter(lambda x: x > 2).cardinality()) == UNKNOWN_CARDINALITY
    ds = Dataset.from_tensor_slices(np.ones((2, 3))).filter(lambda x: x > 0)
    with pytest.raises(TypeError, match=r"predicate must return one boolean.*shape \(3,\)"):
        list(ds)


# ---------------------------------------------------------------------------
# take, skip, repeat, cache, concatenate, zip, enumerate, cardinality
# ---------------------------------------------------------------------------
def test_take_skip_repeat_and_their_cardinality():
    ds = Dataset.range(5)
    assert values(ds.take(2)) == [0, 1] and values(ds.skip(3)) == [3, 4] and values(ds.take(-1)) == list(range(5))
    assert values(ds.skip(-1)) == [] and len(ds.skip(-1)) == 0
    assert values(ds.repeat(2)) == [0, 1, 2, 3, 4] * 2 and len(ds.repeat(2)) == 10
    endless = ds.repeat()
    assert int(endless.cardinality()) == INFINITE_CARDINALITY and values(endless.take(7)) == [0, 1, 2, 3, 4, 0, 1]
    assert len(endless.take(7)) == 7
    with pytest.raises(TypeError, match="The dataset is infinite"):
        len(endless)
    assert bool(endless)
    with pytest.raises(ValueError, match=r"Dataset.take: count must be an integer ≥ 0, or -1"):
        ds.take(2.5)


def test_cache_reads_the_source_once_and_freezes_a_shuffle_before_it():
    calls = []

    def gen():
        calls.append(1)
        yield from range(4)
    ds = Dataset.from_generator(gen, output_signature=TensorSpec((), "int64")).cache()
    assert values(ds) == values(ds) == [0, 1, 2, 3] and len(calls) == 1
    frozen = Dataset.range(10).shuffle(10, seed=3).cache()
    assert values(frozen) == values(frozen)
    with pytest.raises(ValueError, match="caching to a file"):
        Dataset.range(3).cache("/tmp/cache")


def test_concatenate_zip_enumerate():
    a, b = Dataset.range(3), Dataset.range(10, 12)
    assert values(a.concatenate(b)) == [0, 1, 2, 10, 11] and len(a.concatenate(b)) == 5
    with pytest.raises(TypeError, match=r"concatenate: the two datasets must have elements of the same structure "
                                        r"and dtypes.*float64"):
        a.concatenate(Dataset.from_tensor_slices(np.zeros(2)))
    assert values(Dataset.zip((a, b))) == [(0, 10), (1, 11)] == values(Dataset.zip(a, b))
    assert len(Dataset.zip((a, b))) == 2
    z = Dataset.zip({"x": a, "y": b})
    assert [(int(e["x"]), int(e["y"])) for e in z] == [(0, 10), (1, 11)]
    assert values(b.enumerate(start=5)) == [(5, 10), (6, 11)]
    assert values(Dataset.zip(b)) == [10, 11]                # one dataset: its own elements, as TensorFlow


def test_len_of_an_unknown_cardinality_explains():
    with pytest.raises(TypeError, match="length is unknown.*cardinality"):
        len(Dataset.range(5).filter(lambda x: x > 1))


def test_reduce_shard_and_repr():
    assert int(Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)) == 10
    assert values(Dataset.range(10).shard(3, 1)) == [1, 4, 7] and len(Dataset.range(10).shard(3, 1)) == 3
    assert repr(Dataset.range(3).batch(2)) == "<BatchDataset element_spec=TensorSpec(shape=(None,), dtype=int64, " \
                                              "name=None)>"


# ---------------------------------------------------------------------------
# from_generator: signatures and their errors
# ---------------------------------------------------------------------------
def test_from_generator_checks_each_item_against_the_signature():
    def gen(n):
        for i in range(n):
            yield np.full(2, i), i
    sig = (TensorSpec(shape=(2,), dtype="float32"), TensorSpec(shape=(), dtype="int32"))
    ds = Dataset.from_generator(gen, output_signature=sig, args=(3,))
    out = list(ds)
    assert len(out) == 3 and out[2][0].dtype == np.float32 and out[2][1].dtype == np.int32
    assert int(ds.cardinality()) == UNKNOWN_CARDINALITY and ds.element_spec == sig
    assert len(list(ds)) == 3                            # the generator is called again for each iteration

    def wrong_shape():
        yield np.ones(3), 0
    with pytest.raises(ValueError, match=r"item 0 of the generator, component \[0\], has shape \(3,\), where the "
                                         r"signature says \(2,\).*None"):
        list(Dataset.from_generator(wrong_shape, output_signature=sig))

    def floats_for_ints():
        yield np.ones(2), 0.5
    with pytest.raises(TypeError, match=r"component \[1\], has dtype float64, which cannot become int32"):
        list(Dataset.from_generator(floats_for_ints, output_signature=sig))

    def one_part():
        yield np.ones(2)
    with pytest.raises(TypeError, match=r"item 0 of the generator is shape \(2,\), where the signature says \("):
        list(Dataset.from_generator(one_part, output_signature=sig))


def test_from_generator_argument_errors_and_the_older_output_types_form():
    def gen():
        yield [1.0, 2.0], 1
    with pytest.raises(TypeError, match=r"generator must be a callable.*Pass gen, not gen\(\)"):
        Dataset.from_generator(gen(), output_types=("float32", "int64"))
    with pytest.raises(TypeError, match="say what the generator yields, e.g. output_signature="):
        Dataset.from_generator(gen)
    with pytest.raises(TypeError, match="give output_signature alone"):
        Dataset.from_generator(gen, output_types="float32", output_signature=TensorSpec((), "float32"))
    loose = Dataset.from_generator(gen, output_types=("float32", "int64"))
    (x, y), = list(loose)
    assert x.dtype == np.float32 and x.numpy().tolist() == [1.0, 2.0] and int(y) == 1
    shaped = Dataset.from_generator(gen, output_types=("float32", "int64"), output_shapes=((2,), ()))
    assert shaped.element_spec == (TensorSpec((2,), "float32"), TensorSpec((), "int64"))


# ---------------------------------------------------------------------------
# fit / evaluate / predict on a Dataset (Keras 3)
# ---------------------------------------------------------------------------
RNG = np.random.default_rng(11)
X, Y, W = RNG.normal(size=(20, 3)), RNG.normal(size=(20, 1)), RNG.uniform(0.5, 2.0, size=20)


def make():
    adv.layers.set_random_seed(0)
    model = adv.Sequential([adv.layers.Input((3,)), adv.layers.Dense(4, activation="tanh", dtype="float64"),
                            adv.layers.Dense(1, dtype="float64")])
    model.compile(adv.optimizers.SGD(0.05), "mse", metrics=["mae"])
    return model


def same_weights(a, b):
    return all(np.allclose(p, q, rtol=1e-12, atol=1e-14) for p, q in zip(a.get_weights(), b.get_weights()))


def test_fit_on_a_dataset_trains_as_fit_on_the_arrays_and_reads_it_each_epoch():
    a, b = make(), make()
    ha = a.fit(X, Y, batch_size=6, epochs=3, shuffle=False, verbose=0, sample_weight=W)
    passes = []

    def gen():
        passes.append(1)
        yield from zip(X, Y, W)
    ds = Dataset.from_generator(gen, output_signature=(TensorSpec((3,), "float64"), TensorSpec((1,), "float64"),
                                                       TensorSpec((), "float64"))).batch(6)
    hb = b.fit(ds, epochs=3, verbose=0)
    assert len(passes) == 3                                   # a new pass over the dataset per epoch
    assert same_weights(a, b) and np.allclose(ha.history["loss"], hb.history["loss"])


def test_fit_on_a_shuffled_dataset_sees_a_new_order_each_epoch():
    order = []

    def record(x, y):
        order.append(float(x[0]))
        return x, y
    model = make()
    ds = Dataset.from_tensor_slices((X, Y)).shuffle(20, seed=2).map(record).batch(5)
    model.fit(ds, epochs=2, verbose=0)
    first, second = order[:20], order[20:]
    assert len(order) == 40 and sorted(first) == sorted(second) == sorted(X[:, 0].tolist())
    assert first != second


def test_steps_per_epoch_draws_from_one_iterator_across_epochs_and_repeat_feeds_it():
    model = make()
    steps = []

    class Count(adv.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            steps.append(0)

        def on_train_batch_end(self, batch, logs=None):
            steps[-1] += 1
    ds = Dataset.from_tensor_slices((X, Y)).batch(5)         # 4 batches
    model.fit(ds.repeat(), epochs=3, steps_per_epoch=3, verbose=0, callbacks=[Count()])
    assert steps == [3, 3, 3]
    steps.clear()
    with pytest.warns(UserWarning, match=r"ran out of data.*\.repeat\(\)"):
        model.fit(ds, epochs=3, steps_per_epoch=3, verbose=0, callbacks=[Count()])
    assert steps == [3, 1]                                   # 4 batches in all, then training stops


def test_fit_refuses_batch_size_and_y_with_a_dataset():
    model, ds = make(), Dataset.from_tensor_slices((X, Y)).batch(4)
    with pytest.raises(ValueError, match=r"fit: batch_size=8 cannot be given with a generator \(or Dataset\) of "
                                         r"batches.*dataset.batch\(32\)"):
        model.fit(ds, batch_size=8, verbose=0)
    with pytest.raises(ValueError, match=r"fit: y \(an array of shape \(20, 1\)\) cannot be given with a generator"):
        model.fit(ds, Y, verbose=0)
    with pytest.raises(ValueError, match="evaluate: batch_size=4 cannot be given"):
        model.evaluate(ds, batch_size=4, verbose=0)


def test_evaluate_predict_and_validation_data_take_datasets():
    model = make()
    ds = Dataset.from_tensor_slices((X, Y)).batch(7)
    want = model.evaluate(X, Y, batch_size=7, verbose=0)
    assert np.allclose(model.evaluate(ds, verbose=0), want)
    assert np.allclose(model.predict(Dataset.from_tensor_slices(X).batch(7)), model.predict(X, batch_size=7))
    assert np.allclose(model.predict(ds), model.predict(X))           # (x, y) batches: x is used
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        history = model.fit(ds, epochs=3, validation_data=ds, verbose=0)
    assert len(history.history["val_loss"]) == 3             # the validation dataset is read again each epoch
    assert np.isclose(history.history["val_loss"][-1], model.evaluate(X, Y, verbose=0)[0])


def test_fit_warns_when_the_dataset_was_never_batched():
    model = make()
    unbatched = Dataset.from_tensor_slices((X, Y)).shuffle(20, seed=0)
    with pytest.warns(UserWarning, match=r"fit: the Dataset gives one sample per element \(it was never batched\)"
                                         r".*Add \.batch\(32\)"):
        with pytest.raises(ValueError):          # each (3,)-sample is then read as a batch of 3 against 1 target
            model.fit(unbatched, verbose=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # batched (even after unbatch().batch()): no warning
        model.fit(unbatched.batch(5).unbatch().batch(4), verbose=0)


def test_iterators_and_options_are_tensorflows():
    """``iter(ds)`` is a ``tf.data.Iterator`` (``next``, ``get_next``, ``element_spec``), ``as_numpy_iterator()``
    a ``tf.data.NumpyIterator``; ``tf.data.Options`` set by attribute ride along ``with_options`` and later
    transformations, and are read back as TensorFlow's are (issue 43)."""
    tf = pytest.importorskip("tensorflow")
    ours, theirs = adv.data.Dataset.range(5).batch(2), tf.data.Dataset.range(5).batch(2)
    it, tit = iter(ours), iter(theirs)
    assert isinstance(it, adv.data.Iterator) and isinstance(tit, tf.data.Iterator)
    np.testing.assert_array_equal(next(it).numpy(), next(tit).numpy())
    np.testing.assert_array_equal(it.get_next().numpy(), tit.get_next().numpy())
    assert it.element_spec.shape == tuple(tit.element_spec.shape)
    assert isinstance(ours.as_numpy_iterator(), adv.data.NumpyIterator)
    for options_type, ds in ((adv.data.Options, ours), (tf.data.Options, theirs)):
        o = options_type()
        o.deterministic = False
        o.threading.private_threadpool_size = 2
        later = ds.with_options(o).map(lambda x: x * 2)
        assert later.options().deterministic is False and later.options().threading.private_threadpool_size == 2
    assert [list(b) for b in ours.with_options(adv.data.Options()).as_numpy_iterator()] == \
        [list(b) for b in theirs.as_numpy_iterator()]
    with pytest.raises(TypeError, match="with_options: expected a tf.data.Options, got dict"):
        ours.with_options({"deterministic": False})
