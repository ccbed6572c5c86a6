"""``tf.nn.embedding_lookup`` and ``tf.nn.embedding_lookup_sparse``, composed of gather, unique and the segment
ops as TensorFlow composes them (embedding_ops.py there), so they trace and differentiate through those ops.
The sparse form's fast path (no weights, no max_norm) is one SparseSegmentSum/Mean/SqrtN; sharded params are
looked up in their concatenation (_params_table).
"""
import numpy as np

from ember import dtypes, errors
from ember.framework.tensor import convert_to_tensor
from ember.ops import array_ops, indexing_ops, math_ops, no_nan_ops, special_math_ops
from ember.sparse.sparse_tensor import SparseTensor

__all__ = ["embedding_lookup", "embedding_lookup_sparse"]

_COMBINERS = ("mean", "sqrtn", "sum")


def _params_table(params, fn):
    """One params tensor: a tensor, or the concatenation of a list of shards.

    TensorFlow 2's lookups split ids over shards by its "div" strategy: with T rows over n shards, the first
    T % n shards hold T // n + 1 consecutive ids and the rest T // n, in order. Shards of exactly those sizes
    (how TensorFlow's partitioned variables are cut) therefore hold the rows of one table in order, and
    looking up in their concatenation is TensorFlow's lookup. Other sizes are refused: TensorFlow would map
    ids to rows of another table."""
    if not isinstance(params, (list, tuple)):
        return convert_to_tensor(params)
    if not params:
        raise ValueError("Need at least one param")  # TensorFlow's message
    shards = [convert_to_tensor(p) for p in params]
    if len(shards) == 1:
        return shards[0]
    rows = [p.shape[0] if p.shape.rank else None for p in shards]
    if any(r is None for r in rows):
        raise errors.InvalidArgumentError(None, None, f"{fn}: sharded params need their row counts known, got "
                                          f"shapes {[p.shape for p in shards]}")
    total, n = sum(rows), len(rows)
    div_sizes = [total // n + (1 if k < total % n else 0) for k in range(n)]
    if rows != div_sizes:
        raise errors.InvalidArgumentError(None, None, f"{fn}: {n} params shards of {rows} rows; TensorFlow's "
                                          f"\"div\" split of {total} ids needs {div_sizes}")
    return array_ops.concat(shards, 0)


def _clip(embeddings, ids_rank, max_norm):
    """Each embedding (the dims after the ids' dims) clipped to l2 norm max_norm, as TensorFlow's _clip."""
    if max_norm is None:
        return embeddings
    axes = list(range(ids_rank, embeddings.shape.rank))
    return special_math_ops.clip_by_norm(embeddings, max_norm, axes=axes) if axes else embeddings


def embedding_lookup(params, ids, max_norm=None, name=None):
    """params' rows at ids (shape ids.shape + params.shape[1:]), each clipped to l2 norm max_norm if given."""
    if isinstance(params, (list, tuple)) and len(params) == 1:
        params = params[0]
    if not getattr(params, "_ember_variable", False):  # a variable's rows are its sparse_read
        params = _params_table(params, "embedding_lookup")
    ids = convert_to_tensor(ids)
    return _clip(array_ops.gather(params, ids), ids.shape.rank, max_norm)


def embedding_lookup_sparse(params, sp_ids, sp_weights, combiner=None, max_norm=None, name=None,
                            allow_fast_lookup=False):
    """Per row of the SparseTensor sp_ids, the embeddings of its ids combined by `combiner` ("mean", the
    default, "sqrtn" or "sum"), weighted by sp_weights' values if given: one output row per row up to the
    last row holding an id, as TensorFlow's."""
    if combiner is None:
        combiner = "mean"
    if combiner not in _COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    if sp_weights is not None and not isinstance(sp_weights, SparseTensor):
        raise TypeError(f"sp_weights must be either None or SparseTensor, got {type(sp_weights)}")
    params = _params_table(params, "embedding_lookup_sparse")
    segment_ids = sp_ids.indices[:, 0]
    ids = sp_ids.values
    if sp_weights is None and max_norm is None:
        # TensorFlow's fast path: one SparseSegment op reads the rows straight from params.
        reduce = {"sum": indexing_ops.sparse_segment_sum, "mean": indexing_ops.sparse_segment_mean,
                  "sqrtn": indexing_ops.sparse_segment_sqrt_n}[combiner]
        return reduce(params, ids, segment_ids)
    unique_ids, idx = indexing_ops.unique(ids)
    embeddings = embedding_lookup(params, unique_ids, max_norm=max_norm)
    if sp_weights is None:
        reduce = {"sum": indexing_ops.sparse_segment_sum, "mean": indexing_ops.sparse_segment_mean,
                  "sqrtn": indexing_ops.sparse_segment_sqrt_n}[combiner]
        return reduce(embeddings, idx, segment_ids)
    segment_ids = math_ops.cast(segment_ids, "int32")
    embeddings = array_ops.gather(embeddings, idx)
    weights = sp_weights.values
    if weights.dtype != embeddings.dtype:
        weights = math_ops.cast(weights, embeddings.dtype)
    # One weight per id, broadcast over the embedding's dims.
    weights = array_ops.reshape(weights, array_ops.concat(
        [array_ops.shape(weights), array_ops.ones([embeddings.shape.rank - 1], "int32")], 0))
    embeddings = embeddings * weights
    total = indexing_ops.segment_sum(embeddings, segment_ids)
    if combiner == "sum":
        return total
    if combiner == "sqrtn":
        weights = weights * weights
    weight_sum = indexing_ops.segment_sum(weights, segment_ids)
    if combiner == "sqrtn":
        weight_sum = math_ops.sqrt(weight_sum)
    return no_nan_ops.divide_no_nan(total, weight_sum)


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None, combiner="mean",
                                 default_id=None, max_norm=None, name=None, allow_fast_lookup=False):
    """``embedding_lookup_sparse`` that tolerates what real feature columns hold: negative ids (and, unless
    combiner is "sum", non-positive weights) are dropped, a row left empty gets default_id's embedding or
    zeros, and ids of rank > 2 give a result of shape ids.dense_shape[:-1] + [dim]."""
    from ember import sparse as sparse_ops
    from ember.ops.array_ops import concat, reshape, tile, where, zeros_like

    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    if not isinstance(sparse_ids, SparseTensor):
        raise TypeError(f"safe_embedding_lookup_sparse: sparse_ids must be a SparseTensor; got "
                        f"{type(sparse_ids).__name__}")
    if sparse_weights is not None and not isinstance(sparse_weights, SparseTensor):
        raise TypeError(f"safe_embedding_lookup_sparse: sparse_weights must be None or a SparseTensor; got "
                        f"{type(sparse_weights).__name__}")
    if default_id is not None and (isinstance(default_id, bool) or not isinstance(default_id, (int, np.integer))):
        raise TypeError(f"safe_embedding_lookup_sparse: default_id must be None or an int; got {default_id!r}")
    if isinstance(embedding_weights, (list, tuple)):
        if not embedding_weights:
            raise ValueError("Missing embedding_weights.")
        embedding_weights = embedding_weights[0] if len(embedding_weights) == 1 else concat(
            [convert_to_tensor(w) for w in embedding_weights], 0)
    shape = sparse_ids.dense_shape
    rank = sparse_ids.shape.rank if sparse_ids.shape.rank is not None else int(shape.shape[0])
    if rank is None or rank < 2:
        raise ValueError(f"safe_embedding_lookup_sparse: sparse_ids must be at least rank 2; got {sparse_ids.shape}")
    if rank > 2:  # rows are all but the last dimension
        from ember.ops.math_ops import reduce_prod

        flat_shape = [reduce_prod(shape[:-1]), shape[-1]]
        sparse_ids = sparse_ops.reshape(sparse_ids, flat_shape)
        if sparse_weights is not None:
            sparse_weights = sparse_ops.reshape(sparse_weights, flat_shape)
    keep = sparse_ids.values >= 0
    if sparse_weights is not None and combiner != "sum":
        keep = keep & (sparse_weights.values > 0)
    sparse_ids = sparse_ops.retain(sparse_ids, keep)
    if sparse_weights is not None:
        sparse_weights = sparse_ops.retain(sparse_weights, keep)
    sparse_ids, is_row_empty = sparse_ops.fill_empty_rows(sparse_ids, default_id or 0)
    if sparse_weights is not None:
        sparse_weights, _ = sparse_ops.fill_empty_rows(sparse_weights, 1.0)
    result = embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights, combiner=combiner,
                                     max_norm=max_norm)
    if default_id is None:
        from ember.ops.array_ops import shape as shape_of

        empty = tile(reshape(is_row_empty, [-1, 1]), [1, shape_of(result)[1]])
        result = where(empty, zeros_like(result), result)
    from ember.ops.array_ops import shape as shape_of
    from ember.ops.math_ops import cast

    out_shape = concat([cast(shape[:-1], dtypes.int32), shape_of(result)[1:]], 0)
    return reshape(result, out_shape)
