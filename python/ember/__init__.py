"""ember: an eager-first ML runtime with a TensorFlow 2 compatible API.

    import ember as tf
    x = tf.constant([[1., 2.], [3., 4.]])
    y = tf.exp(x) + 1.0
"""

from ember import _C, dtypes, errors
from ember.dtypes import (DType, as_dtype, bfloat16, bool, double, float16, float32, float64, half, int8,
                          int16, int32, int64, uint8)
from ember.framework.tensor import Tensor, constant, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.ops.math_ops import (abs, add, add_n, cast, ceil, cos, divide, equal, exp, floor, floordiv,
                                greater, greater_equal, less, less_equal, log, logical_and, logical_not,
                                logical_or, maximum, minimum, multiply, negative, not_equal, pow, realdiv,
                                round, sigmoid, sign, sin, sqrt, square, subtract, tanh, truediv)
from ember import math

__version__ = "0.1.0"
