"""tf.data against TensorFlow 2.21: the same pipeline built with each library gives the same elements (values,
dtypes, shapes, structure), the same element_spec and the same cardinality; bad input raises the exception
class TensorFlow raises, with a message naming the transformation."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors


def plain(value):
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    array = np.asarray(value)
    return (array.dtype.name, array.shape, np.round(array, 5).tolist() if array.dtype.kind == "f" else
            array.tolist())


def elements(lib, build):
    return [plain(e) for e in build(lib).as_numpy_iterator()]


def same_pipeline(build):
    ours, theirs = build(tf), build(real_tf)
    assert repr(ours.element_spec) == repr(theirs.element_spec)
    assert int(ours.cardinality()) == int(theirs.cardinality())
    assert elements(tf, build) == elements(real_tf, build)


X = np.arange(24, dtype=np.float32).reshape(12, 2)
Y = np.arange(12, dtype=np.int32)

PIPELINES = {
    "slices": lambda t: t.data.Dataset.from_tensor_slices(X),
    "slices_tuple": lambda t: t.data.Dataset.from_tensor_slices((X, Y)),
    "slices_dict": lambda t: t.data.Dataset.from_tensor_slices({"x": X, "y": Y}),
    "slices_nested": lambda t: t.data.Dataset.from_tensor_slices((X, {"b": Y, "a": (Y, X)})),
    "slices_list": lambda t: t.data.Dataset.from_tensor_slices([[1, 2], [3, 4]]),
    "tensors": lambda t: t.data.Dataset.from_tensors(({"a": X}, Y)),
    "range": lambda t: t.data.Dataset.range(7),
    "range_args": lambda t: t.data.Dataset.range(10, 2, -3),
    "range_dtype": lambda t: t.data.Dataset.range(4, output_type=t.int32),
    "map": lambda t: t.data.Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (x * 2.0, y + 1)),
    "map_dict": lambda t: t.data.Dataset.from_tensor_slices({"x": X}).map(lambda d: {"s": t.reduce_sum(d["x"])}),
    "map_parallel": lambda t: t.data.Dataset.range(100).map(lambda v: v * v, num_parallel_calls=4),
    "map_autotune": lambda t: t.data.Dataset.from_tensor_slices(X).map(
        lambda x: t.nn.relu(x - 5.0), num_parallel_calls=t.data.AUTOTUNE).batch(5),
    "map_scalar_constant": lambda t: t.data.Dataset.range(3).map(lambda v: 7),
    "filter": lambda t: t.data.Dataset.range(20).filter(lambda v: v % 3 == 0),
    "batch": lambda t: t.data.Dataset.from_tensor_slices((X, Y)).batch(5),
    "batch_drop": lambda t: t.data.Dataset.from_tensor_slices((X, Y)).batch(5, drop_remainder=True),
    "batch_batch": lambda t: t.data.Dataset.range(10).batch(2).batch(2),
    "unbatch": lambda t: t.data.Dataset.from_tensor_slices(X).batch(5).unbatch(),
    "padded_batch": lambda t: t.data.Dataset.range(6).map(lambda v: t.fill([v], v)).padded_batch(4),
    "padded_batch_shapes": lambda t: t.data.Dataset.range(5).map(lambda v: (t.fill([v], v), v)).padded_batch(
        2, padded_shapes=([6], []), padding_values=(t.constant(-1, t.int64), t.constant(0, t.int64)),
        drop_remainder=True),
    "padded_batch_2d": lambda t: t.data.Dataset.range(1, 4).map(lambda v: t.ones([v, 4 - v])).padded_batch(2),
    "repeat": lambda t: t.data.Dataset.range(3).repeat(3),
    "take": lambda t: t.data.Dataset.range(10).take(4),
    "take_all": lambda t: t.data.Dataset.range(3).take(-1),
    "skip": lambda t: t.data.Dataset.range(10).skip(7),
    "skip_too_many": lambda t: t.data.Dataset.range(3).skip(5),
    "repeat_take": lambda t: t.data.Dataset.range(3).repeat().take(8),
    "prefetch": lambda t: t.data.Dataset.from_tensor_slices(X).map(lambda x: x + 1.0).batch(4).prefetch(2),
    "prefetch_autotune": lambda t: t.data.Dataset.range(9).prefetch(t.data.AUTOTUNE),
    "cache": lambda t: t.data.Dataset.range(5).map(lambda v: v * 3).cache().repeat(2),
    "interleave": lambda t: t.data.Dataset.range(1, 5).interleave(
        lambda v: t.data.Dataset.from_tensors(v).repeat(v), cycle_length=2, block_length=1),
    "interleave_block": lambda t: t.data.Dataset.range(1, 6).interleave(
        lambda v: t.data.Dataset.range(v * 10, v * 10 + v), cycle_length=3, block_length=2),
    "flat_map": lambda t: t.data.Dataset.range(4).flat_map(lambda v: t.data.Dataset.range(v)),
    "enumerate": lambda t: t.data.Dataset.from_tensor_slices(Y[:4]).enumerate(start=3),
    "zip": lambda t: t.data.Dataset.zip((t.data.Dataset.range(5), t.data.Dataset.from_tensor_slices(X))),
    "zip_dict": lambda t: t.data.Dataset.zip({"a": t.data.Dataset.range(3), "b": t.data.Dataset.range(9)}),
    "concatenate": lambda t: t.data.Dataset.range(3).concatenate(t.data.Dataset.range(10, 12)),
    "concatenate_shapes": lambda t: t.data.Dataset.range(5).batch(2).concatenate(
        t.data.Dataset.range(5).batch(3, drop_remainder=True)),
    "generator": lambda t: t.data.Dataset.from_generator(
        lambda: iter([(1, [1.0, 2.0]), (2, [3.0, 4.0])]),
        output_signature=(t.TensorSpec([], t.int32), t.TensorSpec([2], t.float32))),
    "generator_args": lambda t: t.data.Dataset.from_generator(
        lambda n: iter(range(int(n))), output_signature=t.TensorSpec([], t.int64), args=(4,)),
    "apply": lambda t: t.data.Dataset.range(6).apply(lambda d: d.filter(lambda v: v > 2)),
    "infinite": lambda t: t.data.Dataset.range(4).repeat().batch(3).take(5),
    "shuffle": lambda t: t.data.Dataset.range(50).shuffle(10, seed=7),
    "shuffle_big_buffer": lambda t: t.data.Dataset.range(6).shuffle(100, seed=5),
    "shuffle_all": lambda t: t.data.Dataset.range(30).shuffle(t.data.UNKNOWN_CARDINALITY, seed=9),
    "shuffle_repeat": lambda t: t.data.Dataset.range(7).shuffle(4, seed=3).repeat(3),
    "shuffle_fixed_repeat": lambda t: t.data.Dataset.range(7).shuffle(
        4, seed=3, reshuffle_each_iteration=False).repeat(3),
    "shuffle_batch": lambda t: t.data.Dataset.from_tensor_slices((X, Y)).shuffle(8, seed=11).batch(3),
    "unknown_card": lambda t: t.data.Dataset.range(10).filter(lambda v: v < 4).repeat(2),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_matches_tensorflow(name):
    same_pipeline(PIPELINES[name])


CARDINALITIES = {
    "infinite": lambda t: t.data.Dataset.range(3).repeat(),
    "infinite_take": lambda t: t.data.Dataset.range(3).repeat().take(10),
    "infinite_skip": lambda t: t.data.Dataset.range(3).repeat().skip(10),
    "unknown_filter": lambda t: t.data.Dataset.range(3).filter(lambda v: True),
    "unknown_repeat": lambda t: t.data.Dataset.range(3).filter(lambda v: True).repeat(),
    "batch": lambda t: t.data.Dataset.range(10).batch(3),
    "batch_drop": lambda t: t.data.Dataset.range(10).batch(3, drop_remainder=True),
    "zip_min": lambda t: t.data.Dataset.zip((t.data.Dataset.range(3), t.data.Dataset.range(3).repeat())),
    "concat_infinite": lambda t: t.data.Dataset.range(3).concatenate(t.data.Dataset.range(3).repeat()),
    "repeat_zero": lambda t: t.data.Dataset.range(3).repeat(0),
    "skip_all": lambda t: t.data.Dataset.range(3).skip(-1),
    "generator": lambda t: t.data.Dataset.from_generator(lambda: iter([1]),
                                                         output_signature=t.TensorSpec([], t.int32)),
}


@pytest.mark.parametrize("name", sorted(CARDINALITIES))
def test_cardinality_matches_tensorflow(name):
    build = CARDINALITIES[name]
    assert int(build(tf).cardinality()) == int(build(real_tf).cardinality())


def test_cardinality_constants_are_tensorflows():
    assert tf.data.INFINITE_CARDINALITY == real_tf.data.INFINITE_CARDINALITY
    assert tf.data.UNKNOWN_CARDINALITY == real_tf.data.UNKNOWN_CARDINALITY
    assert tf.data.experimental.INFINITE_CARDINALITY == real_tf.data.experimental.INFINITE_CARDINALITY
    assert tf.data.AUTOTUNE == real_tf.data.AUTOTUNE
    assert tf.data.Dataset.range(3).cardinality().dtype == tf.int64


def test_len():
    assert len(tf.data.Dataset.range(7).batch(2)) == 4
    with pytest.raises(TypeError, match="infinite"):
        len(tf.data.Dataset.range(7).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(tf.data.Dataset.range(7).filter(lambda v: True))


def test_repr_is_tensorflows():
    for build in (PIPELINES["range"], PIPELINES["map"], PIPELINES["batch"], PIPELINES["zip"]):
        assert repr(build(tf)) == repr(build(real_tf))


# ---- iteration ----------------------------------------------------------------------------------------

def test_iterator_ends_with_stop_iteration_and_get_next_with_out_of_range():
    it = iter(tf.data.Dataset.range(2))
    assert int(next(it)) == 0
    assert int(it.get_next()) == 1
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(errors.OutOfRangeError):
        iter(tf.data.Dataset.range(0)).get_next()


def test_elements_are_ember_tensors_in_the_element_structure():
    x, d = next(iter(tf.data.Dataset.from_tensor_slices((X, {"y": Y}))))
    assert isinstance(x, tf.Tensor) and isinstance(d["y"], tf.Tensor)
    assert x.dtype == tf.float32 and x.shape == (2,)


def test_a_dataset_iterates_again_from_the_start():
    ds = tf.data.Dataset.range(4).map(lambda v: v + 1, num_parallel_calls=2).batch(3).prefetch(1)
    first = [e.tolist() for e in ds.as_numpy_iterator()]
    assert first == [e.tolist() for e in ds.as_numpy_iterator()] == [[1, 2, 3], [4]]


def test_the_map_function_is_traced_once():
    traces = []

    def f(v):
        traces.append(1)
        return v * 2

    ds = tf.data.Dataset.range(50).map(f, num_parallel_calls=tf.data.AUTOTUNE)
    assert sum(int(v) for v in ds) == 2 * sum(range(50))
    assert sum(int(v) for v in ds) == 2 * sum(range(50))
    assert len(traces) == 1


def test_map_reads_variables_when_it_runs():
    v = tf.Variable(1.0)
    ds = tf.data.Dataset.from_tensor_slices([1.0, 2.0]).map(lambda x: x * v, num_parallel_calls=2)
    assert [float(e) for e in ds] == [1.0, 2.0]
    v.assign(10.0)
    assert [float(e) for e in ds] == [10.0, 20.0]


def test_map_returning_a_list_gives_a_tuple_with_a_warning():
    with pytest.warns(UserWarning, match="list"):
        ds = tf.data.Dataset.range(2).map(lambda v: [v, v + 1])
    assert isinstance(ds.element_spec, tuple)


def test_shuffle_order_is_tensorflows_epoch_after_epoch():
    # Note [Shuffle order]: the same seeds give TensorFlow's order, and each new iterator of the same dataset
    # reshuffles as TensorFlow's does (or not, with reshuffle_each_iteration=False).
    for reshuffle in (True, False):
        ours = tf.data.Dataset.range(40).shuffle(6, seed=1234, reshuffle_each_iteration=reshuffle)
        theirs = real_tf.data.Dataset.range(40).shuffle(6, seed=1234, reshuffle_each_iteration=reshuffle)
        epochs = [[int(v) for v in ours] for _ in range(3)]
        assert epochs == [[int(v) for v in theirs] for _ in range(3)]
        assert sorted(epochs[0]) == list(range(40)) and epochs[0] != list(range(40))
        assert (epochs[0] != epochs[1]) == reshuffle


def test_shuffle_with_the_global_seed_is_tensorflows():
    orders = []
    for lib in (tf, real_tf):
        lib.random.set_seed(5)
        orders.append([[int(v) for v in lib.data.Dataset.range(10).shuffle(4)] for _ in range(2)])
        lib.random.set_seed(None)
    assert orders[0] == orders[1]


def test_unseeded_shuffles_differ():
    a = [int(v) for v in tf.data.Dataset.range(100).shuffle(100)]
    b = [int(v) for v in tf.data.Dataset.range(100).shuffle(100)]
    assert sorted(a) == sorted(b) == list(range(100)) and a != b


def test_cache_in_a_file(tmp_path):
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)

    path = str(tmp_path / "cache")
    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64)).cache(path)
    assert [int(v) for v in ds] == [0, 1, 2]
    assert [int(v) for v in ds] == [0, 1, 2]
    again = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64)).cache(path)
    assert [int(v) for v in again] == [0, 1, 2]
    assert len(calls) == 1


def test_options_are_kept():
    options = tf.data.Options()
    options.deterministic = True
    ds = tf.data.Dataset.range(3).with_options(options)
    assert ds.options().deterministic is True
    assert [int(v) for v in ds] == [0, 1, 2]


def test_reduce_matches_tensorflow():
    for lib in (tf, real_tf):
        r = lib.data.Dataset.range(5).reduce(lib.constant(0, lib.int64), lambda s, v: s + v)
        assert int(r) == 10
    ours = tf.data.Dataset.from_tensor_slices(X).reduce((tf.constant(0.0), tf.constant(0)),
                                                         lambda s, x: (s[0] + tf.reduce_sum(x), s[1] + 1))
    assert float(ours[0]) == float(X.sum()) and int(ours[1]) == 12


# ---- bad input ----------------------------------------------------------------------------------------

def raises_like_tensorflow(build, match, ours=None):
    """The same exception class as TensorFlow's (by name: the classes are each library's own), or ``ours``
    where ember differs on purpose."""
    with pytest.raises(Exception) as theirs:
        list(build(real_tf))
    with pytest.raises(Exception, match=match) as got:
        list(build(tf))
    assert type(got.value).__name__ == (ours or type(theirs.value).__name__)


def test_mismatched_first_dimensions():
    raises_like_tensorflow(lambda t: t.data.Dataset.from_tensor_slices(([1, 2, 3], [1, 2])),
                           "from_tensor_slices.*3 and 2")


def test_slicing_a_scalar():
    raises_like_tensorflow(lambda t: t.data.Dataset.from_tensor_slices(5), "from_tensor_slices.*rank >= 1")


def test_map_returning_a_non_tensor():
    raises_like_tensorflow(lambda t: t.data.Dataset.range(3).map(lambda v: object()),
                           r"Dataset.map\(\).*object")


def test_map_with_the_wrong_arity():
    raises_like_tensorflow(lambda t: t.data.Dataset.range(3).map(lambda a, b: a), "argument")


def test_filter_returning_a_non_bool():
    raises_like_tensorflow(lambda t: t.data.Dataset.range(3).filter(lambda v: v),
                           r"filter.*tf.bool.*scalar.*int64")


def test_concatenate_of_incompatible_datasets():
    raises_like_tensorflow(lambda t: t.data.Dataset.range(3).concatenate(
        t.data.Dataset.from_tensor_slices([1.0])), "concatenate.*Incompatible")


def test_batch_of_differing_shapes():
    raises_like_tensorflow(lambda t: t.data.Dataset.range(1, 3).map(lambda v: t.fill([v], v)).batch(2),
                           "batch.*shape")


def test_batch_size_zero():
    raises_like_tensorflow(lambda t: t.data.Dataset.range(3).batch(0), "batch.*greater than zero")


def test_shuffle_buffer_zero():
    raises_like_tensorflow(lambda t: t.data.Dataset.range(3).shuffle(0), "shuffle.*buffer_size")


def test_generator_yielding_the_wrong_type():
    raises_like_tensorflow(lambda t: t.data.Dataset.from_generator(
        lambda: iter([1, "x"]), output_signature=t.TensorSpec([], t.int32)), "expected type was int32")


def test_generator_yielding_the_wrong_shape():
    raises_like_tensorflow(lambda t: t.data.Dataset.from_generator(
        lambda: iter([[1], [2, 3]]), output_signature=t.TensorSpec([1], t.int32)), r"shape \(2,\)")


def test_reduce_with_a_state_of_another_dtype():
    # TensorFlow's graph-mode TypeError is ember's InvalidArgumentError for every op traced with mismatched
    # dtypes (architecture.md, issue 2).
    raises_like_tensorflow(lambda t: [t.data.Dataset.range(3).reduce(0, lambda s, v: s + v)], "int",
                           ours="InvalidArgumentError")


def test_an_error_in_a_parallel_map_fails_that_element_and_names_the_map():
    def positive(x):
        tf.debugging.Assert(x > 0, [x])
        return x

    ds = tf.data.Dataset.from_tensor_slices([1.0, -1.0, 2.0]).map(positive, num_parallel_calls=2)
    it = iter(ds)
    assert float(next(it)) == 1.0
    with pytest.raises(errors.InvalidArgumentError, match=r"Dataset.map\(positive\).*assertion failed"):
        next(it)
    assert float(next(it)) == 2.0  # the error failed only its element, as TensorFlow's iterators


def test_map_errors_name_the_map_and_the_users_line():
    def bad(x):
        return tf.reshape(x, [tf.shape(x)[0] + 1])

    ds = tf.data.Dataset.from_generator(lambda: iter([[1.0, 2.0]]), output_signature=tf.TensorSpec([None])).map(
        bad, num_parallel_calls=2)
    with pytest.raises(errors.InvalidArgumentError, match=r"Dataset.map\(bad\).*Reshape"):
        list(ds)


def test_bad_arguments():
    with pytest.raises(TypeError, match="map_func"):
        tf.data.Dataset.range(3).map(5)
    with pytest.raises(TypeError, match="Dataset"):
        tf.data.Dataset.range(3).concatenate([1, 2])
    with pytest.raises(TypeError, match="apply"):
        tf.data.Dataset.range(3).apply(lambda d: 5)
    with pytest.raises(errors.InvalidArgumentError, match="num_parallel_calls"):
        tf.data.Dataset.range(3).map(lambda v: v, num_parallel_calls=0)
    with pytest.raises(TypeError, match="zip"):
        tf.data.Dataset.zip((tf.data.Dataset.range(3), 5))
    with pytest.raises(TypeError, match="string"):
        tf.data.Dataset.from_tensor_slices(["a", "b"])


def test_a_batched_dataset_is_what_keras_fit_reads():
    # keras' data adapter (keras-core) takes any iterable of (x, y) batches and len() for the steps when the
    # dataset is finite (TypeError otherwise): fit(ds) over this dataset was checked with that branch.
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(12, seed=1).batch(5).prefetch(2)
    assert len(ds) == 3
    batches = list(ds)
    assert [tuple(b.shape[0] for b in batch) for batch in batches] == [(5, 5), (5, 5), (2, 2)]
    assert all(isinstance(batch, tuple) and len(batch) == 2 for batch in batches)
    with pytest.raises(TypeError):
        len(ds.repeat())


def test_map_captures_eager_tensors_and_accepts_deterministic():
    c = tf.constant([10.0, 20.0])
    ds = tf.data.Dataset.from_tensor_slices(X[:3]).map(lambda x: x + c, num_parallel_calls=3, deterministic=False)
    assert np.array_equal(np.stack(list(ds.as_numpy_iterator())), X[:3] + [10.0, 20.0])


def test_get_next_as_optional():
    it = iter(tf.data.Dataset.range(1))
    first = it.get_next_as_optional()
    assert bool(first.has_value()) and int(first.get_value()) == 0
    end = it.get_next_as_optional()
    assert not bool(end.has_value())
    with pytest.raises(errors.InvalidArgumentError):
        end.get_value()
