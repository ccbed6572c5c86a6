"""Shape and indexing ops with TensorFlow's names: reshape, concat, gather, ``Tensor.__getitem__``, ...

Shape-like arguments (shapes, axes, perms, multiples) are attributes of the ops, so they are converted
to Python ints here; eagerly a tensor passed for them is read once.
"""

import builtins

import numpy as np

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape

_Reshape = _C.op("Reshape")
_Transpose = _C.op("Transpose")
_ExpandDims = _C.op("ExpandDims")
_Squeeze = _C.op("Squeeze")
_ConcatV2 = _C.op("ConcatV2")
_Pack = _C.op("Pack")
_Unpack = _C.op("Unpack")
_SplitV = _C.op("SplitV")
_Slice = _C.op("Slice")
_StridedSlice = _C.op("StridedSlice")
_GatherV2 = _C.op("GatherV2")
_Tile = _C.op("Tile")
_Pad = _C.op("Pad")
_BroadcastTo = _C.op("BroadcastTo")
_Shape = _C.op("Shape")
_Size = _C.op("Size")
_Rank = _C.op("Rank")
_Identity = _C.op("Identity")
_SelectV2 = _C.op("SelectV2")
_Where = _C.op("Where")
_Fill = _C.op("Fill")
_ZerosLike = _C.op("ZerosLike")
_OnesLike = _C.op("OnesLike")
_Eye = _C.op("Eye")
_Range = _C.op("Range")
_LinSpace = _C.op("LinSpace")
_OneHot = _C.op("OneHot")
_ClipByValue = _C.op("ClipByValue")
_Cast = _C.op("Cast")


def _tensor(x, dtype_hint=None):
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype_hint=dtype_hint)


def _ints(value, what):
    """A shape-like argument (list, tuple, TensorShape, int tensor, NumPy array) as a list of ints."""
    if isinstance(value, TensorShape):
        return value.as_list()
    if isinstance(value, (Tensor, np.ndarray)):
        return [int(v) for v in np.asarray(value).reshape(-1)]
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    try:
        return [int(v) if not isinstance(v, Tensor) else int(v) for v in value]
    except TypeError:
        raise TypeError(f"{what} must be a list of ints, got {value!r}") from None


def reshape(tensor, shape, name=None):
    """A view of ``tensor`` with a new shape; one dimension may be -1."""
    return _Reshape(tensor, _ints(shape, "shape"))


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """Permutes dimensions; by default reverses them."""
    a = _tensor(a)
    if perm is None:
        perm = list(builtins.range(a.ndim - 1, -1, -1))
    return _Transpose(a, _ints(perm, "perm"))


def expand_dims(input, axis, name=None):  # noqa: A002 - TF's name
    return _ExpandDims(input, int(axis))


def squeeze(input, axis=None, name=None):  # noqa: A002 - TF's name
    return _Squeeze(input, [] if axis is None else _ints(axis, "axis"))


def concat(values, axis, name="concat"):
    return _ConcatV2(list(values), int(axis))


def stack(values, axis=0, name="stack"):
    return _Pack(list(values), int(axis))


