"""TensorFlow's rearrangements between space, depth and batch: ``tf.nn.space_to_depth``/``depth_to_space``
(NHWC, and NCHW, which TensorFlow's CPU kernels lack), ``tf.space_to_batch_nd``/``batch_to_space_nd`` (TF 2's
``tf.space_to_batch``/``tf.batch_to_space``) and ``tf.nn.atrous_conv2d``.

Each is a pad or slice around a reshape-transpose-reshape, so gradients, tracing and batching come from those
ops. Block sizes, paddings and crops must be known while tracing (Python values or eager tensors); a dimension
of the input may be unknown. Errors are TensorFlow's kernels' InvalidArgumentErrors."""

import numpy as np

from ember import errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops
from ember.ops.indexing_ops import _dims  # ints where known, scalar tensors where not

__all__ = ["atrous_conv2d", "batch_to_space", "batch_to_space_nd", "depth_to_space", "space_to_batch",
           "space_to_batch_nd", "space_to_depth"]


def _invalid(op, message):
    return errors.InvalidArgumentError(None, None, f"{op}: {message}")


def _tensor(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _known_ints(value, op, what):
    """value (a list, an array or a tensor known now) as a NumPy int64 array."""
    if isinstance(value, Tensor):
        if value._is_symbolic:
            raise _invalid(op, f"{what} must be known while tracing, got a tensor computed in the graph")
        value = value.numpy()
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise _invalid(op, f"{what} must be integers, got {value!r}")
    return array.astype(np.int64)


def _block_size(block_size, op):
    from ember.ops.nn_conv_ops import _int

    block_size = _int(block_size, f"{op}: block_size")
    if block_size < 2:
        raise _invalid(op, f"Value for attr 'block_size' of {block_size} must be at least minimum 2")
    return block_size


def _nhwc(x, data_format, op):
    """x as NHWC and the function that returns a result to ``data_format``."""
    if x.shape.rank is not None and x.shape.rank != 4:
        raise _invalid(op, f"Input rank should be 4 instead of {x.shape.rank}")
    if data_format == "NHWC":
        return x, lambda y: y
    if data_format == "NCHW":
        return array_ops.transpose(x, [0, 2, 3, 1]), lambda y: array_ops.transpose(y, [0, 3, 1, 2])
    raise _invalid(op, f"data_format must be NHWC or NCHW, got {data_format!r}")


def space_to_depth(input, block_size, data_format="NHWC", name=None):  # noqa: A002 - TensorFlow's name
    """Moves each block_size x block_size spatial block into the depth: [b, h, w, c] ->
    [b, h / bs, w / bs, bs * bs * c], depth ordered (row in block, column in block, channel)."""
    op = "SpaceToDepth"
    bs = _block_size(block_size, op)
    x, back = _nhwc(_tensor(input), data_format, op)
    batch, height, width, depth = _dims(x)
    if isinstance(height, int) and isinstance(width, int) and (height % bs or width % bs):
        raise _invalid(op, f"Image width {width} and height {height} should be divisible by block_size: {bs}")
    y = array_ops.reshape(x, [batch, height // bs, bs, width // bs, bs, depth])
    y = array_ops.transpose(y, [0, 1, 3, 2, 4, 5])
    return back(array_ops.reshape(y, [batch, height // bs, width // bs, depth * bs * bs]))


def depth_to_space(input, block_size, data_format="NHWC", name=None):  # noqa: A002 - TensorFlow's name
    """The inverse of space_to_depth: [b, h, w, bs * bs * c] -> [b, h * bs, w * bs, c]."""
    op = "DepthToSpace"
    bs = _block_size(block_size, op)
    x, back = _nhwc(_tensor(input), data_format, op)
    batch, height, width, depth = _dims(x)
    if isinstance(depth, int) and depth % (bs * bs):
        raise _invalid(op, f"Input depth dimension {depth} should be divisible by: {bs * bs}")
    y = array_ops.reshape(x, [batch, height, width, bs, bs, depth // (bs * bs)])
    y = array_ops.transpose(y, [0, 1, 3, 2, 4, 5])
    return back(array_ops.reshape(y, [batch, height * bs, width * bs, depth // (bs * bs)]))


def _blocks_and_pairs(x, block_shape, pairs, op, what):
    block = _known_ints(block_shape, op, "block_shape").reshape(-1)
    m = block.size
    pairs = _known_ints(pairs, op, what)
    if np.any(block < 1):
        raise _invalid(op, f"All values in block_shape must be positive, got value, {block.tolist()}")
    if pairs.shape != (m, 2):
        raise _invalid(op, f"{what} should have shape [{m}, 2] instead of {list(pairs.shape)}")
    if np.any(pairs < 0):
        raise _invalid(op, f"{what.capitalize()} must be non-negative")
    if x.shape.rank is not None and x.shape.rank < m + 1:
        raise _invalid(op, f"input rank should be >= {m + 1} instead of {x.shape.rank}")
    return [int(b) for b in block], [[int(a), int(b)] for a, b in pairs]


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002 - TensorFlow's name
    """Zero-pads the M spatial dimensions after the batch, then moves each block_shape block of them into the
    batch: [b, d1, ..., dM, rest] -> [b * prod(block_shape), (d1 + pads) / bs1, ..., rest]."""
    op = "SpaceToBatchND"
    x = _tensor(input)
    block, paddings = _blocks_and_pairs(x, block_shape, paddings, op, "paddings")
    m = len(block)
    x = array_ops.pad(x, [[0, 0]] + paddings + [[0, 0]] * (x.shape.rank - m - 1))
    dims = _dims(x)
    batch, spatial, rest = dims[0], dims[1:m + 1], dims[m + 1:]
    for i, (d, b) in enumerate(zip(spatial, block)):
        if isinstance(d, int) and d % b:
            raise _invalid(op, f"padded_shape[{i}]={d} is not divisible by block_shape[{i}]={b}")
    split = [batch] + [v for d, b in zip(spatial, block) for v in (d // b, b)] + rest
    y = array_ops.reshape(x, split)
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(2 * m + 1, len(split)))
    y = array_ops.transpose(y, perm)
    return array_ops.reshape(y, [batch * int(np.prod(block))] + [d // b for d, b in zip(spatial, block)] + rest)


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002 - TensorFlow's name
    """The inverse of space_to_batch_nd: moves batch blocks back into the M spatial dimensions, then crops."""
    op = "BatchToSpaceND"
    x = _tensor(input)
    block, crops = _blocks_and_pairs(x, block_shape, crops, op, "crops")
    m = len(block)
    dims = _dims(x)
    batch, spatial, rest = dims[0], dims[1:m + 1], dims[m + 1:]
    count = int(np.prod(block))
    if isinstance(batch, int) and batch % count:
        raise _invalid(op, f"Input batch dimension ({batch}) is not divisible by product of block sizes ({count})")
    y = array_ops.reshape(x, block + [batch // count] + spatial + rest)
    perm = [m] + [v for i in range(m) for v in (m + 1 + i, i)] + list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = array_ops.transpose(y, perm)
    full = [d * b for d, b in zip(spatial, block)]
    y = array_ops.reshape(y, [batch // count] + full + rest)
    for i, (d, (start, end)) in enumerate(zip(full, crops)):
        if isinstance(d, int) and start + end > d:
            raise _invalid(op, f"crops[{i}] = [{start}, {end}] crop more than the {d} elements of dimension {i + 1}")
    if not any(start or end for start, end in crops):
        return y
    return array_ops.slice(y, [0] + [start for start, _ in crops] + [0] * len(rest),
                           [-1] + [d - start - end for d, (start, end) in zip(full, crops)] + [-1] * len(rest))


def space_to_batch(input, block_shape, paddings, name=None):  # noqa: A002 - TensorFlow's name
    """TensorFlow 2's tf.space_to_batch (and tf.nn.space_to_batch): space_to_batch_nd."""
    return space_to_batch_nd(input, block_shape, paddings)


def batch_to_space(input, block_shape, crops, name=None):  # noqa: A002 - TensorFlow's name
    """TensorFlow 2's tf.batch_to_space: batch_to_space_nd."""
    return batch_to_space_nd(input, block_shape, crops)


def atrous_conv2d(value, filters, rate, padding, name=None):
    """conv2d with the filter's taps ``rate`` apart (dilation rate in both spatial dimensions), stride 1."""
    from ember.ops.nn_conv_ops import convolution

    if not isinstance(rate, (Tensor, np.ndarray)):
        if isinstance(rate, bool) or not isinstance(rate, (int, float, np.number)) or not float(rate).is_integer():
            raise TypeError(f"atrous_conv2d: rate must be a positive integer, got {rate!r}")
    if not isinstance(rate, (Tensor, np.ndarray)) and int(rate) < 1:
        raise ValueError(f"all values of `dilation_rate` must be positive. Received: dilation_rate=[{rate} {rate}]")
    return convolution(value, filters, padding=padding, dilations=[int(rate)] * 2)
