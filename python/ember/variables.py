"""``ember.Variable``: mutable state whose lifetime is its Python object's.

The value lives in a C++ resource (core/resource.h) that this object alone keeps alive; reads and writes
are ops (ReadVariableOp, AssignVariableOp, ...) that name the variable by id, so inside ember.function
they become graph nodes ordered by automatic control dependencies, and a function whose variable has been
freed fails with an error naming it. A Variable works wherever a tensor does.
"""

import enum
import weakref

import numpy as np

from ember import _C, dtypes, errors, variable_creation
from ember.framework.indexed_slices import IndexedSlices
from ember.init_scope import init_scope
from ember.name_scope import current_prefix as name_scope_prefix
from ember.framework.tensor import Tensor, _TensorRef, convert_to_tensor
from ember.framework.tensor_shape import TensorShape

_Read = _C.op("ReadVariableOp")
_Assign = _C.op("AssignVariableOp")
_AssignAdd = _C.op("AssignAddVariableOp")
_AssignSub = _C.op("AssignSubVariableOp")
# The scatters write into the variable's buffer in place when no one else holds it (Note [In-place variable
# updates] in ops/scatter_nd.cc).
_SCATTERS = {name: _C.op(name) for name in (
    "ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul",
    "ResourceScatterDiv", "ResourceScatterMin", "ResourceScatterMax", "ResourceScatterNdUpdate",
    "ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterNdMin", "ResourceScatterNdMax")}

# Variables by resource id, for GradientTape.watched_variables (held weakly: lifetime stays the object's).
_live_variables = weakref.WeakValueDictionary()


class VariableSynchronization(enum.Enum):
    """``tf.VariableSynchronization``: when a distributed variable's copies agree (ember.distribute)."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """``tf.VariableAggregation``: how replicas' updates of a distributed variable combine."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class _VariableMeta(type):
    # `ember.Variable(...)` goes through the creators of the enclosing variable_creator_scopes (a
    # tf.distribute strategy's scope makes distributed variables so); a subclass is constructed directly.
    def __call__(cls, *args, **kwargs):
        if cls is Variable:
            return variable_creation.create_variable(super().__call__, args, kwargs)
        return super().__call__(*args, **kwargs)


