"""ember: an eager-first ML runtime with a TensorFlow 2 compatible API.

    import ember as tf
    x = tf.constant([[1., 2.], [3., 4.]])
    y = tf.nn.softmax(x @ x + 1.0)
"""

import os as _os

# OpenMP (ember's one thread pool, libgomp, shared with oneDNN) reads its wait policy once, when the extension
# below loads it. libgomp's default keeps an idle worker spinning ~300k iterations (~15 ms here) after each
# parallel region: beside another busy process it takes that process's core, and both crawl (a 15 us call
# became 0.6-2 ms). ember's default is a spin of ~0.5 ms, then sleep (docs/threads.md): the regions of one
# step find their workers awake, and beside busy processes ember goes parallel only on the cores they leave
# free (core/parallel.cc), so nothing spins there. A wait policy or spin count the user set wins:
# GOMP_SPINCOUNT would override OMP_WAIT_POLICY, so ember sets it only when neither is set.
_DEFAULT_GOMP_SPINCOUNT = "10000"
if "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ.setdefault("GOMP_SPINCOUNT", _DEFAULT_GOMP_SPINCOUNT)


def _load_extension():
    # The extension and its libprotobuf bind their own symbols first (RTLD_DEEPBIND): TensorFlow's libraries,
    # if imported before ember, put another protobuf version's symbols (the same names) where the dynamic
    # loader would otherwise find them first, and ember crashed in its first descriptor lookup.
    import sys
    flags = sys.getdlopenflags()
    sys.setdlopenflags(flags | getattr(_os, "RTLD_DEEPBIND", 0))
    try:
        from ember import _C  # noqa: F401
    finally:
        sys.setdlopenflags(flags)


_load_extension()
from ember import _C, dtypes, errors  # noqa: E402 - after the OpenMP setting above
from ember.dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128, double, float16, float32, float64,
                          half, int8, int16, int32, int64, resource, string, uint8)
from ember.framework.tensor import Tensor, constant, convert_to_tensor, is_tensor
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_util import get_static_value
from ember.ops.array_ops import bitcast  # noqa: F401
from ember.ops.math_ops import tan  # noqa: F401
from ember.framework.indexed_slices import IndexedSlices  # noqa: F401
from ember.ops.array_ops import (boolean_mask, broadcast_to, clip_by_value, concat, expand_dims, eye, fill, gather,
                                 identity, linspace, newaxis, one_hot, ones, ones_like, pad, range, rank,
                                 reshape, shape, shape_n, size, slice, split, squeeze, stack, strided_slice, tile,
                                 transpose, unstack, where, zeros, zeros_like)
from ember.ops.math_ops import complex  # noqa: F401,A004 - TensorFlow's tf.complex
from ember.ops.math_ops import (abs, add, add_n, argmax, argmin, cast, ceil, cos, divide, equal, exp, floor,
                                floordiv, greater, greater_equal, less, less_equal, log, logical_and,
                                logical_not, logical_or, matmul, maximum, minimum, multiply, negative, norm,
                                not_equal, pow, realdiv, reduce_all, reduce_any, reduce_logsumexp,
                                reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum, round, scalar_mul,
                                sigmoid, sign, sin, sqrt, square, subtract, tanh, tensordot, truediv)
from ember.ops.indexing_ops import (dynamic_partition, dynamic_stitch, gather_nd, histogram_fixed_width, meshgrid,
                                    repeat, reverse, roll, scatter_nd, searchsorted, sequence_mask,
                                    tensor_scatter_nd_add, tensor_scatter_nd_max, tensor_scatter_nd_min,
                                    tensor_scatter_nd_sub, tensor_scatter_nd_update, unique, unique_with_counts)
from ember.ops.sort_ops import argsort, sort
from ember.ops.space_batch_ops import batch_to_space, space_to_batch, space_to_batch_nd  # noqa: F401
from ember.ops.special_math_ops import clip_by_global_norm, clip_by_norm, einsum
from ember.ops.math_ops import acos, acosh, asin, asinh, atan, atan2, atanh, cosh, cumprod, cumsum, sinh  # noqa: F401
from ember.ops.math_composite_ops import (broadcast_dynamic_shape, broadcast_static_shape,  # noqa: F401
                                          grad_pass_through, histogram_fixed_width_bins, invert_permutation,
                                          reverse_sequence, saturate_cast, truncatediv, truncatemod,
                                          unravel_index)
from ember import compat, config, contrib, experimental, image, initializers, linalg, math, nn, random, signal
from ember import bitwise, sets, strings, version
from ember import audio
from ember.util import nest
from ember.compat.v1 import control_dependencies
from ember.initializers import constant_initializer, ones_initializer, zeros_initializer
from ember.device_scope import device
from ember.framework.tensor_spec import TensorSpec
from ember.function_graph import NewGraphFunction
from ember.polymorphic_function import defun, function, method
from ember.ops.logging_ops import print, timestamp  # noqa: A001 - TensorFlow's name
from ember.ops.script_ops import numpy_function, py_function
from ember.ops.control_flow_ops import case, cond, group, no_op, switch_case, while_loop
from ember.ops.control_flow_ops import tuple_ as tuple  # noqa: A001 - TensorFlow's tf.tuple
from ember.ops.array_ops import identity_n
from ember.eager_context import executing_eagerly, inside_function
from ember.ops.tensor_array_ops import TensorArray, TensorArraySpec
from ember.ops.functional_ops import foldl, foldr, map_fn, scan, vectorized_map
from ember import debugging
from ember.debugging import Assert, assert_equal, assert_greater, assert_less, assert_rank, ensure_shape
from ember.init_scope import init_scope
from ember.module import Module
from ember.name_scope import name_scope
from ember.variables import Variable, VariableAggregation, VariableSynchronization
from ember.variable_creation import variable_creator_scope
from ember.backprop import GradientTape, UnconnectedGradients, custom_gradient, recompute_grad, stop_gradient
from ember import autodiff, graph_util
from ember.tf_gradients import gradients, hessians
from ember import io, saved_model
from ember import keras
from ember import data
from ember import train
from ember import profiler
from ember import test
from ember import summary
from ember import autograph
from ember import distribute
from ember import ragged, sparse
from ember import lookup
from ember import raw_ops
from ember.ragged import RaggedTensor, RaggedTensorSpec
from ember.api_aliases import (AggregationMethod, as_string, get_current_name_scope, guarantee_const,  # noqa: F401
                               is_symbolic_tensor, losses, matrix_square_root, metrics, optimizers,
                               parallel_stack, random_normal_initializer, random_uniform_initializer,
                               type_spec_from_value)
from ember.framework.device_spec import DeviceSpec  # noqa: F401
from ember.sparse import SparseTensor, SparseTensorSpec
from ember.ragged import ragged_dispatch as _ragged_dispatch
from ember.util import dispatch as _dispatch

_dispatch.install()  # after every namespace is filled: op functions dispatch Keras symbolic tensors
_ragged_dispatch.install()  # and RaggedTensors, before the op would read one (util/dispatch.py)

from ember.version import VERSION as __version__  # noqa: E402


def get_logger():
    """The logger ember's messages go to (``tf.get_logger()``: code sets its level to quiet them)."""
    import logging

    return logging.getLogger("ember")


from ember import traceback_filter as _traceback_filter

_traceback_filter.install()
_C.set_package_dir(_traceback_filter.PACKAGE_DIR)  # graph nodes record the first frame outside it
