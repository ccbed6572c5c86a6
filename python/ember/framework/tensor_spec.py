"""TensorSpec: the dtype and (possibly partial) shape of a tensor argument."""

from ember import dtypes
from ember.framework.tensor_shape import TensorShape


class TensorSpec:
    """Describes a tensor: ``TensorSpec(shape=[None, 3], dtype=tf.float32, name="x")``."""

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        if isinstance(shape, dtypes.DType) and not isinstance(dtype, dtypes.DType):
            shape, dtype = dtype, shape  # the seeds write TensorSpec(tf.float32, ())
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._name

    def is_compatible_with(self, other):
        """Whether a tensor (or spec) ``other`` fits this spec: same dtype, compatible shape."""
        dtype = other.dtype
        shape = other.shape
        return dtype == self._dtype and self._shape.is_compatible_with(shape)

    def most_specific_compatible_type(self, other):
        return TensorSpec(self._shape.most_specific_common_supertype([other.shape]), self._dtype, self._name)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self._dtype == other._dtype and self._shape == other._shape
                and self._name == other._name)

    def __hash__(self):
        return hash((self._shape, self._dtype, self._name))

    def __repr__(self):
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"
