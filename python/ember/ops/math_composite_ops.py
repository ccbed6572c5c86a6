"""TensorFlow math helpers that are compositions of existing ops (no registry row of their own):
``tf.truncatediv``, ``tf.math.nextafter``, ``tf.saturate_cast``, ``tf.unravel_index``, ``tf.reverse_sequence``...

Each follows TensorFlow 2.21's semantics as measured by running it (tests/python/test_api_gaps_math.py);
gradients come from the ops they are built of. Where TensorFlow's own op would reject an input (a dtype it
does not list, an index out of range) the error is raised here, naming TensorFlow's op."""

import functools

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.ops import array_ops, math_ops
from ember.ops.no_nan_ops import divide_no_nan

_InvertPermutation = _C.op("InvertPermutation")

_INTEGER = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8)
_REAL_FLOAT = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def _t(x, dtype_hint=None):
    if isinstance(x, Tensor):
        return x
    if dtype_hint is not None and isinstance(x, (list, tuple)) and len(x) == 0:
        return convert_to_tensor(x, dtype=dtype_hint)  # convert_to_tensor's hint loses to [] -> float32
    return convert_to_tensor(x, dtype_hint=dtype_hint)


def _check_dtype(op, x, allowed, what="x"):
    if x.dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise errors.InvalidArgumentError(None, None, f"{op}: {what} must be one of {names}; got {x.dtype.name}")


def _binary_operands(op, x, y):
    x = _t(x)
    y = _t(y, dtype_hint=x.dtype) if not isinstance(y, Tensor) else y
    if not isinstance(x, Tensor) or x.dtype != y.dtype:
        x = _t(x, dtype_hint=y.dtype)
    if x.dtype != y.dtype:
        raise errors.InvalidArgumentError(None, None, f"{op}: both inputs must have one dtype; got {x.dtype.name} "
                                                      f"and {y.dtype.name}")
    return x, y


def truncatediv(x, y, name=None):
    """x / y rounded toward zero (C's integer division); for floats, trunc(x / y)."""
    x, y = _binary_operands("TruncateDiv", x, y)
    _check_dtype("TruncateDiv", x, _INTEGER + _REAL_FLOAT)
    if x.dtype.is_floating:
        q = x / y
        return array_ops.where(q < 0, math_ops.ceil(q), math_ops.floor(q))
    q = math_ops.floordiv(x, y)
    if x.dtype == dtypes.uint8:
        return q
    # Floor and truncation differ by one where the signs differ and the division is not exact.
    inexact = math_ops.not_equal(q * y, x)
    signs_differ = math_ops.not_equal(x < 0, y < 0)
    return array_ops.where(math_ops.logical_and(inexact, signs_differ), q + 1, q)


def truncatemod(x, y, name=None):
    """The remainder of ``truncatediv``: it has x's sign (C's ``%``; ``fmod`` for floats)."""
    x, y = _binary_operands("TruncateMod", x, y)
    _check_dtype("TruncateMod", x, (dtypes.int32, dtypes.int64) + _REAL_FLOAT)
    if x.dtype.is_floating:
        # floormod of two non-negative operands is fmod exactly; fmod takes the dividend's sign.
        m = math_ops.floormod(math_ops.abs(x), math_ops.abs(y))
        return array_ops.where(x < 0, -m, m)
    return x - truncatediv(x, y) * y


def reciprocal_no_nan(x, name=None):
    """1 / x, and 0 where x is 0."""
    x = _t(x)
    _check_dtype("DivNoNan", x, _REAL_FLOAT + (dtypes.complex64, dtypes.complex128))
    return divide_no_nan(array_ops.ones_like(x), x)


def _numeric_vector(x, fn):
    x = _t(x)
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError(f"Expected x to be numeric, instead found: {x!r}")
    return array_ops.reshape(x, [-1])


def _pairwise_all(x, compare):
    flat = x
    if flat.shape[0] is not None and flat.shape[0] < 2:
        return convert_to_tensor(True)
    return math_ops.reduce_all(compare(flat[:-1], flat[1:]))


