"""``tf.nn``'s convolutions and pooling, with TensorFlow's signatures, on the registry's ops (Conv2D, Conv3D,
DepthwiseConv2dNative and their backprops; MaxPool, AvgPool and their 3-D forms).

As in TensorFlow, the Python layer turns strides, dilations and padding given as an int, a spatial list or a
full list into the ops' full-length attributes, and raises ValueError for a malformed one before any op runs;
conv1d is conv2d over a height of 1, conv2d_transpose is Conv2DBackpropInput and separable_conv2d a depthwise
convolution followed by a 1x1 one.
"""

from ember import _C
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops

__all__ = ["avg_pool", "avg_pool1d", "avg_pool2d", "avg_pool3d", "conv1d", "conv1d_transpose", "conv2d",
           "conv2d_transpose", "conv3d", "conv3d_transpose", "conv_transpose", "convolution", "depthwise_conv2d",
           "depthwise_conv2d_native", "max_pool", "max_pool1d", "max_pool2d", "max_pool3d", "pool",
           "separable_conv2d"]

_ops = {name: _C.op(name) for name in (
    "Conv2D", "Conv2DBackpropInput", "Conv3D", "Conv3DBackpropInputV2", "DepthwiseConv2dNative")}


def _int(v, what):
    """An attribute as a Python int; a clear TypeError or ValueError for anything else (an int beyond int64, a
    float, a tensor of the wrong shape)."""
    try:
        if isinstance(v, Tensor):
            v = v.numpy()
        if isinstance(v, (bool, float)) or getattr(v, "dtype", None) is not None and v.dtype.kind not in "iu":
            raise TypeError
        out = int(v)
    except (TypeError, OverflowError) as e:
        raise TypeError(f"{what} must be an int, got {v!r}") from e
    if not -(1 << 63) <= out < (1 << 63):
        raise ValueError(f"{what} is out of the int64 range: {out}")
    return out


def _ints(value, what):
    if isinstance(value, Tensor):
        value = value.numpy()
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return [_int(value, what)]
    return [_int(v, what) for v in value]


def _tensor(x, dtype=None):
    if isinstance(x, Tensor):
        return x
    return convert_to_tensor(x, dtype=dtype)


def _channels_last(data_format, n):
    if data_format is None:
        return True
    data_format = str(data_format)
    if data_format.startswith("NC"):
        return False
    if data_format.startswith("N") and data_format.endswith("C"):
        return True
    raise ValueError(f"`data_format` must be of the form `N...C` or `NC...`. Received: data_format={data_format}")


def _format(n, channels_last):
    spatial = {1: "W", 2: "HW", 3: "DHW"}[n]
    return "N" + spatial + "C" if channels_last else "NC" + spatial


def _sequence(value, n, channels_last, name):
    """TensorFlow's _get_sequence: an int, or a list of 1, n or n + 2 ints, as the n + 2 ints of the op's
    attribute (1 in the batch and channel dimensions)."""
    if value is None:
        value = 1
    value = _ints(value, name)
    if len(value) == n + 2:
        return value
    if len(value) == 1:
        value = value * n
    elif len(value) != n:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2}. Received: {name}={value} of length "
                         f"{len(value)}")
    return [1] + value + [1] if channels_last else [1, 1] + value


def _padding(padding, n, channels_last):
    """(padding, explicit_paddings) for the op: a string, or TensorFlow's list of n + 2 [before, after]
    pairs in the data format's order."""
    if isinstance(padding, str):
        padding = padding.upper()
        if padding not in ("SAME", "VALID"):
            raise ValueError(f"`padding` must be one of 'SAME', 'VALID' or a list of pairs. Received: "
                             f"padding={padding}")
        return padding, []
    try:
        pairs = [_ints(p, "padding") for p in padding]
    except TypeError as e:
        raise ValueError(f"padding must be 'SAME', 'VALID' or a list of {n + 2} [before, after] pairs, got "
                         f"{padding!r}") from e
    if len(pairs) != n + 2 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"When padding is explicit, it must be a list of size {n + 2} of pairs. Received: "
                         f"padding={padding}")
    channel = n + 1 if channels_last else 1
    if pairs[0] != [0, 0] or pairs[channel] != [0, 0]:
        raise ValueError(f"Padding in the batch and channel dimensions must be 0. Received: padding={padding}")
    return "EXPLICIT", [v for p in pairs for v in p]


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):
    """2-D convolution of a 4-D ``input`` by ``filters`` [height, width, in_channels, out_channels]."""
    last = _channels_last(data_format, 2)
    pad, explicit = _padding(padding, 2, last)
    x = _tensor(input)
    return _ops["Conv2D"](x, _tensor(filters, x.dtype), _sequence(strides, 2, last, "strides"), True, pad, explicit,
                          _format(2, last), _sequence(dilations, 2, last, "dilations"))