def unstack(value, num=None, axis=0, name="unstack"):
    out = _Unpack(value, -1 if num is None else int(num), int(axis))
    return list(out) if isinstance(out, tuple) else [out]


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits into equal parts (an int) or parts of the given sizes (a list; one may be -1)."""
    value = _tensor(value)
    axis = int(axis)
    if isinstance(num_or_size_splits, (int, np.integer)) or (
            isinstance(num_or_size_splits, Tensor) and num_or_size_splits.ndim == 0):
        parts = int(num_or_size_splits)
        rank = value.ndim
        if not -rank <= axis < rank:
            raise _C_errors().InvalidArgumentError(
                None, None, f"SplitV: axis {axis} is out of range for a tensor of rank {rank}")
        dim = value.shape[axis]
        if parts <= 0 or dim % parts:
            raise _C_errors().InvalidArgumentError(
                None, None, f"Split: number of ways to split should evenly divide the split dimension, but got "
                f"split_dim {axis} (size = {dim}) and num_split {parts}")
        sizes = [dim // parts] * parts
    else:
        sizes = _ints(num_or_size_splits, "num_or_size_splits")
    out = _SplitV(value, sizes, axis)
    return list(out) if isinstance(out, tuple) else [out]


def _C_errors():
    from ember import errors

    return errors


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    return _Slice(input_, _ints(begin, "begin"), _ints(size, "size"))


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, name=None):
    begin = _ints(begin, "begin")
    strides = [1] * len(begin) if strides is None else _ints(strides, "strides")
    return _StridedSlice(input_, begin, _ints(end, "end"), strides, begin_mask, end_mask, ellipsis_mask,
                         new_axis_mask, shrink_axis_mask)


def _slice_helper(tensor, key):
    """``tensor[key]`` with TensorFlow's rules: ints, slices (with steps), ``...`` and ``None``."""
    if not isinstance(key, tuple):
        key = (key,)
    begin, end, strides = [], [], []
    begin_mask = end_mask = ellipsis_mask = new_axis_mask = shrink_axis_mask = 0
    for index, item in enumerate(key):
        bit = 1 << index
        if isinstance(item, builtins.slice):
            step = 1 if item.step is None else int(item.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            begin.append(0 if item.start is None else int(item.start))
            end.append(0 if item.stop is None else int(item.stop))
            strides.append(step)
            if item.start is None:
                begin_mask |= bit
            if item.stop is None:
                end_mask |= bit
        elif item is Ellipsis:
            begin.append(0), end.append(0), strides.append(1)
            ellipsis_mask |= bit
        elif item is None:
            begin.append(0), end.append(0), strides.append(1)
            new_axis_mask |= bit
        else:
            if isinstance(item, Tensor) and (item.ndim != 0 or not item.dtype.is_integer):
                raise TypeError("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
                                f"tf.int32/tf.int64 tensors are valid indices, got {item!r}")
            if isinstance(item, (bool, np.bool_)) or not hasattr(item, "__index__"):
                raise TypeError("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
                                f"tf.int32/tf.int64 tensors are valid indices, got {item!r}")
            i = int(item)
            begin.append(i)
            end.append(i + 1)
            strides.append(1)
            shrink_axis_mask |= bit
    return _StridedSlice(tensor, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                         shrink_axis_mask)


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    indices = _tensor(indices)
    if not isinstance(indices, Tensor) or indices.dtype not in (dtypes.int32, dtypes.int64):
        indices = convert_to_tensor(indices, dtype=dtypes.int32)
    return _GatherV2(params, indices, 0 if axis is None else int(axis), int(batch_dims))


def tile(input, multiples, name=None):  # noqa: A002 - TF's name
    return _Tile(input, _ints(multiples, "multiples"))


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    flat = [int(v) for v in np.asarray(paddings.numpy() if isinstance(paddings, Tensor) else paddings).reshape(-1)]
    return _Pad(tensor, flat, float(constant_values), str(mode).upper())


def broadcast_to(input, shape, name=None):  # noqa: A002 - TF's name
    return _BroadcastTo(input, _ints(shape, "shape"))


def shape(input, out_type=dtypes.int32, name=None):  # noqa: A002 - TF's name
    return _Shape(input, out_type)


def size(input, out_type=dtypes.int32, name=None):  # noqa: A002 - TF's name
    return _Size(input, out_type)


def rank(input, name=None):  # noqa: A002 - TF's name
    return _Rank(input)


def identity(input, name=None):  # noqa: A002 - TF's name
    return _Identity(input)


def where(condition, x=None, y=None, name=None):
    """With x and y: elements of x where condition else y (broadcast). Alone: int64 coordinates of the
    true elements."""
    if x is None and y is None:
        return _Where(condition)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    x_t = x if isinstance(x, Tensor) else None
    y_t = y if isinstance(y, Tensor) else None
    if x_t is None and y_t is not None:
        x = convert_to_tensor(x, dtype_hint=y_t.dtype)
    elif y_t is None and x_t is not None:
        y = convert_to_tensor(y, dtype_hint=x_t.dtype)
    return _SelectV2(_tensor(condition, dtypes.bool), x, y)


def fill(dims, value, name=None):
    return _Fill(value, _ints(dims, "dims"))


def zeros(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype)
    return _Fill(convert_to_tensor(False if dtype.is_bool else 0, dtype=dtype), _ints(shape, "shape"))


def ones(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype)
    return _Fill(convert_to_tensor(True if dtype.is_bool else 1, dtype=dtype), _ints(shape, "shape"))


def zeros_like(input, dtype=None, name=None):  # noqa: A002 - TF's name
    out = _ZerosLike(input)
    return out if dtype is None else _cast(out, dtype)


def ones_like(input, dtype=None, name=None):  # noqa: A002 - TF's name
    out = _OnesLike(input)
    return out if dtype is None else _cast(out, dtype)


def _cast(x, dtype):
    dtype = dtypes.as_dtype(dtype)
    return x if x.dtype == dtype else _Cast(x, dtype)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    return _Eye(int(num_rows), -1 if num_columns is None else int(num_columns),
                [] if batch_shape is None else _ints(batch_shape, "batch_shape"), dtypes.as_dtype(dtype))


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """start, start + delta, ... below limit; ``range(n)`` counts from 0. int32 unless a bound is a float."""
    if limit is None:
        start, limit = 0, start
    values = [v.numpy() if isinstance(v, Tensor) else v for v in (start, limit, delta)]
    if dtype is None:
        inferred = [v.dtype if isinstance(v, Tensor) else None for v in (start, limit, delta)]
        if any(isinstance(v, (float, np.floating)) for v in values) or any(
                d is not None and d.is_floating for d in inferred):
            dtype = next((d for d in inferred if d is not None and d.is_floating), dtypes.float32)
        else:
            dtype = next((d for d in inferred if d is not None), dtypes.int32)
    return _Range(float(values[0]), float(values[1]), float(values[2]), dtypes.as_dtype(dtype))


def linspace(start, stop, num, name=None, axis=0):
    start = _tensor(start)
    stop = _tensor(stop, start.dtype)
    if int(num) == 0:  # tf.linspace gives an empty tensor; the raw op requires num >= 1
        return zeros([0], start.dtype)
    return _LinSpace(start, stop, int(num))


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    dtype = dtypes.as_dtype(dtype) if dtype is not None else (
        on_value.dtype if isinstance(on_value, Tensor) else dtypes.float32)
    on = 1.0 if on_value is None else float(on_value)
    off = 0.0 if off_value is None else float(off_value)
    return _OneHot(indices, int(depth), on, off, -1 if axis is None else int(axis), dtype)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    t = _tensor(t)
    return _ClipByValue(t, _tensor(clip_value_min, t.dtype), _tensor(clip_value_max, t.dtype))


newaxis = None
