"""``ember.print``: TensorFlow's ``tf.print``, eagerly and inside ember.function (a stateful op, so it
runs on every call, in program order)."""

import sys

import numpy as np

from ember import _C
from ember.framework.tensor import Tensor, convert_to_tensor

_PrintV2 = _C.op("PrintV2")
_SLOT = "\x1f"


def print(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):  # noqa: A001
    """Prints tensors (summarized like TF: ``[0 1 2 ... 7 8 9]``) and Python values."""
    pieces, tensors = [], []
    for value in inputs:
        if isinstance(value, (Tensor, np.ndarray)) or getattr(value, "_ember_variable", False):
            tensors.append(convert_to_tensor(value))
            pieces.append(_SLOT)
        else:
            pieces.append(str(value))
    # The default (None) is stderr, as tf.print's; sys.stdout/sys.stderr are read at call time.
    if output_stream is None or output_stream is sys.stderr or output_stream is sys.__stderr__ or \
            output_stream == "stderr":
        stream = "stderr"
    elif output_stream is sys.stdout or output_stream is sys.__stdout__ or output_stream == "stdout":
        stream = "stdout"
    elif isinstance(output_stream, str) and output_stream.startswith("file://") and len(output_stream) > 7:
        stream = output_stream  # appended to, as TensorFlow does
    else:
        raise ValueError(f"ember.print: output_stream must be sys.stdout, sys.stderr or 'file://<path>', got "
                         f"{output_stream!r}")
    if not _C.in_trace() and not stream.startswith("file://"):
        # Python's own buffered text goes first, so output stays in program order.
        (sys.stdout if stream == "stdout" else sys.stderr).flush()
    _PrintV2(tensors, sep.join(pieces), stream, end, -1 if summarize is None or summarize < 0 else int(summarize))


def timestamp(name=None):
    """``tf.timestamp()``: the time the op runs, in seconds since the Unix epoch, as a float64 scalar. Inside an
    ember.function it is read on every call, in program order with the other stateful ops."""
    return _C.op("Timestamp")()