def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None, name=None):
    """3-D convolution of a 5-D ``input`` by ``filters`` [depth, height, width, in_channels, out_channels]."""
    last = _channels_last(data_format, 3)
    pad, explicit = _padding(padding, 3, last)
    if explicit:
        raise ValueError("conv3d: padding must be 'SAME' or 'VALID' (TensorFlow's Conv3D has no explicit padding)")
    x = _tensor(input)
    return _ops["Conv3D"](x, _tensor(filters, x.dtype), _sequence(strides, 3, last, "strides"), pad,
                          _format(3, last), _sequence(dilations, 3, last, "dilations"))


def _with_height_1(x, last):
    return array_ops.expand_dims(x, 1 if last else 2)


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None, name=None):
    """1-D convolution of a 3-D ``input`` [batch, width, channels] (or NCW): conv2d over a height of 1, as in
    TensorFlow."""
    last = _channels_last(data_format, 1)
    x = _tensor(input)
    w = _tensor(filters, x.dtype)
    if x.shape.rank is not None and x.shape.rank != 3:
        raise ValueError(f"conv1d: input must be 3-D, got shape {x.shape}")
    if w.shape.rank is not None and w.shape.rank != 3:
        raise ValueError(f"conv1d: filters must be 3-D [width, in_channels, out_channels], got shape {w.shape}")
    stride = _sequence(stride, 1, last, "stride")
    dilations = _sequence(dilations, 1, last, "dilations")
    strides2 = stride[:1] + [1] + stride[1:] if last else stride[:2] + [1] + stride[2:]
    dil2 = dilations[:1] + [1] + dilations[1:] if last else dilations[:2] + [1] + dilations[2:]
    if isinstance(padding, str):
        pad2 = padding
    else:
        pairs = [list(p) for p in padding]
        pad2 = pairs[:1] + [[0, 0]] + pairs[1:] if last else pairs[:2] + [[0, 0]] + pairs[2:]
    y = conv2d(_with_height_1(x, last), array_ops.expand_dims(w, 0), strides2, pad2, "NHWC" if last else "NCHW",
               dil2)
    return array_ops.squeeze(y, [1 if last else 2])


def convolution(input, filters, strides=None, padding="VALID", data_format=None, dilations=None, name=None):
    """N-d convolution (N = 1, 2 or 3, from the filter's rank - 2): conv1d, conv2d or conv3d."""
    w = _tensor(filters)
    x = _tensor(input, w.dtype)
    n = (w.shape.rank if w.shape.rank is not None else x.shape.rank) - 2
    if n not in (1, 2, 3):
        raise ValueError(f"`filters` must be 3-D, 4-D or 5-D (1-3 spatial dimensions). Received: filters.shape="
                         f"{w.shape}")
    last = _channels_last(data_format, n)
    if strides is not None and not isinstance(strides, int) and len(strides) not in (1, n):
        raise ValueError(f"strides should be of length {n}. Received: strides={strides}")
    if dilations is not None and not isinstance(dilations, int) and len(dilations) not in (1, n):
        raise ValueError(f"dilations should be of length {n}. Received: dilations={dilations}")
    fmt = _format(n, last)
    if n == 1:
        return conv1d(x, w, strides, padding, fmt, dilations)
    if n == 2:
        return conv2d(x, w, strides, padding, fmt, dilations)
    return conv3d(x, w, strides, padding, fmt, dilations)


def _output_shape(output_shape, n, dtype_like):
    if isinstance(output_shape, Tensor):
        return output_shape
    return convert_to_tensor(_ints(output_shape, "output_shape"), dtype=None)


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC", dilations=None,
                     name=None):
    """The transpose (gradient) of conv2d: Conv2DBackpropInput with ``input`` as out_backprop. ``filters`` is
    [height, width, output_channels, in_channels]."""
    last = _channels_last(data_format, 2)
    pad, explicit = _padding(padding, 2, last)
    x = _tensor(input)
    return _ops["Conv2DBackpropInput"](_output_shape(output_shape, 2, x), _tensor(filters, x.dtype), x,
                                       _sequence(strides, 2, last, "strides"), True, pad, explicit, _format(2, last),
                                       _sequence(dilations, 2, last, "dilations"))


