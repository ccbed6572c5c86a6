"""The tf.data transformations of python/ember/data/transformations.py against TensorFlow 2.21: shard,
take_while, scan, unique, get_single_element, counter, choose_from_datasets, group_by_window,
bucket_by_sequence_length, list_files, sample_from_datasets; and padded_batch of strings."""
import os

import numpy as np
import pytest
import tensorflow

import ember


def _lists(dataset):
    return [a.tolist() if isinstance(a, np.ndarray) else a for a in dataset.as_numpy_iterator()]


def _sequences(tf):
    return tf.data.Dataset.from_generator(lambda: ([1] * n for n in [1, 5, 2, 7, 3, 8, 1, 2]),
                                          output_signature=tf.TensorSpec([None], tf.int32))


def _choices(tf, indices):
    return tf.data.Dataset.from_tensor_slices(tf.constant(indices, tf.int64))


def _three(tf):
    return [tf.data.Dataset.from_tensors(tf.constant(i, tf.int64)).repeat(3) for i in range(3)]


CASES = {
    "shard": lambda tf: tf.data.Dataset.range(10).shard(3, 1),
    "shard_last": lambda tf: tf.data.Dataset.range(10).shard(3, 2),
    "take_while": lambda tf: tf.data.Dataset.range(10).take_while(lambda x: x < 4),
    "take_while_none": lambda tf: tf.data.Dataset.range(10).take_while(lambda x: x > 4),
    "scan": lambda tf: tf.data.Dataset.range(6).scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s * 2)),
    "scan_structure": lambda tf: tf.data.Dataset.range(4).scan(
        (tf.constant(1, tf.int64), tf.constant(0.5)), lambda s, x: ((s[0] * 2, s[1] + 1.0), {"a": s[0] + x})),
    "scan_growing_state": lambda tf: tf.data.Dataset.range(3).scan(
        tf.zeros([0], tf.int64), lambda s, x: (tf.concat([s, [x]], 0), tf.reduce_sum(s))),
    "unique": lambda tf: tf.data.Dataset.from_tensor_slices([1, 2, 1, 3, 2]).unique(),
    "unique_strings": lambda tf: tf.data.Dataset.from_tensor_slices(["a", "b", "a", ""]).unique(),
    "counter": lambda tf: tf.data.Dataset.counter(3, 2).take(4),
    "choose": lambda tf: tf.data.Dataset.choose_from_datasets(_three(tf), _choices(tf, [0, 1, 2, 0, 2, 1, 0, 0])),
    "choose_not_stopping": lambda tf: tf.data.Dataset.choose_from_datasets(
        _three(tf), _choices(tf, [0, 0, 0, 0, 1, 0]), stop_on_empty_dataset=False),
    "group_by_window": lambda tf: tf.data.Dataset.range(10).group_by_window(
        lambda x: x % 3, lambda key, window: window.batch(2), 2),
    "group_by_window_key": lambda tf: tf.data.Dataset.range(7).group_by_window(
        lambda x: x % 2, lambda key, window: window.map(lambda x: x * 10 + key), 3),
    "bucket": lambda tf: _sequences(tf).bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3, 6], [2, 2, 2]),
    "bucket_sizes": lambda tf: _sequences(tf).bucket_by_sequence_length(
        lambda x: tf.shape(x)[0], [3, 9], [2, 3, 1], pad_to_bucket_boundary=True),
    "bucket_drop": lambda tf: _sequences(tf).bucket_by_sequence_length(
        lambda x: tf.shape(x)[0], [4], [2, 2], drop_remainder=True, padding_values=7),
    "bucket_no_padding": lambda tf: tf.data.Dataset.range(9).map(lambda x: tf.fill([3], x)).bucket_by_sequence_length(
        lambda x: tf.cast(x[0], tf.int32), [4], [2, 3], no_padding=True),
    "padded_batch_strings": lambda tf: tf.data.Dataset.from_tensor_slices(["x", "yy", "zzz"]).padded_batch(2),
    "padded_batch_string_vectors": lambda tf: tf.data.Dataset.from_generator(
        lambda: iter([[b"a"], [b"bb", b"c"]]), output_signature=tf.TensorSpec([None], tf.string)).padded_batch(2),
    "experimental_apply": lambda tf: tf.data.Dataset.range(5).apply(
        tf.data.experimental.scan(tf.constant(0, tf.int64), lambda s, x: (s + 1, s + x))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_tensorflow(case):
    ours, theirs = CASES[case](ember), CASES[case](tensorflow)
    assert str(_lists(ours)) == str(_lists(theirs))
    assert int(ours.cardinality()) == int(theirs.cardinality()) or int(theirs.cardinality()) < 0


def test_get_single_element_as_tensorflow():
    for tf in (ember, tensorflow):
        assert int(tf.data.Dataset.range(5, 6).get_single_element()) == 5
        assert tf.data.experimental.get_single_element(tf.data.Dataset.from_tensors({"a": [1, 2]}))["a"] \
            .numpy().tolist() == [1, 2]
        with pytest.raises(tf.errors.InvalidArgumentError, match="empty"):
            tf.data.Dataset.range(0).get_single_element()
        with pytest.raises(tf.errors.InvalidArgumentError, match="more than one"):
            tf.data.Dataset.range(2).get_single_element()


def test_bad_arguments_raise_clear_errors():
    r = ember.data.Dataset.range(4)
    with pytest.raises(ember.errors.InvalidArgumentError, match="num_shards must be > 0"):
        r.shard(0, 0)
    with pytest.raises(ember.errors.InvalidArgumentError, match=r"index must be in \[0, num_shards\)"):
        r.shard(2, 2)
    with pytest.raises(ValueError, match="must return a scalar tf.bool"):
        r.take_while(lambda x: x)
    with pytest.raises(TypeError, match="must return a pair"):
        r.scan(ember.constant(0, ember.int64), lambda s, x: s)
    with pytest.raises(TypeError, match="new state must match the initial state"):
        r.scan(ember.constant(0, ember.int64), lambda s, x: (ember.cast(s, ember.float32), x))
    with pytest.raises(TypeError, match="must be int32, int64 or string"):
        ember.data.Dataset.from_tensor_slices([1.0, 2.0]).unique()
    with pytest.raises(ember.errors.InvalidArgumentError, match="Selector index out of range: 5"):
        list(ember.data.Dataset.choose_from_datasets(_three(ember), _choices(ember, [5])))
    with pytest.raises(TypeError, match="must be scalar `tf.int64`"):
        ember.data.Dataset.choose_from_datasets(_three(ember), ember.data.Dataset.range(3).map(
            lambda x: ember.cast(x, ember.int32)))
    with pytest.raises(ValueError, match=r"len\(bucket_batch_sizes\) must equal"):
        _sequences(ember).bucket_by_sequence_length(lambda x: ember.shape(x)[0], [3], [2])
    with pytest.raises(ValueError, match="must return a single tf.int64 scalar"):
        r.group_by_window(lambda x: ember.cast(x, ember.int32), lambda k, w: w, 2)
    with pytest.raises(TypeError, match="must return a Dataset"):
        r.group_by_window(lambda x: x, lambda k, w: k, 2)
    with pytest.raises(ValueError, match="weights"):
        ember.data.Dataset.sample_from_datasets(_three(ember), weights=[0.5, 0.5])


def test_list_files(tmp_path):
    for name in ["b.txt", "a.txt", "c.csv"]:
        (tmp_path / name).write_text("x")
    pattern = os.path.join(str(tmp_path), "*.txt")
    for tf in (ember, tensorflow):
        names = [os.path.basename(n) for n in tf.data.Dataset.list_files(pattern, shuffle=False).as_numpy_iterator()]
        assert names == [b"a.txt", b"b.txt"]
        shuffled = sorted(os.path.basename(n) for n in tf.data.Dataset.list_files(pattern, seed=1).as_numpy_iterator())
        assert shuffled == [b"a.txt", b"b.txt"]
        with pytest.raises(tf.errors.InvalidArgumentError, match="No files matched"):
            tf.data.Dataset.list_files(os.path.join(str(tmp_path), "*.none"))


def test_sample_from_datasets_draws_every_element_once_with_the_weights():
    sources = [ember.data.Dataset.range(0, 100), ember.data.Dataset.range(1000, 1050)]
    drawn = _lists(ember.data.Dataset.sample_from_datasets(sources, weights=[0.7, 0.3], seed=4))
    assert sorted(drawn) == list(range(100)) + list(range(1000, 1050))
    # Until one source is exhausted, about 70% of the draws come from the first (binomial: 7 sigma margin).
    first_half = drawn[:60]
    assert 25 <= sum(x < 100 for x in first_half) <= 59
    stopped = _lists(ember.data.Dataset.sample_from_datasets(sources, seed=4, stop_on_empty_dataset=True))
    assert len(stopped) < 150 and (sum(x >= 1000 for x in stopped) == 50 or sum(x < 100 for x in stopped) == 100)
    again = _lists(ember.data.Dataset.sample_from_datasets(sources, weights=[0.7, 0.3], seed=4))
    assert again == drawn  # a seed fixes the order


def test_transformations_iterate_inside_a_function():
    @ember.function
    def total():
        s = ember.constant(0, ember.int64)
        for x in ember.data.Dataset.range(10).shard(2, 1).take_while(lambda x: x < 8):
            s += x
        return s

    assert int(total()) == 1 + 3 + 5 + 7