class Variable(metaclass=_VariableMeta):
    """``ember.Variable(initial_value, trainable=True, name=None, dtype=None, shape=None)``."""

    _ember_variable = True
    __array_priority__ = 100

    def __init__(self, initial_value=None, trainable=True, name=None, dtype=None, shape=None,
                 synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE, **unused):
        self._synchronization = VariableSynchronization(synchronization or VariableSynchronization.AUTO)
        self._aggregation = VariableAggregation(aggregation or VariableAggregation.NONE)
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if _C.in_trace():
            variable_creation.check_creation(self)
        if callable(initial_value):
            with init_scope():  # initializers run once, eagerly, even while a function traces
                initial_value = initial_value()
        value = convert_to_tensor(initial_value, dtype=dtype)
        if value._is_symbolic:
            # Computed from the function's inputs (TF 2's lifted initializer): hold zeros of its shape until
            # ember.function, after this first trace, computes the value from the call's tensors.
            variable_creation.defer_initial_value(self, value, name or "Variable")
            with init_scope():
                value = convert_to_tensor(np.zeros(value.shape.as_list(), dtype=value.dtype.as_numpy_dtype))
        # A declared shape may leave dimensions or the rank unknown (tf.Variable(..., shape=[None])): any
        # value that fits it may be assigned later, and reads inside a function have that shape.
        declared = value.shape if shape is None else TensorShape(shape)
        if not declared.is_compatible_with(value.shape):
            raise ValueError(f"In this `tf.Variable` creation, the initial value's shape ({value.shape}) is not "
                             f"compatible with the explicitly supplied `shape` argument ({shape}).")
        self._unknown_rank = declared.rank is None
        # The ReadVariableOp `shape` attribute: -1 for an unknown dimension.
        self._shape_list = [] if self._unknown_rank else [-1 if d is None else d for d in declared.as_list()]
        if declared.is_fully_defined():
            self._handle = _C.create_variable(value, name or "Variable")
        else:
            self._handle = _C.create_variable(value, name or "Variable", self._shape_list, self._unknown_rank)
        self._id = self._handle.id
        self._dtype = value.dtype
        self._shape = declared
        self._name = name_scope_prefix() + (name or "Variable") + ":0"
        self._trainable = bool(trainable)
        self._handle.trainable = self._trainable
        _live_variables[self._id] = self

    # ---- properties
    @property
    def name(self):
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    @property
    def trainable(self):
        return self._trainable

    @property
    def synchronization(self):
        return self._synchronization

    @property
    def aggregation(self):
        return self._aggregation

    @property
    def ndim(self):
        return self._shape.rank

    @property
    def device(self):
        """The device the variable was created on (its ``tf.device`` scope)."""
        return self._handle.device

    # ---- reading and writing
    def read_value(self):
        """The current value as a tensor (a ReadVariableOp node inside ember.function)."""
        return _Read(self._id, self._dtype, self._shape_list, self._unknown_rank)

    def value(self):
        return self.read_value()

    def _as_tensor(self, dtype=None):
        t = self.read_value()
        if dtype is not None and dtypes.as_dtype(dtype) != self._dtype:
            raise ValueError(f"Incompatible type conversion requested to type {dtypes.as_dtype(dtype).name} for "
                             f"variable of type {self._dtype.name} ({self._name})")
        return t

    def _value_for(self, value):
        return value if isinstance(value, Tensor) and value.dtype == self._dtype else convert_to_tensor(
            value, dtype=self._dtype)

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Sets the value, of any shape that fits the variable's; returns the variable (usable in
        expressions)."""
        value = self._value_for(value)
        try:
            _Assign(value, self._id)
        except errors.InvalidArgumentError:
            if not self._shape.is_compatible_with(value.shape):  # TensorFlow checks this in Python
                raise ValueError(f"Cannot assign value to variable ' {self._name}': Shape mismatch.The variable "
                                 f"shape {self._shape}, and the assigned value shape {value.shape} are "
                                 "incompatible.") from None
            raise
        return self

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        _AssignAdd(self._value_for(delta), self._id)
        return self

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        _AssignSub(self._value_for(delta), self._id)
        return self

    # ---- rows and slices: reads gather from the value read (no copy: reads share the buffer), writes are
    # the ResourceScatter* ops. Each returns the variable, as assign does.
    def sparse_read(self, indices, name=None):
        """The rows at ``indices`` (``tf.gather`` of the value); under a GradientTape the variable's
        gradient through them is an IndexedSlices, as TensorFlow's."""
        from ember import backprop
        from ember.ops import array_ops

        return backprop.record_sparse_read(self, indices, array_ops.gather)

    def gather_nd(self, indices, name=None):
        """The slices at the index tuples in ``indices``' last dim (``tf.gather_nd`` of the value)."""
        from ember.ops import indexing_ops

        return indexing_ops.gather_nd(self.read_value(), indices)

    def _scatter(self, op_name, sparse_delta):
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"Argument `sparse_delta` must be a `tf.IndexedSlices`. Received arg: {sparse_delta}")
        _SCATTERS[op_name](convert_to_tensor(sparse_delta.indices), self._value_for(sparse_delta.values), self._id)
        return self

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        """Sets the rows ``sparse_delta.indices`` to ``sparse_delta.values``."""
        return self._scatter("ResourceScatterUpdate", sparse_delta)

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterAdd", sparse_delta)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterSub", sparse_delta)

    def scatter_mul(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterMul", sparse_delta)

    def scatter_div(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterDiv", sparse_delta)

    def scatter_min(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterMin", sparse_delta)

    def scatter_max(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("ResourceScatterMax", sparse_delta)

    def batch_scatter_update(self, sparse_delta, use_locking=False, name=None):
        """scatter_update along the last dim of ``sparse_delta.indices``, whose leading dims are batch dims
        shared with the variable (TensorFlow's ``tf.compat.v1.batch_scatter_update``)."""
        from ember.ops import array_ops

        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"Argument `sparse_delta` must be a `tf.IndexedSlices`. Received arg: {sparse_delta}")
        indices = convert_to_tensor(sparse_delta.indices)
        rank = indices.shape.rank
        if rank is None:
            raise ValueError("batch_scatter_update: the rank of the indices must be known")
        if rank <= 1:
            return self._scatter("ResourceScatterUpdate", sparse_delta)
        # Each index gains its batch coordinates in front: an index tuple for scatter_nd_update.
        shape = array_ops.shape(indices, out_type=indices.dtype)
        coordinates = []
        for axis in range(rank - 1):
            along = array_ops.range(shape[axis], dtype=indices.dtype)
            along = array_ops.reshape(along, [-1 if d == axis else 1 for d in range(rank)])
            coordinates.append(array_ops.broadcast_to(along, shape))
        tuples = array_ops.stack(coordinates + [indices], axis=-1)
        return self.scatter_nd_update(tuples, sparse_delta.values)

    def _scatter_nd(self, op_name, indices, updates):
        _SCATTERS[op_name](convert_to_tensor(indices), self._value_for(updates), self._id)
        return self

    def scatter_nd_update(self, indices, updates, name=None):
        """Sets the slices at the index tuples in ``indices``' last dim to ``updates``."""
        return self._scatter_nd("ResourceScatterNdUpdate", indices, updates)

    def scatter_nd_add(self, indices, updates, name=None):
        return self._scatter_nd("ResourceScatterNdAdd", indices, updates)

    def scatter_nd_sub(self, indices, updates, name=None):
        return self._scatter_nd("ResourceScatterNdSub", indices, updates)

    def scatter_nd_max(self, indices, updates, name=None):
        return self._scatter_nd("ResourceScatterNdMax", indices, updates)

    def scatter_nd_min(self, indices, updates, name=None):
        return self._scatter_nd("ResourceScatterNdMin", indices, updates)

    @property
    def handle(self):
        """The variable's handle: a scalar of dtype ``tf.resource`` that ``tf.raw_ops``' variable ops take."""
        return ResourceHandle(self)

    def numpy(self):
        return self.read_value().numpy()

    def ref(self):
        return _TensorRef(self)

    def __array__(self, dtype=None, copy=None):
        return self.read_value().__array__(dtype=dtype, copy=copy)

    # ---- Python protocols
    def __repr__(self):
        value = self.read_value()
        if value._is_symbolic:
            return f"<ember.Variable '{self._name}' shape={self._shape} dtype={self._dtype.name}>"
        return (f"<ember.Variable '{self._name}' shape={self._shape} dtype={self._dtype.name}, "
                f"numpy={np.array_repr(value.numpy()) if value.ndim else repr(np.asarray(value.numpy()).item())}>")

    def __hash__(self):
        raise TypeError("Variable is unhashable. Instead, use variable.ref() as the key.")

    def __bool__(self):
        return bool(self.read_value())

    def __int__(self):
        return int(self.read_value())

    def __float__(self):
        return float(self.read_value())

    def __complex__(self):
        return complex(self.read_value())

    def __index__(self):
        return self.read_value().__index__()

    def __len__(self):
        return len(self.read_value())

    def __iter__(self):
        return iter(self.read_value())

    def __getitem__(self, key):
        return self.read_value()[key]


class ResourceHandle:
    """``Variable.handle``: what TensorFlow shows as a scalar tensor of dtype ``tf.resource``. ember's ops
    name a variable by its id (core/resource.h), so the handle is that name, and it keeps the variable
    alive, as TensorFlow's handle tensor does; the variable ops of ``tf.raw_ops`` (ReadVariableOp,
    AssignVariableOp, ResourceGather, ResourceScatterUpdate, ...) take it, eagerly and inside functions."""

    dtype = dtypes.resource
    shape = TensorShape([])
    ndim = 0

    def __init__(self, variable):
        self._variable = variable

    def get_shape(self):
        return self.shape

    # Handles of one variable are equal, so a function taking a handle argument traces once per variable.
    def __eq__(self, other):
        return isinstance(other, ResourceHandle) and other._variable._id == self._variable._id

    def __hash__(self):
        return hash(("ResourceHandle", self._variable._id))

    def __repr__(self):
        v = self._variable
        return (f'<ResourceHandle(name="{v.name[:-2]}", dtype and shapes : "[ DType: {v.dtype.name}, '
                f'Shape: {v.shape} ]"), shape=(), dtype=resource>')


def _delegate(name):
    def method(self, *args):
        return getattr(self.read_value(), name)(*args)

    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
              "__matmul__", "__rmatmul__", "__neg__", "__pos__", "__abs__", "__lt__", "__le__", "__gt__",
              "__ge__", "__eq__", "__ne__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
              "__invert__"):
    setattr(Variable, _name, _delegate(_name))