def conv3d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NDHWC", dilations=None,
                     name=None):
    """The transpose of conv3d: Conv3DBackpropInputV2 with ``input`` as out_backprop."""
    last = _channels_last(data_format, 3)
    pad, explicit = _padding(padding, 3, last)
    if explicit:
        raise ValueError("conv3d_transpose: padding must be 'SAME' or 'VALID'")
    x = _tensor(input)
    return _ops["Conv3DBackpropInputV2"](_output_shape(output_shape, 3, x), _tensor(filters, x.dtype), x,
                                         _sequence(strides, 3, last, "strides"), pad, _format(3, last),
                                         _sequence(dilations, 3, last, "dilations"))


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC", dilations=None,
                     name=None):
    """The transpose of conv1d, through conv2d_transpose over a height of 1."""
    last = _channels_last(data_format, 1)
    x = _tensor(input)
    shape = _ints(output_shape, "output_shape")
    shape2 = shape[:1] + [1] + shape[1:] if last else shape[:2] + [1] + shape[2:]
    s = _sequence(strides, 1, last, "strides")
    d = _sequence(dilations, 1, last, "dilations")
    s2 = s[:1] + [1] + s[1:] if last else s[:2] + [1] + s[2:]
    d2 = d[:1] + [1] + d[1:] if last else d[:2] + [1] + d[2:]
    y = conv2d_transpose(_with_height_1(x, last), array_ops.expand_dims(_tensor(filters, x.dtype), 0), shape2, s2,
                         padding, "NHWC" if last else "NCHW", d2)
    return array_ops.squeeze(y, [1 if last else 2])


def conv_transpose(input, filters, output_shape, strides, padding="SAME", data_format=None, dilations=None,
                   name=None):
    """conv1d/2d/3d_transpose by the length of ``output_shape``."""
    if isinstance(output_shape, Tensor):
        if output_shape.shape.rank != 1 or output_shape.shape[0] is None:
            raise ValueError(f"output_shape must be a vector of known length, got shape {output_shape.shape}")
        n = int(output_shape.shape[0]) - 2
    else:
        n = len(_ints(output_shape, "output_shape")) - 2
    fn = {1: conv1d_transpose, 2: conv2d_transpose, 3: conv3d_transpose}.get(n)
    if fn is None:
        raise ValueError(f"output_shape must have 3, 4 or 5 elements. Received: output_shape={output_shape}")
    last = _channels_last(data_format, n)
    return fn(input, filters, output_shape, strides, padding, _format(n, last), dilations)


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC", dilations=None, name=None):
    """DepthwiseConv2dNative: ``filter`` is [height, width, in_channels, channel_multiplier]."""
    last = _channels_last(data_format, 2)
    pad, explicit = _padding(padding, 2, last)
    x = _tensor(input)
    return _ops["DepthwiseConv2dNative"](x, _tensor(filter, x.dtype), _sequence(strides, 2, last, "strides"), pad,
                                         explicit, _format(2, last), _sequence(dilations, 2, last, "dilations"))


def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None, name=None):
    """Each input channel convolved with its own ``channel_multiplier`` filters; ``strides`` has 4 elements,
    ``dilations`` 2 (TensorFlow's ``rate``)."""
    last = _channels_last(data_format, 2)
    if strides is None or isinstance(strides, int) or len(strides) != 4:
        raise ValueError(f"depthwise_conv2d: strides must have 4 elements. Received: strides={strides}")
    return depthwise_conv2d_native(input, filter, strides, padding, _format(2, last), dilations)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, data_format=None, dilations=None,
                     name=None):
    """depthwise_conv2d by ``depthwise_filter`` then a 1x1 conv2d by ``pointwise_filter``
    [1, 1, in_channels * channel_multiplier, out_channels]."""
    last = _channels_last(data_format, 2)
    pw = _tensor(pointwise_filter)
    if pw.shape.rank == 4 and (pw.shape[0] != 1 or pw.shape[1] != 1):
        raise ValueError(f"separable_conv2d: pointwise_filter must be [1, 1, in, out]. Received: {pw.shape}")
    depthwise = depthwise_conv2d(input, depthwise_filter, strides, padding, _format(2, last), dilations)
    return conv2d(depthwise, pw, [1, 1, 1, 1], "VALID", _format(2, last))


