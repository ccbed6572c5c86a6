"""``tf.ragged.constant`` and ``tf.ragged.constant_value``: a RaggedTensor from nested Python lists."""

import numpy as np

from ember import dtypes
from ember.framework.tensor import Tensor, constant as _dense_constant, convert_to_tensor
from ember.ragged.ragged_tensor import RaggedTensor


def _is_list(x):
    return isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim > 0)


def _scalar_depths(value, depth, out):
    """Collects the nesting depth of every scalar and the deepest list depth."""
    if _is_list(value):
        out["max_list"] = max(out["max_list"], depth + 1)
        for v in value:
            _scalar_depths(v, depth + 1, out)
    else:
        out["scalars"].add(depth)


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None, row_splits_dtype=dtypes.int64):
    """A RaggedTensor from a nested list: tf.ragged.constant([[1, 2], [3]]) has shape [2, None].
    ``ragged_rank`` fixes how many dimensions are ragged (the rest must be uniform), ``inner_shape`` the shape
    of the uniform values; a value of depth 1 (no ragged dimension) is returned as a Tensor."""
    row_splits_dtype = dtypes.as_dtype(row_splits_dtype)
    if isinstance(pylist, (RaggedTensor, Tensor)):
        raise TypeError("tf.ragged.constant: pylist may not be a RaggedTensor or Tensor")
    info = {"scalars": set(), "max_list": 0}
    _scalar_depths(pylist, 0, info)
    if len(info["scalars"]) > 1:
        raise ValueError("all scalar values must have the same nesting depth")
    if info["scalars"]:
        scalar_depth = info["scalars"].pop()
    else:  # only (nested) empty lists: their depth, plus the inner shape's
        scalar_depth = info["max_list"] + (len(inner_shape) if inner_shape is not None else 0)
    if ragged_rank is not None and ragged_rank < 0:
        raise ValueError(f"Invalid pylist={pylist!r}: ragged_rank must be non-negative, got {ragged_rank}")
    if inner_shape is not None:
        inner_shape = tuple(int(d) for d in inner_shape)
    if ragged_rank is None:
        ragged_rank = max(0, scalar_depth - 1 - (len(inner_shape) if inner_shape is not None else 0))
    if ragged_rank > 0 and scalar_depth <= ragged_rank and info["max_list"] <= ragged_rank:
        raise ValueError(f"Invalid pylist={pylist!r}: ragged_rank={ragged_rank} must be less than the nesting "
                         f"depth {max(scalar_depth, info['max_list'])}")
    if ragged_rank == 0:
        return _dense(pylist, dtype, inner_shape)
    # Peel off one ragged level at a time, recording its splits.
    nested_splits = []
    level = [pylist]
    for _ in range(ragged_rank + 1):
        splits = [0]
        flat = []
        for item in level:
            if not _is_list(item):
                raise ValueError(f"Invalid pylist={pylist!r}: expected a list at ragged depth, got {item!r}")
            flat.extend(item)
            splits.append(len(flat))
        nested_splits.append(splits)
        level = flat
    nested_splits = nested_splits[1:]
    values = _dense(level, dtype, inner_shape, empty_inner=_inner_rank(scalar_depth, ragged_rank, inner_shape))
    splits = [convert_to_tensor(np.asarray(s, dtype=row_splits_dtype.as_numpy_dtype)) for s in nested_splits]
    return RaggedTensor.from_nested_row_splits(values, splits, validate=False)


def _inner_rank(scalar_depth, ragged_rank, inner_shape):
    if inner_shape is not None:
        return len(inner_shape)
    return max(0, scalar_depth - ragged_rank - 1)


def _dense(values, dtype, inner_shape, empty_inner=0):
    """The flat values: a list of uniform items (ValueError naming the culprit otherwise)."""
    if isinstance(values, list) and not values:
        shape = [0] + (list(inner_shape) if inner_shape is not None else [0] * empty_inner)
        return _dense_constant(np.zeros(shape, dtype=(dtypes.as_dtype(dtype) if dtype else dtypes.float32)
                                        .as_numpy_dtype))
    try:
        array = np.array(values, dtype=object)
    except ValueError:
        array = None
    if array is None or array.dtype == object and any(_is_list(v) for v in array.reshape(-1)):
        raise ValueError(f"inner values must have a uniform shape (ragged_rank too small?), got {values!r}")
    if inner_shape is not None:
        try:
            return _dense_constant(values, dtype=dtype, shape=[len(values)] + list(inner_shape)) \
                if np.asarray(values).ndim == 1 and len(inner_shape) else _reshaped(values, dtype, inner_shape)
        except (TypeError, ValueError) as e:
            raise ValueError(f"inner values do not fit inner_shape={inner_shape}: {e}") from None
    return _dense_constant(values, dtype=dtype)


def _reshaped(values, dtype, inner_shape):
    t = _dense_constant(values, dtype=dtype)
    if tuple(t.shape.as_list()[1:]) != tuple(inner_shape):
        raise ValueError(f"inner values have shape {t.shape.as_list()[1:]}, expected inner_shape {list(inner_shape)}")
    return t


def constant_value(pylist, dtype=None, ragged_rank=None, inner_shape=None, row_splits_dtype="int64"):
    """``tf.compat.v1.ragged.constant_value``: here the same RaggedTensor as ``constant`` (eager)."""
    return constant(pylist, dtype, ragged_rank, inner_shape, row_splits_dtype=row_splits_dtype)
