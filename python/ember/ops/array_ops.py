"""Shape and indexing ops with TensorFlow's names: reshape, concat, gather, ``Tensor.__getitem__``, ...

Shape-like arguments (shapes, axes, perms, multiples) are attributes of the ops, so they are converted
to Python ints here; eagerly a tensor passed for them is read once. The conversion follows TensorFlow's
errors: where TF feeds the argument to the op as an index tensor, a float is an InvalidArgumentError;
where TF first converts it with ``dtype=int32`` (zeros, ones, expand_dims, concat's axis, ...), a TypeError.
"""

import builtins
import numbers

import numpy as np

from ember import _C, dtypes, errors
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
_ShapeN = _C.op("ShapeN")
_Size = _C.op("Size")
_Rank = _C.op("Rank")
_Identity = _C.op("Identity")
_Bitcast = _C.op("Bitcast")
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
_UnsortedSegmentSum = _C.op("UnsortedSegmentSum")
_Cast = _C.op("Cast")

_INDEX_DTYPES = (dtypes.int32, dtypes.int64)
_MAX_OUTPUTS = 1 << 20  # more outputs than this from one op (split into pieces) is a resource error
_INVALID = errors.InvalidArgumentError


def _invalid(op, message):
    return errors.InvalidArgumentError(None, None, f"{op}: {message}")


def _tensor(x, dtype_hint=None):
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype_hint=dtype_hint)


def _int_array(value, op, arg, float_error):
    """A shape-like argument (list, tuple, TensorShape, int tensor, NumPy array, int) as a NumPy int64 array.

    float_error is the exception class TensorFlow raises for floats here (see the module docstring)."""
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"{op}: cannot convert a partially known TensorShape {value} to {arg}")
        return np.array(value.as_list(), dtype=np.int64)
    if isinstance(value, Tensor) and value._is_symbolic:
        raise TypeError(_symbolic_message(op, arg))
    if isinstance(value, Tensor):
        if value.dtype not in _INDEX_DTYPES:
            raise _invalid(op, f"{arg} must be an int32 or int64 tensor, got dtype {value.dtype.name}")
        return np.asarray(value.numpy(), dtype=np.int64)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) and v._is_symbolic for v in value):
        raise TypeError(_symbolic_message(op, arg))
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.asarray(value, dtype=object)
    if array.dtype.kind in "iu" or array.size == 0:  # [] is float64 to NumPy
        return array.astype(np.int64)
    if array.dtype.kind in "fb":
        message = f"{arg} must be integers, got {value!r}"
        raise (TypeError(f"{op}: {message}") if float_error is TypeError else _invalid(op, message))
    raise ValueError(f"{op}: {arg} must be integers, got {value!r}")


def _symbolic_message(op, arg):
    return (f"{op}: {arg} must be known while ember.function traces, but it depends on a dimension that is "
            "unknown in the input signature (shape-like arguments are attributes of ember's ops; give the "
            "dimension in the TensorSpec, or use -1)")


def _to_int(value, op, arg):
    """``int(value)`` for an argument TF converts with int(): infinity is a ValueError naming it, not an
    OverflowError."""
    try:
        return int(value)
    except OverflowError:
        raise ValueError(f"{op}: {arg} must be a finite integer, got {value!r}") from None


def _concrete(value, op, arg):
    """``value`` itself, unless it is a graph tensor: ember's ops take ``arg`` as an attribute, whose value
    must be known when the node is built (for every dtype: a graph tensor has no buffer to read)."""
    if isinstance(value, Tensor) and value._is_symbolic:
        raise TypeError(f"{op}: {arg} must be known while ember.function traces (ember's {op} takes it as an "
                        f"attribute), got the symbolic tensor {value.name!r}; pass a Python value or a constant")
    return value


