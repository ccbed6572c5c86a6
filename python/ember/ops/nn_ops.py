"""``ember.nn``: activations, softmax and the cross-entropy losses, with TensorFlow's signatures."""

from ember import _C
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops.math_ops import elu, relu, relu6, sigmoid, softplus, tanh  # noqa: F401

_Softmax = _C.op("Softmax")
_LogSoftmax = _C.op("LogSoftmax")
_BiasAdd = _C.op("BiasAdd")
_L2Loss = _C.op("L2Loss")
_SigmoidXent = _C.op("SigmoidCrossEntropyWithLogits")
_SoftmaxXent = _C.op("SoftmaxCrossEntropyWithLogits")
_SparseSoftmaxXent = _C.op("SparseSoftmaxCrossEntropyWithLogits")


def softmax(logits, axis=None, name=None):
    return _Softmax(logits, -1 if axis is None else int(axis))


def log_softmax(logits, axis=None, name=None):
    return _LogSoftmax(logits, -1 if axis is None else int(axis))


def bias_add(value, bias, data_format=None, name=None):
    fmt = "NHWC" if data_format is None or not str(data_format).startswith("NC") else "NCHW"
    value = value if isinstance(value, Tensor) else convert_to_tensor(value)
    return _BiasAdd(value, bias, fmt)


def l2_loss(t, name=None):
    return _L2Loss(t)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    logits = logits if isinstance(logits, Tensor) else convert_to_tensor(logits)
    return _SigmoidXent(convert_to_tensor(labels, dtype_hint=logits.dtype), logits)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    logits = logits if isinstance(logits, Tensor) else convert_to_tensor(logits)
    labels = convert_to_tensor(labels, dtype_hint=logits.dtype)
    if axis not in (-1, logits.ndim - 1):
        from ember.ops import array_ops

        perm = list(range(logits.ndim))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        logits, labels = array_ops.transpose(logits, perm), array_ops.transpose(labels, perm)
    out = _SoftmaxXent(logits, labels)
    return out[0] if isinstance(out, tuple) else out


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    out = _SparseSoftmaxXent(logits, labels)
    return out[0] if isinstance(out, tuple) else out
