"""Dispatch of ember's public op functions on arguments they cannot take, as TensorFlow's
``add_dispatch_support``: ``tf.concat([x, y], 1)`` or ``tf.nn.relu(x)`` on Keras symbolic tensors of the
functional API becomes a layer of the model (Keras' TFOpLambda).

Each op function reachable from ``ember``, ``ember.math``, ``ember.linalg``, ``ember.nn``, ``ember.image``,
``ember.signal`` and ``ember.strings`` is replaced by one ``_C.ApiFunction`` around it (the same wrapper in
every namespace, so ``tf.add is tf.math.add`` holds as before). The wrapper calls the function; only when that raises does it ask the
fallback dispatcher (``set_fallback``), which looks at the arguments and either answers or keeps the error.
A normal call pays one C-level indirection, no Python frame.
"""

import sys
import types

from ember import _C

# The modules whose functions are ops on tensors. Control flow, functional ops, printing and random draws
# take callables or produce fresh state; TensorFlow does not dispatch them either.
_OP_MODULES = ("ember.ops.array_ops", "ember.ops.math_ops", "ember.ops.indexing_ops", "ember.ops.nn_ops",
               "ember.ops.nn_conv_ops", "ember.ops.nn_norm_ops", "ember.ops.sort_ops", "ember.ops.linalg_ops",
               "ember.ops.special_math_ops", "ember.image", "ember.signal", "ember.strings",
               "ember.ops.image_color_ops", "ember.ops.image_metrics_ops", "ember.ops.space_batch_ops",
               "ember.ops.spectral_ops", "ember.ops.dct_mel_ops", "ember.ops.image_boxes_ops",
               "ember.ops.confusion_matrix")

# Op functions that live in other modules.
_EXTRA_OP_FUNCTIONS = {("ember.backprop", "stop_gradient")}

# Namespaces in the order that names a function exported in several of them, as TensorFlow's first export
# mostly does (tf.add is tf.math.add, tf.matmul is tf.linalg.matmul).
_NAMESPACES = ("math", "linalg", "nn", "image", "signal", "strings", "", "compat.v1")

# Where TensorFlow's name differs from that order. The tf.compat.v1 names are what tf_keras shows because the
# TF 2 function calls its v1 version, which is the one that dispatches.
_API_NAME_EXCEPTIONS = {
    "tf.math.softmax": "tf.nn.softmax", "tf.math.log_softmax": "tf.nn.log_softmax",
    "tf.math.softsign": "tf.nn.softsign", "tf.math.elu": "tf.nn.elu", "tf.math.relu": "tf.nn.relu",
    "tf.math.relu6": "tf.nn.relu6", "tf.math.matmul": "tf.linalg.matmul", "tf.math.cast": "tf.cast",
    "tf.math.realdiv": "tf.realdiv", "tf.math.floor_div": "tf.math.floordiv",
    "tf.image.clip_by_value": "tf.clip_by_value", "tf.linalg.einsum": "tf.einsum", "tf.linalg.eye": "tf.eye",
    "tf.linalg.norm": "tf.norm", "tf.linalg.tensordot": "tf.tensordot",
    "tf.transpose": "tf.compat.v1.transpose", "tf.gather": "tf.compat.v1.gather", "tf.shape": "tf.compat.v1.shape",
    "tf.math.complex": "tf.dtypes.complex",  # TensorFlow has no tf.math.complex; tf.complex is dtypes.complex
    "tf.nn.space_to_batch": "tf.space_to_batch",
}

_installed = {}  # id(original) -> ApiFunction


def _api_name(namespace, name):
    full = f"tf.{namespace}.{name}" if namespace else f"tf.{name}"
    return _API_NAME_EXCEPTIONS.get(full, full)


def install():
    """Wraps the op functions of the public namespaces; idempotent."""
    ember = sys.modules["ember"]
    for namespace in _NAMESPACES:
        module = ember
        for part in filter(None, namespace.split(".")):
            module = getattr(module, part)
        for name, value in list(vars(module).items()):
            if name.startswith("_"):
                continue
            if isinstance(value, _C.ApiFunction):
                continue
            if not isinstance(value, types.FunctionType):
                continue
            if value.__module__ not in _OP_MODULES and (value.__module__, value.__name__) not in _EXTRA_OP_FUNCTIONS:
                continue
            wrapper = _installed.get(id(value))
            if wrapper is None:
                wrapper = _installed[id(value)] = _C.ApiFunction(value, _api_name(namespace, name))
            setattr(module, name, wrapper)


def set_fallback(fallback):
    """``fallback(api_function, args, kwargs, error)`` answers a call that raised, or returns NotImplemented to
    keep the error; ``api_function._ember_api_name`` is TensorFlow's name for it."""
    _C.set_api_fallback_dispatch(fallback)


def set_pre_dispatch(types, handler):
    """A call with an argument whose type is exactly one of ``types`` (directly, or in a list/tuple argument)
    goes to ``handler(api_function, args, kwargs, None)`` before the function runs; the handler returns
    NotImplemented to let the function run. For composite tensors, which an op would otherwise read as dense.
    ``set_pre_dispatch((), None)`` removes it."""
    _C.set_api_pre_dispatch(tuple(types), handler)


def unwrap(fn):
    """The original function of an installed wrapper (or ``fn`` itself)."""
    return fn.__wrapped__ if isinstance(fn, _C.ApiFunction) else fn
