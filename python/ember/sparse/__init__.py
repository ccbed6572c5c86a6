"""``tf.sparse``: SparseTensors (coordinates and values of the non-zero elements) and the ops on them
(docs/composite.md).

    sp = tf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1., 2.], dense_shape=[3, 4])
    tf.sparse.to_dense(sp), tf.sparse.sparse_dense_matmul(sp, tf.ones([4, 2])), tf.sparse.add(sp, sp)
"""

from ember.sparse.sparse_ops import (add, expand_dims, eye, from_dense, matmul, reduce_max, reduce_sum, reorder,
                                     reshape, retain, sparse_dense_matmul, to_dense, transpose)
from ember.sparse.sparse_ops import sparse_maximum as maximum
from ember.sparse.sparse_ops import sparse_slice as slice  # noqa: A001 - TF's name
from ember.sparse.sparse_tensor import SparseTensor, SparseTensorSpec, is_sparse
from ember.ops.indexing_ops import sparse_segment_mean as segment_mean
from ember.ops.indexing_ops import sparse_segment_sqrt_n as segment_sqrt_n
from ember.ops.indexing_ops import sparse_segment_sum as segment_sum

__all__ = ["SparseTensor", "SparseTensorSpec", "add", "expand_dims", "eye", "from_dense", "is_sparse", "matmul",
           "maximum", "reduce_max", "reduce_sum", "reorder", "reshape", "retain", "segment_mean", "segment_sqrt_n",
           "segment_sum", "slice", "sparse_dense_matmul", "to_dense", "transpose"]
