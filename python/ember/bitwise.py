"""``tf.bitwise``: and, or, xor, not and shifts of integer tensors (every integer dtype ember has),
broadcasting, not differentiable. The wrappers are generated from the element-wise op table
(kernels/elementwise_ops.h) with the rest of ember.math's; shift amounts outside [0, bits - 1] are clamped,
as TensorFlow's (Note [Shift amounts] in kernels/elementwise_functors.h)."""
from ember.ops import math_ops as _math_ops

__all__ = list(_math_ops.BITWISE_API)
globals().update((_name, getattr(_math_ops, _name)) for _name in __all__)
