"""``tf.IndexedSlices``: rows of a tensor given by row indices, the sparse form of a gradient (what
``GradientTape.gradient`` returns for a variable read through ``Variable.sparse_read``) and the argument of
``Variable.scatter_*``. It converts to the dense tensor, with duplicate rows summed, as TensorFlow's."""

from ember import _C
from ember.framework.tensor import convert_to_tensor

_UnsortedSegmentSum = _C.op("UnsortedSegmentSum")
_GatherV2 = _C.op("GatherV2")
_Neg = _C.op("Neg")


class IndexedSlices:
    """``tf.IndexedSlices(values, indices, dense_shape=None)``: ``dense[indices[i]] = values[i]``."""

    _ember_indexed_slices = True  # convert_to_tensor densifies it (_as_tensor)

    def __init__(self, values, indices, dense_shape=None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    @property
    def values(self):
        return self._values

    @property
    def indices(self):
        return self._indices

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def shape(self):
        """The dense shape, as far as it is known without running anything."""
        from ember.framework.tensor_shape import TensorShape
        from ember.framework.tensor_util import get_static_value

        if self._dense_shape is None:
            return TensorShape(None)
        known = get_static_value(self._dense_shape)
        if known is not None:
            return TensorShape([int(d) for d in known])
        return TensorShape([None] * int(self._dense_shape.shape[0]))

    @property
    def device(self):
        return self._values.device

    def _as_tensor(self, dtype=None):
        """The dense tensor (duplicate indices summed), as TensorFlow converts IndexedSlices."""
        if self._dense_shape is None:
            raise ValueError(f"Tensor conversion requested for IndexedSlices without dense_shape: {self!r}")
        values = convert_to_tensor(self._values, dtype=dtype)
        # dense_shape[0] stays a tensor, so an unknown number of rows works inside functions.
        num_rows = _GatherV2(convert_to_tensor(self._dense_shape), 0, 0, 0)
        return _UnsortedSegmentSum(values, convert_to_tensor(self._indices), num_rows)

    def __neg__(self):
        return IndexedSlices(_Neg(self._values), self._indices, self._dense_shape)

    def __repr__(self):
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape!r}"
        return f"IndexedSlices(indices={self._indices!r}, values={self._values!r}{shape})"