def _int_list(value, op, arg, float_error=_INVALID):
    """A shape-like argument as a list of ints: a vector, or a scalar taken as a one-element list."""
    if isinstance(value, (list, tuple)) and all(type(v) is int for v in value):
        return list(value)  # the common case, without NumPy
    if type(value) is int:
        return [value]
    array = _int_array(value, op, arg, float_error)
    if array.ndim > 1:
        raise _invalid(op, f"{arg} must be a vector, got a value of shape {list(array.shape)}")
    return [int(v) for v in array.reshape(-1)]


def _int_scalar(value, op, arg, float_error=TypeError):
    """An axis-like argument as an int; TensorFlow also takes a one-element list or tensor."""
    if type(value) is int:
        return value
    values = _int_list(value, op, arg, float_error)
    if len(values) != 1:
        raise _invalid(op, f"{arg} must be a single integer, got {value!r}")
    return values[0]


def _shape_operand(value, op, arg, float_error=_INVALID, scalar=False, vector=False):
    """A shape-like operand of an op that takes it as an int tensor (Reshape's shape, Transpose's perm,
    ...): a tensor, symbolic ones included, passes as it is; a list holding tensors is stacked, as
    TensorFlow packs it (tf.reshape(x, [tf.shape(x)[0], -1])); anything else becomes ints, which the op
    turns into a constant without an allocation per call (Note [Shape operands from Python])."""
    if type(value) in (list, tuple) and all(type(v) is int for v in value) and not scalar:
        return value  # the common eager case, handed to the op as it is
    if isinstance(value, Tensor):
        if value.dtype not in _INDEX_DTYPES:
            raise _invalid(op, f"{arg} must be an int32 or int64 tensor, got dtype {value.dtype.name}")
        if vector and value.shape.rank == 0:
            return _Reshape(value, [1])  # tf.zeros(n) is tf.zeros([n])
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return _pack_ints(value, op, arg)
    if scalar:
        return _int_scalar(value, op, arg, float_error)
    return _int_list(value, op, arg, float_error)


def _pack_ints(values, op, arg):
    """A list of int scalars (tensors and Python ints) as one int vector tensor."""
    items = []
    for v in values:
        if isinstance(v, Tensor):
            if v.dtype not in _INDEX_DTYPES:
                raise _invalid(op, f"{arg} must hold int32 or int64 values, got a {v.dtype.name} tensor")
            if v.shape.rank not in (None, 0) and v.shape.as_list() != [1]:
                raise _invalid(op, f"{arg} must hold scalars, got a tensor of shape {v.shape}")
            items.append(v if v.shape.rank == 0 else _Reshape(v, []))
        else:
            items.append(_to_int(v, op, arg))
    wide = any(isinstance(v, Tensor) and v.dtype == dtypes.int64 for v in items)
    dtype = dtypes.int64 if wide else dtypes.int32
    items = [(_Cast(v, dtype) if v.dtype != dtype else v) if isinstance(v, Tensor)
             else convert_to_tensor(v, dtype=dtype) for v in items]
    return _Pack(items, 0)


def _check_axis(op, axis, rank):
    """TensorFlow checks these axes in Python, so a bad one is a ValueError rather than an op error."""
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: argument `axis` = {axis} not in range [{-rank}, {rank})")


# ---- shapes -----------------------------------------------------------------------------------------


def reshape(tensor, shape, name=None):
    """A view of ``tensor`` with a new shape; one dimension may be -1."""
    return _Reshape(tensor, _shape_operand(shape, "Reshape", "shape"))


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """Permutes dimensions; by default reverses them."""
    a = _tensor(a)
    if perm is None and a.shape.rank is None:  # reversed axes of a rank known only at run time
        perm = range(rank(a) - 1, -1, -1)
    elif perm is None:
        perm = list(builtins.range(a.ndim - 1, -1, -1))
    return _Transpose(a, _shape_operand(perm, "Transpose", "perm"))


def expand_dims(input, axis, name=None):  # noqa: A002 - TF's name
    return _ExpandDims(input, _shape_operand(axis, "ExpandDims", "axis", TypeError, scalar=True))


