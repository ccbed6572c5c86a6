"""Dataset.window and Dataset.ragged_batch (python/ember/data/windowing.py) against TensorFlow 2.21, element for
element: window sizes, shifts, strides, drop_remainder, structured elements, flat_map over the windows,
cardinality; ragged batches of ragged rank 1 and 2 with dense components beside them."""

import numpy as np
import pytest
import tensorflow

import ember


def _window_values(dataset):
    """Each window as the nested structure of the lists of its datasets' values."""
    def values(window):
        if isinstance(window, dict):
            return {k: values(v) for k, v in window.items()}
        if isinstance(window, tuple):
            return tuple(values(v) for v in window)
        return [np.asarray(v).tolist() for v in window.as_numpy_iterator()]

    return [values(w) for w in dataset]


WINDOWS = [
    dict(size=3),
    dict(size=3, shift=2, stride=2),
    dict(size=3, shift=1),
    dict(size=2, shift=5),  # a shift longer than the window skips elements
    dict(size=3, shift=2, drop_remainder=True),
    dict(size=4, stride=3, shift=1, drop_remainder=True),
    dict(size=20),  # longer than the input: one partial window
    dict(size=20, drop_remainder=True),
]


@pytest.mark.parametrize("kwargs", WINDOWS, ids=[str(i) for i in range(len(WINDOWS))])
def test_window_matches_tensorflow(kwargs):
    got = ember.data.Dataset.range(11).window(**kwargs)
    want = tensorflow.data.Dataset.range(11).window(**kwargs)
    assert _window_values(got) == _window_values(want)
    assert int(got.cardinality().numpy()) == int(want.cardinality().numpy())
    assert repr(got.element_spec) == repr(want.element_spec)
    assert _window_values(got.prefetch(ember.data.AUTOTUNE)) == _window_values(want)


def test_window_of_structured_elements_and_flat_map_match_tensorflow():
    def pipeline(tf):
        x = np.arange(10, dtype=np.float32).reshape(5, 2)
        return tf.data.Dataset.from_tensor_slices(({"a": np.arange(5), "b": x}, np.arange(5) * 10))

    got, want = pipeline(ember).window(2, 1), pipeline(tensorflow).window(2, 1)
    assert _window_values(got) == _window_values(want)
    assert isinstance(got.element_spec[0]["b"], ember.data.DatasetSpec)
    assert got.element_spec[0]["b"].element_spec == ember.TensorSpec([2], ember.float32)

    def flat(tf):
        return tf.data.Dataset.range(8).window(3, 2, drop_remainder=True).flat_map(lambda w: w.batch(3))

    assert [a.tolist() for a in flat(ember).as_numpy_iterator()] == \
        [a.tolist() for a in flat(tensorflow).as_numpy_iterator()]

    def zipped(tf):
        return pipeline(tf).window(3, 2).flat_map(lambda d, y: tf.data.Dataset.zip((d["b"].batch(3), y.batch(3))))

    for (gb, gy), (wb, wy) in zip(zipped(ember).as_numpy_iterator(), zipped(tensorflow).as_numpy_iterator(),
                                  strict=True):
        np.testing.assert_array_equal(gb, wb)
        np.testing.assert_array_equal(gy, wy)


def test_window_of_an_infinite_dataset_is_lazy_and_infinite():
    got = ember.data.Dataset.range(5).repeat().window(3, 2)
    assert int(got.cardinality().numpy()) == int(tensorflow.data.Dataset.range(5).repeat().window(3, 2)
                                                  .cardinality().numpy())
    assert _window_values(got.take(4)) == _window_values(tensorflow.data.Dataset.range(5).repeat().window(3, 2)
                                                         .take(4))


def test_transformations_that_need_tensors_refuse_windows_and_ragged_batches_clearly():
    windows = ember.data.Dataset.range(5).window(2)
    for make in (lambda: windows.map(lambda w: w), lambda: windows.batch(2)):
        with pytest.raises(TypeError, match="flat_map over the windows first"):
            make()
    ragged = ember.data.Dataset.range(1, 5).map(lambda n: ember.range(n)).ragged_batch(2)
    with pytest.raises(ember.errors.InvalidArgumentError, match="got an element holding RaggedTensor"):
        list(ragged.map(lambda r: r))


def test_window_bad_arguments_raise():
    for kwargs in (dict(size=0), dict(size=2, shift=0), dict(size=2, stride=-1)):
        with pytest.raises(ember.errors.InvalidArgumentError, match="greater than zero"):
            ember.data.Dataset.range(3).window(**kwargs)


def _ragged_pipelines(tf):
    return {
        "vectors": tf.data.Dataset.range(1, 7).map(lambda n: tf.range(n)),
        "rows_of_two": tf.data.Dataset.range(6).map(lambda i: tf.fill([i % 3 + 1, 2], i)),
        "matrices": tf.data.Dataset.range(5).map(lambda n: tf.ones([n, n + 1])),
        "mixed": tf.data.Dataset.range(6).map(lambda i: (tf.fill([i % 3 + 1, 2], i), i, tf.ones([2]))),
        "dense_only": tf.data.Dataset.range(5).map(lambda i: tf.fill([3], i)),
    }


def _values(value):
    if isinstance(value, tuple):
        return tuple(_values(v) for v in value)
    if hasattr(value, "to_list"):
        return ("ragged", value.ragged_rank, value.to_list())
    return ("dense", np.asarray(value).tolist())


def _spec(spec):
    if isinstance(spec, tuple):
        return tuple(_spec(s) for s in spec)
    return (type(spec).__name__, spec.shape.as_list(), spec.dtype.name, getattr(spec, "ragged_rank", None))


@pytest.mark.parametrize("name", sorted(_ragged_pipelines(tensorflow)))
@pytest.mark.parametrize("drop_remainder", [False, True])
def test_ragged_batch_matches_tensorflow(name, drop_remainder):
    got = _ragged_pipelines(ember)[name].ragged_batch(4, drop_remainder=drop_remainder)
    want = _ragged_pipelines(tensorflow)[name].ragged_batch(4, drop_remainder=drop_remainder)
    assert _spec(got.element_spec) == _spec(want.element_spec)
    assert [_values(v) for v in got] == [_values(v) for v in want]
    assert int(got.cardinality().numpy()) == int(want.cardinality().numpy())
    assert [_values(v) for v in got.prefetch(2)] == [_values(v) for v in want]  # prefetch keeps them in Python


def test_ragged_batch_row_splits_dtype_and_bad_arguments():
    got = ember.data.Dataset.range(1, 4).map(lambda n: ember.range(n)).ragged_batch(2, row_splits_dtype=ember.int32)
    want = tensorflow.data.Dataset.range(1, 4).map(lambda n: tensorflow.range(n)).ragged_batch(
        2, row_splits_dtype=tensorflow.int32)
    assert got.element_spec.row_splits_dtype.name == want.element_spec.row_splits_dtype.name == "int32"
    first = next(iter(got))
    assert first.row_splits.dtype == ember.int32 and first.to_list() == next(iter(want)).to_list()
    with pytest.raises(ember.errors.InvalidArgumentError, match="batch_size must be greater than zero"):
        ember.data.Dataset.range(3).ragged_batch(0)


def test_experimental_dense_to_ragged_batch_is_ragged_batch():
    def pipeline(tf):
        return tf.data.Dataset.range(1, 6).map(lambda n: tf.range(n)).apply(
            tf.data.experimental.dense_to_ragged_batch(2))

    assert [v.to_list() for v in pipeline(ember)] == [v.to_list() for v in pipeline(tensorflow)]
