"""lookup/dense_buckets.py against TensorFlow 2.21: inserted one by one in the same order, ember's bucket
layout is TensorFlow's own export (same hash, same probing), and the entries read back leave the empty and
deleted buckets out."""

import numpy as np
import tensorflow as tf

from ember.lookup import dense_buckets

STRING_KEYS = ["a", "c", "eight by", "seven b", "a key longer than sixteen bytes", "", "é"]


def _tensorflow_buckets(key_dtype, keys, empty_key, deleted_key, num_buckets):
    table = tf.lookup.experimental.DenseHashTable(key_dtype, tf.int64, -1, empty_key=empty_key,
                                                  deleted_key=deleted_key, initial_num_buckets=num_buckets)
    for value, key in enumerate(keys):  # one at a time: a collision's probe depends on the order
        table.insert(tf.constant([key], key_dtype), tf.constant([value], tf.int64))
    key_buckets, value_buckets = table.export()
    return key_buckets.numpy(), value_buckets.numpy()


def test_string_layout_is_tensorflows():
    keys = [k for k in STRING_KEYS if k]  # "" is the empty key here
    expected = _tensorflow_buckets(tf.string, keys, "", "$", 16)
    ours = dense_buckets.to_buckets(np.array([k.encode() for k in keys], dtype=object),
                                    np.arange(len(keys), dtype=np.int64), b"", 16)
    np.testing.assert_array_equal(ours[0], expected[0])
    np.testing.assert_array_equal(ours[1], expected[1])


def test_integer_layout_with_collisions_is_tensorflows():
    keys = [5, 13, 21, 3, -7, 1 << 40, 100]  # 5, 13 and 21 share a first bucket of 8
    expected = _tensorflow_buckets(tf.int64, keys, -1, -2, 16)
    ours = dense_buckets.to_buckets(np.array(keys, dtype=np.int64), np.arange(len(keys), dtype=np.int64), -1, 16)
    np.testing.assert_array_equal(ours[0], expected[0])
    np.testing.assert_array_equal(ours[1], expected[1])


def test_bucket_count_grows_as_tensorflows():
    assert dense_buckets.num_buckets_for(6, 8) == 8  # 6 <= 0.8 * 8
    assert dense_buckets.num_buckets_for(7, 8) == 16
    assert dense_buckets.num_buckets_for(3) == 131072


def test_entries_leave_reserved_buckets_out():
    table = tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, -1, empty_key=-1, deleted_key=-2,
                                                  initial_num_buckets=8)
    table.insert(tf.constant([4, 9, 12], tf.int64), tf.constant([0, 1, 2], tf.int64))
    table.remove(tf.constant([9], tf.int64))
    key_buckets, value_buckets = (t.numpy() for t in table.export())
    assert -2 in key_buckets  # the removed key's bucket
    keys, values = dense_buckets.entries_of(key_buckets, value_buckets, [-1, -2])
    assert sorted(zip(keys.tolist(), values.tolist())) == [(4, 0), (12, 2)]