def squeeze(input, axis=None, name=None):  # noqa: A002 - TF's name
    if axis is None:
        axes = []
    elif isinstance(axis, (list, tuple)):
        axes = [_to_int(a, "Squeeze", "axis") for a in axis]  # an attribute: TF takes anything int() takes
    else:
        axes = [_to_int(axis, "Squeeze", "axis")]
    return _Squeeze(input, axes)


def concat(values, axis, name="concat"):
    """Joins tensors along an existing axis. Like TF, one tensor (alone or in a list) comes back as is."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    axis = _shape_operand(axis, "ConcatV2", "axis", TypeError, scalar=True)
    if isinstance(axis, Tensor) and axis.shape.rank not in (None, 0):
        raise _invalid("ConcatV2", f"axis must be a scalar, got a tensor of shape {axis.shape.as_list()}")
    if len(values) == 1:
        return identity(values[0])
    if not values:
        raise _invalid("ConcatV2", "expected a non-empty list of tensors to concatenate, got []")
    return _ConcatV2(_convert_list(values), axis)


def _convert_list(values):
    """A list input's Python values converted as TensorFlow's op library converts them: to the dtype of the
    first tensor, else of the first value, and strictly (a list of floats into int32 is a TypeError)."""
    if all(isinstance(v, Tensor) for v in values):
        return list(values)
    dtype = next((v.dtype for v in values if isinstance(v, Tensor) or getattr(v, "_ember_variable", False)),
                 None)
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v)
        elif dtype is None:
            out.append(convert_to_tensor(v))
            dtype = out[-1].dtype
        elif getattr(v, "_ember_variable", False):
            out.append(v)
        else:
            out.append(convert_to_tensor(v, dtype=dtype))
    return out


def stack(values, axis=0, name="stack"):
    values = list(values)
    axis = _to_int(axis, "Pack", "axis")
    if not values and axis == 0:
        return convert_to_tensor([])  # TF: stack([]) is an empty float32 vector
    if axis == 0 and not any(isinstance(v, Tensor) or getattr(v, "_ember_variable", False) for v in values):
        # Python values and arrays stack as one conversion, as TensorFlow's: stack([1, 2.5]) is float32.
        try:
            return convert_to_tensor(values)
        except (TypeError, ValueError):
            pass  # ragged or mixed: the op reports it
    if values:
        _check_axis("Pack", axis, _tensor(values[0]).ndim + 1)
    return _Pack(values, axis)


def unstack(value, num=None, axis=0, name="unstack"):
    value = _tensor(value)
    axis = _int_scalar(axis, "Unpack", "axis")
    _check_axis("Unpack", axis, value.ndim)
    out = _Unpack(value, -1 if num is None else _to_int(num, "Unpack", "num"), axis)
    return list(out) if isinstance(out, tuple) else [out]


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits into equal parts (an int) or parts of the given sizes (a list; one may be -1).

    As in TF, ``num`` only matters with sizes, where it must equal their count."""
    value = _tensor(value)
    axis = _int_scalar(axis, "Split", "axis")
    splits = num_or_size_splits
    if isinstance(splits, numbers.Integral) and not isinstance(splits, (bool, np.bool_)):
        parts = int(splits)
        rank = value.ndim
        if parts < 1:
            raise _invalid("Split", f"num_split must be at least 1, got {parts}")
        if not -rank <= axis < rank:
            raise _invalid("Split", f"axis {axis} is out of range for a tensor of rank {rank} "
                                    f"(expected an axis in [{-rank}, {rank}))")
        if parts > _MAX_OUTPUTS:  # TF takes num_split as int32; ember also bounds the outputs of one op
            raise errors.ResourceExhaustedError(
                None, None, f"Split: num_split {parts} would create more than {_MAX_OUTPUTS} outputs")
        dim = value.shape[axis]
        if dim is None:
            if parts != 1:
                # The dimension is known at run time only: equal sizes computed then (SplitV checks they add up).
                piece = _Shape(value, dtypes.int32)[axis] // parts
                out = _SplitV(value, _pack_ints([piece] * parts, "SplitV", "size_splits"), axis)
                return list(out) if isinstance(out, tuple) else [out]
            dim = -1
        elif dim % parts:
            raise _invalid("Split", f"number of ways to split should evenly divide the split dimension, but got "
                                    f"split_dim {axis} (size = {dim}) and num_split {parts}")
        sizes = [dim // parts] * parts if dim >= 0 else [-1]
    else:
        if np.ndim(splits) == 0 and not isinstance(splits, (list, tuple)):
            raise ValueError("Split: rank-0 tensors are not supported as the num_or_size_splits argument to "
                             f"split. Argument provided: {splits!r}")
        sizes = _int_list(splits, "SplitV", "size_splits")
        if num is not None and _to_int(num, "SplitV", "num") != len(sizes):
            raise _invalid("SplitV", f"num is {_to_int(num, 'SplitV', 'num')} but size_splits [{','.join(map(str, sizes))}] has "
                                     f"{len(sizes)} entries")
    out = _SplitV(value, sizes, axis)
    return list(out) if isinstance(out, tuple) else [out]


def tile(input, multiples, name=None):  # noqa: A002 - TF's name
    return _Tile(input, _shape_operand(multiples, "Tile", "multiples"))


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pads by paddings[i] = [before, after] per dimension; mode CONSTANT, REFLECT or SYMMETRIC (any case)."""
    tensor = _tensor(tensor)
    upper = str(mode).upper()
    if upper not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError('Pad: value of argument `mode` expected to be one of "CONSTANT", "REFLECT", or '
                         f'"SYMMETRIC". Received `mode` = {mode}')
    if isinstance(paddings, (list, tuple)) and any(
            isinstance(row, (list, tuple)) and any(isinstance(v, Tensor) for v in row) for row in paddings):
        rows = [_pack_ints(row, "Pad", "paddings") if any(isinstance(v, Tensor) for v in row)
                else _Cast(convert_to_tensor([_to_int(v, "Pad", "paddings") for v in row]), dtypes.int32)
                for row in paddings]
        wide = any(r.dtype == dtypes.int64 for r in rows)
        paddings = _Pack([_Cast(r, dtypes.int64) if wide and r.dtype != dtypes.int64 else r for r in rows], 0)
    if isinstance(paddings, Tensor) and paddings._is_symbolic:  # computed in the graph: read at run time
        if paddings.dtype not in _INDEX_DTYPES:
            raise _invalid("Pad", f"paddings must be an int32 or int64 tensor, got dtype {paddings.dtype.name}")
        array = paddings
    else:
        array = _int_array(paddings, "Pad", "paddings", _INVALID)
        if array.ndim != 2 or array.shape[1] != 2:
            raise _invalid("Pad", f"paddings must be a matrix with 2 columns, got shape {list(array.shape)}")
    if isinstance(constant_values, Tensor):
        value = float(_concrete(constant_values, "Pad", "constant_values").numpy())
    elif np.ndim(constant_values) == 0 and constant_values == 0:
        value = 0.0  # TF's plain Pad: a zero of any type pads any dtype (bool too)
    else:
        value = float(convert_to_tensor(constant_values, dtype=tensor.dtype).numpy())  # TypeError: 1.5 for ints
    return _Pad(tensor, array, value, upper)


def broadcast_to(input, shape, name=None):  # noqa: A002 - TF's name
    return _BroadcastTo(input, _shape_operand(shape, "BroadcastTo", "shape"))


def shape(input, out_type=dtypes.int32, name=None):  # noqa: A002 - TF's name
    return _Shape(input, dtypes.as_dtype(out_type))


def shape_n(input, out_type=dtypes.int32, name=None):  # noqa: A002 - TF's name
    """The shapes of a list of tensors, as a list of 1-D tensors (one ShapeN node)."""
    values = list(input) if isinstance(input, (list, tuple)) else None
    if not values:
        raise ValueError(f"shape_n: expected a non-empty list of tensors, got {input!r}")
    return list(_ShapeN(values, dtypes.as_dtype(out_type)))


def size(input, out_type=dtypes.int32, name=None):  # noqa: A002 - TF's name
    return _Size(input, dtypes.as_dtype(out_type))


def rank(input, name=None):  # noqa: A002 - TF's name
    return _Rank(input)


def identity(input, name=None):  # noqa: A002 - TF's name
    return _Identity(input)


def identity_n(input, name=None):  # noqa: A002 - TF's name
    """An Identity of each tensor of the list, as TensorFlow's IdentityN."""
    return [_Identity(t) for t in input]


def bitcast(input, type, name=None):  # noqa: A002 - TF's names
    """The same bytes read as another numeric dtype, without a copy: a narrower ``type`` adds a last dim
    of size in/out, a wider one consumes a last dim of size out/in."""
    return _Bitcast(convert_to_tensor(input), dtypes.as_dtype(type))


# ---- indexing ---------------------------------------------------------------------------------------


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    return _Slice(input_, _shape_operand(begin, "Slice", "begin"), _shape_operand(size, "Slice", "size"))


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, name=None):
    begin = _shape_operand(begin, "StridedSlice", "begin")
    if strides is None:
        strides = _OnesLike(begin) if isinstance(begin, Tensor) else [1] * len(begin)
    strides = _shape_operand(strides, "StridedSlice", "strides")
    return _StridedSlice(input_, begin, _shape_operand(end, "StridedSlice", "end"), strides, begin_mask, end_mask,
                         ellipsis_mask, new_axis_mask, shrink_axis_mask)