# ---- pooling ------------------------------------------------------------------------------------------

def _pool(kind, input, ksize, strides, padding, data_format, n):
    last = _channels_last(data_format, n)
    x = _tensor(input)
    if x.shape.rank is not None and x.shape.rank != n + 2:
        raise ValueError(f"{kind}_pool{n}d: input must be {n + 2}-D, got shape {x.shape}")
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"`padding` must be 'SAME' or 'VALID'. Received: padding={padding}")
    name = {("max", 2): "MaxPool", ("avg", 2): "AvgPool", ("max", 3): "MaxPool3D", ("avg", 3): "AvgPool3D",
            ("max", 1): "MaxPool", ("avg", 1): "AvgPool"}[(kind, n)]
    if n == 1:
        k = _sequence(ksize, 1, last, "ksize")
        s = _sequence(strides, 1, last, "strides")
        k2 = k[:1] + [1] + k[1:] if last else k[:2] + [1] + k[2:]
        s2 = s[:1] + [1] + s[1:] if last else s[:2] + [1] + s[2:]
        y = _C.op(name)(_with_height_1(x, last), k2, s2, padding.upper(), *_explicit(name),
                        "NHWC" if last else "NCHW")
        return array_ops.squeeze(y, [1 if last else 2])
    return _C.op(name)(x, _sequence(ksize, n, last, "ksize"), _sequence(strides, n, last, "strides"),
                       padding.upper(), *_explicit(name), _format(n, last))


def _explicit(name):
    return [[]] if name == "MaxPool" else []  # MaxPool's explicit_paddings, before its data_format


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    """Max over windows of a 3-D input (as max_pool2d over a height of 1)."""
    return _pool("max", input, ksize, strides, padding, data_format, 1)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """Max over ``ksize`` windows of a 4-D input."""
    return _pool("max", input, ksize, strides, padding, data_format, 2)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """Max over ``ksize`` windows of a 5-D input."""
    return _pool("max", input, ksize, strides, padding, data_format, 3)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    """Mean over windows of a 3-D input; SAME padding averages only the elements inside the input."""
    return _pool("avg", input, ksize, strides, padding, data_format, 1)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """Mean over windows of a 4-D input; SAME padding averages only the elements inside the input."""
    return _pool("avg", input, ksize, strides, padding, data_format, 2)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """Mean over windows of a 5-D input."""
    return _pool("avg", input, ksize, strides, padding, data_format, 3)


def _rank_n(input, data_format):
    x = _tensor(input)
    if x.shape.rank is None:
        raise ValueError("pooling: the rank of input must be known")
    n = x.shape.rank - 2
    if n not in (1, 2, 3):
        raise ValueError(f"Input tensor must be of rank 3, 4 or 5 but was {x.shape.rank}.")
    return x, n


def max_pool(input, ksize, strides, padding, data_format=None, name=None):
    """max_pool1d/2d/3d by the input's rank."""
    x, n = _rank_n(input, data_format)
    return _pool("max", x, ksize, strides, padding, data_format, n)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):
    """avg_pool1d/2d/3d by the input's rank."""
    x, n = _rank_n(input, data_format)
    return _pool("avg", x, ksize, strides, padding, data_format, n)


def pool(input, window_shape, pooling_type, strides=None, padding="VALID", data_format=None, dilations=None,
         name=None):
    """tf.nn.pool: "MAX" or "AVG" pooling over ``window_shape``, without dilations."""
    if dilations is not None and any(d != 1 for d in _ints(dilations, "dilations")):
        raise ValueError("ember.nn.pool: dilations other than 1 are not supported")
    kind = {"MAX": "max", "AVG": "avg"}.get(str(pooling_type).upper())
    if kind is None:
        raise ValueError(f"pooling_type must be 'MAX' or 'AVG'. Received: pooling_type={pooling_type}")
    x, n = _rank_n(input, data_format)
    return _pool(kind, x, _ints(window_shape, "window_shape"), strides if strides is not None else 1, padding,
                 data_format, n)
