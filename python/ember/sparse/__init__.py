"""``tf.sparse``: SparseTensors (coordinates and values of the non-zero elements) and the ops on them
(docs/composite.md).

    sp = tf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1., 2.], dense_shape=[3, 4])
    tf.sparse.to_dense(sp), tf.sparse.sparse_dense_matmul(sp, tf.ones([4, 2])), tf.sparse.add(sp, sp)
"""

from ember.sparse.sparse_ops import (add, expand_dims, eye, from_dense, matmul, reduce_max, reduce_sum, reorder,
                                     reshape, retain, sparse_dense_matmul, to_dense, transpose)
from ember.sparse.sparse_more_ops import (bincount, concat, fill_empty_rows, map_values, maximum, minimum,
                                          reset_shape, softmax, split, to_indicator)
from ember.sparse.sparse_ops import sparse_slice as slice  # noqa: A001 - TF's name
from ember.sparse.sparse_tensor import SparseTensor, SparseTensorSpec, is_sparse
from ember.ops.indexing_ops import sparse_segment_mean as segment_mean
from ember.ops.indexing_ops import sparse_segment_sqrt_n as segment_sqrt_n
from ember.ops.indexing_ops import sparse_segment_sum as segment_sum

__all__ = ["SparseTensor", "SparseTensorSpec", "add", "bincount", "concat", "expand_dims", "eye", "fill_empty_rows",
           "from_dense", "is_sparse", "map_values", "matmul", "maximum", "minimum", "reduce_max", "reduce_sum",
           "reorder", "reset_shape", "reshape", "retain", "segment_mean", "segment_sqrt_n", "segment_sum", "slice",
           "softmax", "sparse_dense_matmul", "split", "to_dense", "to_indicator", "transpose"]