def is_non_decreasing(x, name=None):
    """True when every element of x (flattened) is <= the next; an empty or one-element x is."""
    return _pairwise_all(_numeric_vector(x, "is_non_decreasing"), math_ops.less_equal)


def is_strictly_increasing(x, name=None):
    """True when every element of x (flattened) is < the next; an empty or one-element x is."""
    return _pairwise_all(_numeric_vector(x, "is_strictly_increasing"), math_ops.less)


def zero_fraction(value, name=None):
    """The fraction of zeros in value, a float32 scalar (NaN for an empty value), as num_zero / size in
    float32 from int64 counts, TensorFlow's order."""
    value = _t(value)
    size = array_ops.size(value, out_type=dtypes.int64)
    nonzero = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(value, array_ops.zeros_like(value)),
                                                dtypes.int64))
    return math_ops.cast(size - nonzero, dtypes.float32) / math_ops.cast(size, dtypes.float32)


def invert_permutation(x, name=None):
    """y with y[x[i]] = i, for x a permutation of 0..n-1 (int32 or int64)."""
    return _InvertPermutation(_t(x, dtype_hint=dtypes.int32))


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The element-wise sum of a list of tensors of one dtype and shape (``add_n``, TensorFlow's checks)."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and shape")
    inputs = [_t(x) for x in inputs]
    if not all(x.dtype == inputs[0].dtype for x in inputs):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and shape")
    merged = TensorShape(None)
    for x in inputs:
        merged = merged.merge_with(x.shape)
    if shape is not None:
        TensorShape(shape).merge_with(merged)
    if tensor_dtype is not None and dtypes.as_dtype(tensor_dtype) != inputs[0].dtype:
        raise TypeError(f"The `tensor_dtype` argument is {dtypes.as_dtype(tensor_dtype)!r}, but `input` is of type "
                        f"{inputs[0].dtype!r}. These must be equal. Try casting the input to the desired type.")
    return math_ops.add_n(inputs)


def is_inf(x, name=None):
    """True where x is +inf or -inf."""
    x = _t(x)
    _check_dtype("IsInf", x, _REAL_FLOAT)
    return math_ops.equal(math_ops.abs(x), convert_to_tensor(np.inf, dtype=x.dtype))


_BITS = {dtypes.float32: dtypes.int32, dtypes.float64: dtypes.int64}


def nextafter(x1, x2, name=None):
    """The next representable value after x1 toward x2 (float32 or float64), computed on the bits so that
    subnormal results are exact: a step of one unit in the last place away from or toward zero."""
    x1, x2 = _binary_operands("NextAfter", x1, x2)
    _check_dtype("NextAfter", x1, (dtypes.float64, dtypes.float32), "x1")
    x1, x2 = x1 + array_ops.zeros_like(x2), x2 + array_ops.zeros_like(x1)  # broadcast
    int_type = _BITS[x1.dtype]
    bits = array_ops.bitcast(x1, int_type)
    away_from_zero = math_ops.equal(x1 < x2, x1 > 0)
    stepped = array_ops.bitcast(array_ops.where(away_from_zero, bits + 1, bits - 1), x1.dtype)
    # From zero the first step is the smallest subnormal carrying x2's sign.
    tiny = array_ops.bitcast(array_ops.ones_like(bits), x1.dtype)
    from_zero = array_ops.where(x2 > 0, tiny, -tiny)
    result = array_ops.where(math_ops.equal(x1, 0), from_zero, stepped)
    result = array_ops.where(math_ops.equal(x1, x2), x2, result)
    nan = math_ops.logical_or(math_ops.not_equal(x1, x1), math_ops.not_equal(x2, x2))
    return array_ops.where(nan, x1 + x2, result)


def unravel_index(indices, dims, name=None):
    """The coordinates of flat indices in an array of shape dims: shape [len(dims)] + indices.shape."""
    indices = _t(indices)
    dims = _t(dims, dtype_hint=indices.dtype)
    for what, t in (("indices", indices), ("dims", dims)):
        if t.dtype not in (dtypes.int32, dtypes.int64):
            raise errors.InvalidArgumentError(None, None, f"UnravelIndex: {what} must be int32 or int64; got "
                                                          f"{t.dtype.name}")
    if indices.dtype != dims.dtype:
        raise errors.InvalidArgumentError(None, None, f"UnravelIndex: indices and dims must have one dtype; got "
                                                      f"{indices.dtype.name} and {dims.dtype.name}")
    if indices.shape.rank is not None and indices.shape.rank > 1:
        raise errors.InvalidArgumentError(None, None, f"UnravelIndex: The indices can only be scalar or vector, got "
                                                      f"shape {indices.shape}")
    if dims.shape.rank is not None and dims.shape.rank != 1:
        raise errors.InvalidArgumentError(None, None, f"UnravelIndex: The dims can only be 1-D, got shape "
                                                      f"{dims.shape}")
    if indices.shape.rank == 1 and indices.shape[0] == 0:
        raise errors.InvalidArgumentError(None, None, "UnravelIndex: received empty tensor indices")
    if not _C.in_trace():
        d, i = dims.numpy(), indices.numpy()
        if (d < 0).any():
            raise errors.InvalidArgumentError(None, None, f"UnravelIndex: Input dims cannot be negative; got {d}")
        if (d == 0).any():
            raise errors.InvalidArgumentError(None, None, f"UnravelIndex: Input dims cannot contain a dim of zero; "
                                                          f"got {d}")
        if i.size and (i >= np.prod(d, dtype=np.float64)).any():
            raise errors.InvalidArgumentError(None, None, f"UnravelIndex: index is out of bound as with dims {d}; "
                                                          f"got {i}")
    # strides[k] = prod(dims[k+1:]); coordinate k = (index / strides[k]) % dims[k] in C's truncating
    # arithmetic: TensorFlow's kernel takes a negative index without complaint and answers this way.
    strides = math_ops.cumprod(dims, exclusive=True, reverse=True)
    expand = array_ops.reshape(strides, [-1] + [1] * indices.shape.rank)
    dims_col = array_ops.reshape(dims, [-1] + [1] * indices.shape.rank)
    return truncatemod(truncatediv(array_ops.expand_dims(indices, 0), expand), dims_col)


def _limits(in_dtype, out_dtype):
    """The clamp bounds, in in_dtype, that keep a cast to out_dtype in range: each is the tighter of the two
    dtypes' limits, moved one step toward zero when rounding into in_dtype took it past out_dtype's limit
    (float32 cannot hold 2**31 - 1). Compared in the wider NumPy type, as TensorFlow compares them."""
    np_in = in_dtype.as_numpy_dtype
    try:
        wide = np.promote_types(np_in, out_dtype.as_numpy_dtype)
    except TypeError:  # bfloat16 has no NumPy promotion
        wide = np.float64
    with np.errstate(over="ignore"):
        low = np_in(np.maximum(in_dtype.min, out_dtype.min))
        high = np_in(np.minimum(float(in_dtype.max), float(out_dtype.max)))
    if np.array(low, wide) < np.array(out_dtype.min, wide):
        low = np.nextafter(low, np_in(0), dtype=np_in)
    if np.array(high, wide) > np.array(out_dtype.max, wide):
        high = np.nextafter(high, np_in(0), dtype=np_in)
    return low, high


def saturate_cast(value, dtype, name=None):
    """cast(value, dtype) with values clamped to dtype's range first (a complex value keeps only its real
    part when dtype is real; a complex dtype clamps both parts)."""
    value = _t(value)
    dtype = dtypes.as_dtype(dtype)
    in_dtype = value.dtype
    if in_dtype == dtypes.bool or dtype == dtypes.bool or in_dtype == dtypes.string or dtype == dtypes.string:
        raise TypeError(f"saturate_cast: cannot find the limits of {in_dtype!r} and {dtype!r}")
    if in_dtype.is_complex:
        if dtype.is_complex:
            real_in, real_out = in_dtype.real_dtype, dtype.real_dtype
            if real_in.min < real_out.min or real_in.max > real_out.max:
                re = array_ops.clip_by_value(math_ops.real(value), real_out.min, real_out.max)
                im = array_ops.clip_by_value(math_ops.imag(value), real_out.min, real_out.max)
                value = math_ops.complex(re, im)
            return math_ops.cast(value, dtype)
        value = math_ops.real(value)
        in_dtype = value.dtype
    low, high = _limits(in_dtype, dtype.real_dtype if dtype.is_complex else dtype)
    value = array_ops.clip_by_value(value, convert_to_tensor(low, dtype=in_dtype),
                                    convert_to_tensor(high, dtype=in_dtype))
    return math_ops.cast(value, dtype)


def broadcast_static_shape(shape_x, shape_y):
    """The TensorShape that shapes x and y broadcast to; ValueError when they do not."""
    x, y = TensorShape(shape_x), TensorShape(shape_y)
    if x.rank is None or y.rank is None:
        return TensorShape(None)
    out = []
    for i in range(1, max(x.rank, y.rank) + 1):
        a = x.as_list()[-i] if i <= x.rank else 1
        b = y.as_list()[-i] if i <= y.rank else 1
        if a == 1:
            out.append(b)
        elif b == 1 or b is None and a is not None:
            out.append(a)
        elif a is None:
            out.append(b if b is not None and b != 1 else None)
        elif a == b:
            out.append(a)
        else:
            raise ValueError(f"Incompatible shapes for broadcasting. Two shapes are compatible if for each "
                             f"dimension pair they are either equal or one of them is 1. Received: {x} and {y}.")
    return TensorShape(out[::-1])


def broadcast_dynamic_shape(shape_x, shape_y):
    """The shape (a 1-D int tensor) that shape tensors x and y broadcast to."""
    x = _t(shape_x, dtype_hint=dtypes.int32)
    y = _t(shape_y, dtype_hint=x.dtype)
    if x.dtype not in (dtypes.int32, dtypes.int64) or x.dtype != y.dtype:
        raise errors.InvalidArgumentError(None, None, f"BroadcastArgs: shapes must be int32 or int64 of one "
                                                      f"dtype; got {x.dtype.name} and {y.dtype.name}")
    for t in (x, y):
        if t.shape.rank != 1:
            raise errors.InvalidArgumentError(None, None, f"BroadcastArgs: a shape must be a vector; got shape "
                                                          f"{t.shape}")
    if not _C.in_trace():
        try:
            out = np.broadcast_shapes(tuple(x.numpy()), tuple(y.numpy()))
        except ValueError:
            raise errors.InvalidArgumentError(None, None, f"BroadcastArgs: Incompatible shapes: {x.numpy()} vs. "
                                                          f"{y.numpy()}") from None
        return convert_to_tensor(np.array(out, x.dtype.as_numpy_dtype).reshape(-1))
    # In a trace: left-pad both with ones to one length, then take the non-1 size of each pair.
    n = math_ops.maximum(array_ops.size(x), array_ops.size(y))
    px = array_ops.concat([array_ops.ones([n - array_ops.size(x)], x.dtype), x], 0)
    py = array_ops.concat([array_ops.ones([n - array_ops.size(y)], x.dtype), y], 0)
    return array_ops.where(math_ops.equal(px, 1), py, px)


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=dtypes.int32, name=None):
    """The bin index of each value among nbins equal bins over value_range (values below go to bin 0,
    above to the last). The result is int32 whatever ``dtype`` says, as TensorFlow 2.21's is."""
    values = _t(values)
    value_range = _t(value_range)
    nbins_t = _t(nbins, dtype_hint=dtypes.int32)
    if nbins_t.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"histogram_fixed_width_bins: nbins must be an integer; got {nbins!r}")
    if not _C.in_trace() and int(nbins_t.numpy()) <= 0:
        raise errors.InvalidArgumentError(None, None, f"histogram_fixed_width_bins: nbins must be > 0; got "
                                                      f"{int(nbins_t.numpy())}")
    shape = array_ops.shape(values)
    flat = array_ops.reshape(values, [-1])
    nbins_float = math_ops.cast(nbins_t, values.dtype)
    scaled = math_ops.truediv(flat - value_range[0], value_range[1] - value_range[0])
    indices = math_ops.floor(nbins_float * scaled)
    indices = array_ops.clip_by_value(indices, array_ops.zeros_like(nbins_float), nbins_float - 1)
    return array_ops.reshape(math_ops.cast(indices, dtypes.int32), shape)


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None):  # noqa: A002 - TF's name
    """Reverses the first seq_lengths[b] elements along seq_axis of each slice b along batch_axis."""
    x = _t(input)
    lengths = _t(seq_lengths, dtype_hint=dtypes.int64)
    if lengths.dtype not in (dtypes.int32, dtypes.int64):
        raise errors.InvalidArgumentError(None, None, f"ReverseSequence: seq_lengths must be int32 or int64; got "
                                                      f"{lengths.dtype.name}")
    rank = x.shape.rank
    batch_axis = 0 if batch_axis is None else batch_axis
    if seq_axis is None:
        raise ValueError("reverse_sequence: seq_axis is required")
    for what, a in (("seq_axis", seq_axis), ("batch_axis", batch_axis)):
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"ReverseSequence: {what} must be an int; got {a!r}")
        if not -rank <= a < rank:
            raise errors.InvalidArgumentError(None, None, f"ReverseSequence: {what} {a} is out of range for an "
                                                          f"input of rank {rank}")
    seq_axis, batch_axis = int(seq_axis) % rank, int(batch_axis) % rank
    if seq_axis == batch_axis:
        raise errors.InvalidArgumentError(None, None, f"ReverseSequence: seq_axis == batch_axis == {seq_axis}")
    if lengths.shape.rank != 1:
        raise errors.InvalidArgumentError(None, None, f"ReverseSequence: seq_lengths must be 1-D; got shape "
                                                      f"{lengths.shape}")
    batch, steps = x.shape[batch_axis], x.shape[seq_axis]
    if batch is not None and lengths.shape[0] is not None and lengths.shape[0] != batch:
        raise errors.InvalidArgumentError(None, None, f"ReverseSequence: len(seq_lengths) != input.dims({batch_axis})"
                                                      f": {lengths.shape[0]} vs. {batch}")
    if not _C.in_trace() and steps is not None:
        n = lengths.numpy()
        if (n < 0).any() or (n > steps).any():
            raise errors.InvalidArgumentError(None, None, f"ReverseSequence: seq_lengths must be in [0, {steps}]; "
                                                          f"got {n}")
    # Batch to axis 0 and sequence to axis 1, gather each row's reversed prefix, and move them back.
    order = [batch_axis, seq_axis] + [a for a in range(rank) if a not in (batch_axis, seq_axis)]
    moved = array_ops.transpose(x, order)
    t = array_ops.range(array_ops.shape(moved, out_type=lengths.dtype)[1], dtype=lengths.dtype)[None, :]
    n = lengths[:, None]
    index = array_ops.where(t < n, n - 1 - t, t)
    gathered = array_ops.gather(moved, index, axis=1, batch_dims=1)
    return array_ops.transpose(gathered, [order.index(a) for a in range(rank)])


def grad_pass_through(f):
    """f with the gradient of the identity: the output's gradient flows to f's inputs unchanged."""
    from ember.backprop import custom_gradient

    @custom_gradient
    def passed(*args, **kwargs):
        def grad(*dys, **grad_kwargs):
            variables = grad_kwargs.get("variables")
            if variables is not None:
                return dys, [None] * len(variables)
            return dys

        return f(*args, **kwargs), grad

    def call(*args, **kwargs):
        # A variable argument is read here, outside the custom region, so that the gradient reaches it
        # through the read rather than being dropped as a variable f merely uses (TensorFlow's behaviour).
        args = [convert_to_tensor(a) if getattr(a, "_ember_variable", False) else a for a in args]
        return passed(*args, **kwargs)

    return functools.wraps(f)(call)
