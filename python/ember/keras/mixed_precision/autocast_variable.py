"""Variables that read as the layer's compute dtype inside its ``call`` (tf_keras' AutoCastVariable).

Note [Autocast variables]
A layer under a mixed policy keeps float32 variables and computes in float16: its weights are made by
``add_weight`` as usual and then given this subclass of ``ember.Variable`` (the same object: the tape, the
optimizer, checkpoints and ``weights`` see an ordinary float32 variable). Reading one (``read_value``, or an op
converting it) while ``Layer.__call__`` has set an autocast dtype gives the value cast to that dtype, so
``tf.matmul(x16, self.kernel)`` works and its gradient flows through the cast back to the float32 variable.
Outside a layer's call (the optimizer's update, ``get_weights``, a regularizer) it reads as float32."""

import contextlib
import threading

from ember import dtypes
from ember.ops import math_ops
from ember.variables import Variable

_local = threading.local()


def autocast_dtype():
    """The dtype autocast variables read as now, or None (they read as their own dtype)."""
    return getattr(_local, "dtype", None)


@contextlib.contextmanager
def enable_auto_cast_variables(dtype):
    """Within the block autocast variables of floating dtype read as ``dtype`` (None: as themselves)."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    if dtype is not None and not dtype.is_floating:
        dtype = None
    previous = autocast_dtype()
    _local.dtype = dtype
    try:
        yield
    finally:
        _local.dtype = previous


class AutoCastVariable(Variable):
    """An ember.Variable whose reads inside a layer's call are cast to the layer's compute dtype."""

    def read_value(self):
        value = Variable.read_value(self)
        target = autocast_dtype()
        if target is None or target == self._dtype:
            return value
        return math_ops.cast(value, target)

    def sparse_read(self, indices, name=None):
        rows = Variable.sparse_read(self, indices)  # from the float32 value: its gradient stays sparse
        target = autocast_dtype()
        return rows if target is None or target == self._dtype else math_ops.cast(rows, target)

    def _as_tensor(self, dtype=None):
        value = self.read_value()
        if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
            raise ValueError(f"Incompatible type conversion requested to type {dtypes.as_dtype(dtype).name} for "
                             f"AutoCastVariable which is casted to type {value.dtype.name} ({self._name})")
        return value

    def __repr__(self):
        target = autocast_dtype() or self._dtype
        return (f"<AutoCastVariable '{self._name}' shape={self._shape} dtype={self._dtype.name} "
                f"dtype_to_cast_to={target.name}>")


def make_autocast(variable):
    """Makes ``variable`` (a float variable) read as the autocast dtype in layer calls; returns it."""
    if type(variable) is Variable and variable.dtype.is_floating:
        variable.__class__ = AutoCastVariable
    return variable
