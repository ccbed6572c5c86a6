"""TensorFlow 2's top-level second names and small helpers: ``tf.losses``/``tf.metrics``/``tf.optimizers``
(its Keras modules), ``tf.as_string``, ``tf.parallel_stack``, ``tf.guarantee_const``,
``tf.is_symbolic_tensor``, ``tf.get_current_name_scope``, ``tf.matrix_square_root``, the TF2 initializer
classes ``tf.random_normal_initializer``/``tf.random_uniform_initializer``, ``tf.AggregationMethod`` and
``tf.type_spec_from_value``. Behaviour measured against TensorFlow 2.21 (tests/python/test_api_gaps_aliases.py)."""

from ember import _C, dtypes
from ember import initializers as _initializers
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_spec import TensorSpec
from ember.keras import losses, metrics, optimizers  # noqa: F401 - TF 2.21 maps tf.losses etc. to Keras'
from ember.linalg import sqrtm as matrix_square_root  # noqa: F401
from ember.name_scope import current_prefix
from ember.ops import array_ops
from ember.strings import as_string  # noqa: F401


def parallel_stack(values, name="parallel_stack"):
    """``stack`` along a new first axis; as in TensorFlow, only inside a function (RuntimeError eagerly)."""
    if not _C.in_trace():
        raise RuntimeError("tf.parallel_stack() is not compatible with eager execution.")
    return array_ops.stack(values, axis=0)


def guarantee_const(input, name=None):  # noqa: A002 - TF's name
    """The identity: a promise TensorFlow's graph optimizer may use; ember needs none."""
    return array_ops.identity(input)


def is_symbolic_tensor(tensor):
    """True for a tensor of a function being traced (TensorFlow's graph tensor), False for anything else."""
    return isinstance(tensor, Tensor) and tensor._is_symbolic


def get_current_name_scope():
    """The name scope of the code calling it ("outer/inner"; "" outside every scope)."""
    return current_prefix().rstrip("/")


class AggregationMethod:
    """How ``tf.gradients`` sums the gradients of a tensor used several times. ember always adds them
    with one AddN, so these only name TensorFlow's choices."""
    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class _ConfigurableInitializer(_initializers.Initializer):
    """TF2's ``tf.initializers`` protocol: ``__call__(shape, dtype)``, ``get_config``, ``from_config``."""

    _config_keys = ()

    def get_config(self):
        return {k: getattr(self, k) for k in self._config_keys}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("dtype", None)  # TF2's from_config drops it as well
        return cls(**config)


def _float_dtype(dtype):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Argument `dtype` is expected to be floating point. Received: {dtype!r}.")
    return dtype


class random_normal_initializer(_ConfigurableInitializer):  # noqa: N801 - TensorFlow's name
    """Values from a normal distribution: ``tf.random_normal_initializer(mean=0., stddev=0.05, seed=None)``."""

    _config_keys = ("mean", "stddev", "seed")

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return _initializers.RandomNormal(self.mean, self.stddev, self.seed)(shape, _float_dtype(dtype))


class random_uniform_initializer(_ConfigurableInitializer):  # noqa: N801 - TensorFlow's name
    """Values from a uniform distribution over [minval, maxval): floats, or integers for an int dtype."""

    _config_keys = ("minval", "maxval", "seed")

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        dtype = dtypes.as_dtype(dtype)
        if not (dtype.is_floating or dtype.is_integer):
            raise ValueError(f"Argument `dtype` is expected to be floating point or integer. Received: {dtype!r}.")
        return _initializers.RandomUniform(self.minval, self.maxval, self.seed)(shape, dtype)


def type_spec_from_value(value):
    """The TypeSpec of a value: its own for a composite (RaggedTensor, SparseTensor, Dataset...), else a
    TensorSpec of the tensor it converts to; TypeError when it converts to none."""
    spec = getattr(value, "_type_spec", None)
    if spec is not None:
        return spec
    if isinstance(value, Tensor):
        return TensorSpec.from_tensor(value)
    if getattr(value, "_ember_variable", False):
        return TensorSpec(value.shape, value.dtype)
    try:
        tensor = convert_to_tensor(value)
    except (TypeError, ValueError):
        raise TypeError(f"Could not build a TypeSpec for {value!r} of unsupported type {type(value)}.") from None
    return TensorSpec.from_tensor(tensor)