_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
                     "tf.int32/tf.int64 tensors are valid indices")
_SLICE_DTYPES = (dtypes.int16, dtypes.int32, dtypes.int64)


def _index(item):
    """An index or slice bound as an int: Python and NumPy ints (bools too, as in TF) or int scalar tensors.
    A graph tensor stays a tensor: the slice spec then becomes a tensor computed in the graph."""
    if isinstance(item, numbers.Integral):
        return int(item)
    if isinstance(item, Tensor):
        ok = item.shape.rank in (0, None) and item.dtype in _SLICE_DTYPES
    else:
        ok = isinstance(item, np.ndarray) and item.ndim == 0 and item.dtype.kind in "iu"
    if not ok:
        raise TypeError(f"{_SLICE_TYPE_ERROR}, got {item!r}")
    if isinstance(item, Tensor) and item._is_symbolic:
        return item if item.dtype != dtypes.int16 else _Cast(item, dtypes.int32)
    return int(item)


def _is_bool_mask(key):
    return (isinstance(key, bool) or (isinstance(key, Tensor) and key.dtype == dtypes.bool)
            or (isinstance(key, np.ndarray) and key.dtype == np.bool_))


def _slice_helper(tensor, key):
    """``tensor[key]`` with TensorFlow's rules: ints, slices (with steps), ``...`` and ``None``; a top-level
    list is read as a tuple; a top-level bool tensor or array is a ``boolean_mask``."""
    if _is_bool_mask(key):
        return boolean_mask(tensor, key)
    if not isinstance(key, (list, tuple)):
        key = (key,)
    if key and all(isinstance(item, bool) for item in key):
        # TF packs the indices into one tensor, which is then bool and not a valid index.
        raise _invalid("StridedSlice", f"indices must be integers, got booleans {list(key)}")
    begin, end, strides = [], [], []
    begin_mask = end_mask = ellipsis_mask = new_axis_mask = shrink_axis_mask = 0
    for position, item in enumerate(key):
        bit = 1 << position
        if isinstance(item, builtins.slice):
            begin.append(0 if item.start is None else _index(item.start))
            end.append(0 if item.stop is None else _index(item.stop))
            strides.append(1 if item.step is None else _index(item.step))  # 0: StridedSlice's error
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
            i = _index(item)
            begin.append(i)
            end.append(i + 1)  # for a graph tensor, an Add in the graph
            strides.append(1)
            shrink_axis_mask |= bit
    spec = [begin, end, strides]
    if any(isinstance(v, Tensor) for part in spec for v in part):
        spec = [_pack_ints(part, "StridedSlice", what) for part, what in zip(spec, ("begin", "end", "strides"))]
    return _StridedSlice(tensor, *spec, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """The slices of ``tensor`` (from ``axis``) where the bool ``mask`` is True, flattened into one axis."""
    tensor = _tensor(tensor)
    mask = convert_to_tensor(mask, dtype=dtypes.bool)
    k = mask.ndim
    if k == 0:
        raise ValueError("boolean_mask: mask cannot be scalar.")
    axis = 0 if axis is None else _to_int(axis, "boolean_mask", "axis")
    if axis < 0:
        axis += tensor.ndim
    dims = tensor.shape.as_list()
    masked = dims[axis:axis + k]
    mask_dims = mask.shape.as_list()
    if len(masked) != len(mask_dims) or any(d is not None and m is not None and d != m
                                            for d, m in zip(masked, mask_dims)):
        raise ValueError(f"boolean_mask: shapes {tuple(masked)} and {tuple(mask_dims)} are incompatible")
    # A dimension unknown while tracing in one of them may be known in the other.
    masked = [d if d is not None else m for d, m in zip(masked, mask_dims)]
    size = None if None in masked else int(np.prod(masked))
    target = dims[:axis] + [size] + dims[axis + k:]
    if sum(d is None for d in target) > 1:
        # Several dims unknown while tracing: the target shape is computed from the tensor's shape at run time.
        shape = _Shape(tensor, dtypes.int32)
        target = [(shape[i] if d is None else d) for i, d in enumerate(dims[:axis])] + [-1] + \
                 [(shape[axis + k + i] if d is None else d) for i, d in enumerate(dims[axis + k:])]
        flat = _Reshape(tensor, _pack_ints(target, "Reshape", "shape"))
    else:
        flat = _Reshape(tensor, [-1 if d is None else d for d in target])
    indices = _Squeeze(_Where(_Reshape(mask, [-1])), [1])
    return _GatherV2(flat, indices, axis, 0)


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of params along axis (default: batch_dims) at int16/int32/int64 indices."""
    indices = _tensor(indices)
    if indices.dtype == dtypes.int16:  # TF accepts int16; the op takes int32 and int64
        indices = _Cast(indices, dtypes.int32)
    batch_dims = _to_int(batch_dims, "GatherV2", "batch_dims")
    if getattr(params, "_ember_variable", False) and batch_dims == 0 and (axis is None or _is_zero(axis)):
        # TensorFlow's gather of a variable on axis 0 is its sparse_read: the variable's gradient is an
        # IndexedSlices (Note [Sparse reads] in backprop.py).
        return params.sparse_read(indices)
    axis = batch_dims if axis is None else _shape_operand(axis, "GatherV2", "axis", _INVALID, scalar=True)
    return _GatherV2(params, indices, axis, batch_dims)


def _is_zero(axis):
    """Whether a gather axis is known to be 0 now (a Python or NumPy int, or a concrete tensor)."""
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return axis == 0
    if isinstance(axis, Tensor) and not axis._is_symbolic and axis.dtype.is_integer and axis.shape.rank == 0:
        return int(axis.numpy()) == 0
    return False


def where(condition, x=None, y=None, name=None):
    """With x and y: elements of x where condition else y (broadcast). Alone: int64 coordinates of the
    true elements."""
    if x is None and y is None:
        return _Where(condition)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    # TF's rule for matching inputs: a tensor fixes the dtype, else the first value does; the other value
    # must convert to it exactly (TypeError for where(c, 1, 0.5)).
    if isinstance(x, Tensor):
        y = y if isinstance(y, Tensor) else convert_to_tensor(y, dtype=x.dtype)
    elif isinstance(y, Tensor):
        x = convert_to_tensor(x, dtype=y.dtype)
    else:
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype=x.dtype)
    return _SelectV2(convert_to_tensor(condition, dtype=dtypes.bool), x, y)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """Like tf.one_hot: the dtype is ``dtype``, else on_value's or off_value's, else float32; they must agree."""
    depth = _shape_operand(depth, "OneHot", "depth", TypeError, scalar=True)
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    on = None if on_value is None else _tensor(on_value, dtype)
    off = None if off_value is None else _tensor(off_value, dtype)
    for value, what in ((on, "on_value"), (off, "off_value")):
        if value is not None and dtype is not None and value.dtype != dtype:
            raise TypeError(f"OneHot: dtype {value.dtype.name} of {what} does not match dtype parameter "
                            f"{dtype.name}")
    if dtype is None:
        dtype = on.dtype if on is not None else off.dtype if off is not None else dtypes.float32
    on = convert_to_tensor(1, dtype=dtype) if on is None else on  # TypeError for bool, as TF
    off = convert_to_tensor(0, dtype=dtype) if off is None else off
    if on.dtype != off.dtype:
        raise TypeError(f"OneHot: dtype {on.dtype.name} of on_value does not match dtype {off.dtype.name} of "
                        "off_value")
    return _OneHot(indices, depth, on, off, -1 if axis is None else _to_int(axis, "OneHot", "axis"))


# ---- creation ---------------------------------------------------------------------------------------


def fill(dims, value, name=None):
    return _Fill(_shape_operand(dims, "Fill", "dims"), value)


def zeros(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype)
    zero = b"" if dtype == dtypes.string else False if dtype.is_bool else 0  # the dtype's zero
    value = convert_to_tensor(zero, dtype=dtype)
    return _Fill(_shape_operand(shape, "Fill", "shape", TypeError, vector=True), value)


def ones(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype)
    value = convert_to_tensor(True if dtype.is_bool else 1, dtype=dtype)
    return _Fill(_shape_operand(shape, "Fill", "shape", TypeError, vector=True), value)


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
    rows_cols = [num_rows, num_rows if num_columns is None else num_columns]
    for v in rows_cols:
        if not (isinstance(v, numbers.Integral) or (isinstance(v, Tensor) and v.dtype in _INDEX_DTYPES)):
            raise TypeError("Eye: arguments `num_rows` and `num_columns` must be positive integer values. "
                            f"Received: num_rows={num_rows}, num_columns={num_columns}")
    batch = [] if batch_shape is None else _int_list(batch_shape, "Eye", "batch_shape", TypeError)
    return _Eye(int(rows_cols[0]), int(rows_cols[1]), batch, dtypes.as_dtype(dtype))


_RANGE_DTYPE_ORDER = [dtypes.int32, dtypes.int64, dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """start, start + delta, ... below limit; ``range(n)`` counts from 0.

    TF's dtype rule: each bound converts on its own (Python ints to int32, floats to float32, NumPy and tensors
    keep theirs) and the result takes the widest of int32 < int64 < float16 < bfloat16 < float32 < float64.
    With ``dtype``, Python bounds must convert to it exactly (``range(5.5, dtype=tf.int32)`` is a TypeError)."""
    if limit is None:
        start, limit = 0, start
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    args = [v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype) for v in (start, limit, delta)]
    if dtype is None:
        for arg in args:
            if arg.dtype not in _RANGE_DTYPE_ORDER:
                raise TypeError(f"Range: bounds must be int32, int64 or floating, got {arg.dtype.name}")
        dtype = max((arg.dtype for arg in args), key=_RANGE_DTYPE_ORDER.index)
    for arg, what in zip(args, ("start", "limit", "delta")):
        if arg.shape.rank not in (None, 0):
            raise _invalid("Range", f"{what} must be a scalar, got shape {arg.shape.as_list()}")
    # The bounds are inputs of the op (a graph value such as tf.shape(x)[0] too), cast as TensorFlow casts them.
    return _Range(*[arg if arg.dtype == dtype else _Cast(arg, dtype) for arg in args])


def linspace(start, stop, num, name=None, axis=0):
    """num evenly spaced values from start to stop, inclusive. Integer bounds give float64, as in TF; N-D
    bounds give their shape with a new axis ``axis`` of length num."""
    start = _tensor(start)
    stop = stop if isinstance(stop, Tensor) else convert_to_tensor(stop, dtype=start.dtype)
    if isinstance(num, Tensor) and not num.dtype.is_integer or isinstance(num, (float, np.floating)):
        raise TypeError(f"LinSpace: num must be an integer, got {num!r}")
    num = _to_int(num, "LinSpace", "num")
    if num < 0:
        raise _invalid("LinSpace", f"num must be >= 0, got {num}")
    if start.dtype.is_integer:
        start, stop = _Cast(start, dtypes.float64), _Cast(stop, dtypes.float64)
    if not start.dtype.is_floating:
        raise _invalid("LinSpace", f"start and stop must be floating or integer, got {start.dtype.name}")
    start_dims, stop_dims = start.shape.as_list(), stop.shape.as_list()
    if None in start_dims or None in stop_dims:
        # Dimensions unknown while tracing: broadcast with the ops (x * ones_like(y)) rather than BroadcastTo,
        # whose shape is an attribute; only the static rank is needed below.
        start, stop = start * _OnesLike(stop), stop * _OnesLike(start)
        shape = start.shape.as_list()
    else:
        shape = list(np.broadcast_shapes(tuple(start_dims), tuple(stop_dims)))
    axis = _to_int(axis, "LinSpace", "axis")
    rank = len(shape) + 1
    if not -rank <= axis < rank:
        raise _invalid("LinSpace", f"axis {axis} is out of range for a result of rank {rank} "
                                   f"(expected an axis in [{-rank}, {rank}))")
    if not shape and num > 0:
        return _LinSpace(start, stop, num)
    if None not in shape:
        start, stop = _BroadcastTo(start, shape), _BroadcastTo(stop, shape)
    return _linspace_nd(start, stop, num, axis % rank)


def _linspace_nd(start, stop, num, axis):
    """TF's linspace_nd: start + delta * i along a new axis, with the exact endpoints concatenated."""
    rank = start.ndim + 1
    first = _ExpandDims(start, axis)
    last = _ExpandDims(stop, axis)
    delta = (last - first) / _Cast(convert_to_tensor(builtins.max(num - 1, 1)), start.dtype)
    steps_shape = [1] * rank
    steps_shape[axis] = builtins.max(num - 2, 0)
    steps = _Reshape(range(1, builtins.max(num - 1, 1), dtype=start.dtype), steps_shape)
    joined = _ConcatV2([first, first + delta * steps, last], axis)
    size = [-1 if d is None else d for d in joined.shape.as_list()]  # -1: to the end (unknown while tracing)
    size[axis] = num
    return _Slice(joined, [0] * rank, size)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """min(max(t, clip_value_min), clip_value_max); Python bounds must convert exactly to t's dtype. An
    IndexedSlices gives one with its values clipped, as TensorFlow's."""
    if getattr(t, "_ember_indexed_slices", False):
        from ember.framework.indexed_slices import IndexedSlices

        return IndexedSlices(clip_by_value(t.values, clip_value_min, clip_value_max), t.indices, t.dense_shape)
    t = _tensor(t)
    bounds = [b if isinstance(b, Tensor) else convert_to_tensor(b, dtype=t.dtype)
              for b in (clip_value_min, clip_value_max)]
    return _ClipByValue(t, bounds[0], bounds[1])


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums the slices of data whose segment_ids are equal: the result has num_segments rows (a row no id
    names is zeros) and rows with a negative id are dropped. segment_ids' shape is a prefix of data's."""
    segment_ids = _tensor(segment_ids)
    if segment_ids.dtype not in _INDEX_DTYPES:
        raise TypeError(f"unsorted_segment_sum: segment_ids must be int32 or int64, got {segment_ids.dtype.name}")
    num_segments = _shape_operand(num_segments, "UnsortedSegmentSum", "num_segments", _INVALID, scalar=True)
    return _UnsortedSegmentSum(data, segment_ids, num_segments)


newaxis = None
