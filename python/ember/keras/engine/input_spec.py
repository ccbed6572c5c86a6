"""``InputSpec``: what a layer accepts (rank, fixed axes, dtype), checked on every call once the layer has
set it (Dense sets ``min_ndim=2, axes={-1: units_in}`` when it builds). A mismatch raises
``IncompatibleInputError``, an ``ember.errors.InvalidArgumentError`` that is also a ``ValueError`` (what
Keras raises), naming the layer, what it expected and what it got."""

from ember import errors
from ember.framework.tensor_shape import TensorShape
from ember.util import nest


class IncompatibleInputError(errors.InvalidArgumentError, ValueError):
    """A layer was called on an input its InputSpec refuses."""

    def __init__(self, message):
        errors.InvalidArgumentError.__init__(self, None, None, message)


class InputSpec:
    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None,
                 allow_last_axis_squeeze=False, name=None):
        self.dtype = dtype
        shape = TensorShape(shape) if shape is not None else None
        self.shape = tuple(shape.as_list()) if shape is not None and shape.rank is not None else None
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.name = name
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        try:
            self.axes = {int(k): v for k, v in (axes or {}).items()}
        except (ValueError, TypeError):
            raise TypeError(f"Argument `axes` must be a dict with integer keys. Received: axes={axes}")
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            max_dim = (self.ndim if self.ndim is not None else self.max_ndim) - 1
            if max(self.axes) > max_dim:
                raise ValueError(f"Axis {max(self.axes)} is greater than the maximum allowed value: {max_dim}")

    def __repr__(self):
        spec = [f"dtype={self.dtype}" if self.dtype else "", f"shape={self.shape}" if self.shape else "",
                f"ndim={self.ndim}" if self.ndim is not None else "",
                f"max_ndim={self.max_ndim}" if self.max_ndim is not None else "",
                f"min_ndim={self.min_ndim}" if self.min_ndim is not None else "",
                f"axes={self.axes}" if self.axes else ""]
        return f"InputSpec({', '.join(x for x in spec if x)})"

    def get_config(self):
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim, "max_ndim": self.max_ndim,
                "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _shape_str(shape):
    return str(tuple(shape.as_list())) if shape.rank is not None else "<unknown>"


def assert_input_compatibility(input_spec, inputs, layer_name):
    """Raises IncompatibleInputError when ``inputs`` (tensors or KerasTensors) do not fit ``input_spec``."""
    if not input_spec:
        return
    specs = nest.flatten(input_spec)
    flat = nest.flatten(inputs)
    if len(flat) != len(specs):
        raise IncompatibleInputError(f'Layer "{layer_name}" expects {len(specs)} input(s), but it received '
                                     f"{len(flat)} input tensors. Inputs received: {flat}")
    for index, (x, spec) in enumerate(zip(flat, specs)):
        if spec is None:
            continue
        shape = TensorShape(getattr(x, "shape", None))
        where = f'Input {index} of layer "{layer_name}" is incompatible with the layer'
        if shape.rank is None:
            continue
        rank = shape.rank
        if spec.ndim is not None and not spec.allow_last_axis_squeeze and rank != spec.ndim:
            raise IncompatibleInputError(f"{where}: expected ndim={spec.ndim}, found ndim={rank}. "
                                         f"Full shape received: {_shape_str(shape)}")
        if spec.max_ndim is not None and rank > spec.max_ndim:
            raise IncompatibleInputError(f"{where}: expected max_ndim={spec.max_ndim}, found ndim={rank}. "
                                         f"Full shape received: {_shape_str(shape)}")
        if spec.min_ndim is not None and rank < spec.min_ndim:
            raise IncompatibleInputError(f"{where}: expected min_ndim={spec.min_ndim}, found ndim={rank}. "
                                         f"Full shape received: {_shape_str(shape)}")
        if spec.dtype is not None and getattr(x, "dtype", None) is not None:
            if x.dtype.name != str(getattr(spec.dtype, "name", spec.dtype)):
                raise IncompatibleInputError(f"{where}: expected dtype={spec.dtype}, found dtype={x.dtype.name}")
        dims = shape.as_list()
        for axis, value in spec.axes.items():
            if value is None:
                continue
            if -rank <= axis < rank and dims[axis] is not None and dims[axis] != value:
                raise IncompatibleInputError(f"{where}: expected axis {axis} of input shape to have value "
                                             f"{value}, but received input with shape {_shape_str(shape)}")
        if spec.shape is not None:
            for got, want in zip(dims, spec.shape):
                if want is not None and got is not None and got != want:
                    raise IncompatibleInputError(f'{where}: expected shape={spec.shape}, found shape='
                                                 f"{_shape_str(shape)}")
