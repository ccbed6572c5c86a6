"""``tf.experimental.dlpack``: tensors shared with NumPy, PyTorch and JAX through DLPack, without a copy.

``to_dlpack(t)`` gives a capsule viewing ``t``'s buffer (ember tensors are immutable, so consumers get a
read-only view where their DLPack version can say so); ``from_dlpack(x)`` takes a capsule or any object
with ``__dlpack__`` on the CPU and wraps its memory (a copy only when it is not dense and row-major).
``np.from_dlpack(t)`` and ``torch.from_dlpack(t)`` work on ember tensors directly (``Tensor.__dlpack__``)."""

from ember import _C
from ember.framework.tensor import Tensor


def to_dlpack(tf_tensor):
    if getattr(tf_tensor, "_ember_variable", False):
        tf_tensor = tf_tensor.read_value()
    if not isinstance(tf_tensor, Tensor):
        raise TypeError(f"to_dlpack: expected an ember tensor, got {type(tf_tensor).__name__}")
    return _C.to_dlpack(tf_tensor)


def from_dlpack(dlcapsule):
    return _C.from_dlpack(dlcapsule)
