"""The user functions of dataset transformations (map, filter, reduce): each is traced once, for the
input's element spec, into an ember.function graph function, as TensorFlow's StructuredFunctionWrapper.
The parallel map hands that function's compiled plan to C++ worker threads (src/python/py_data.cc)."""

import warnings

from ember import _C
from ember.data import structure
from ember.framework.tensor_spec import TensorSpec


def _should_unpack(value):
    # TensorFlow passes a tuple element as positional arguments, anything else (a dict, a namedtuple, a
    # tensor) as one argument.
    return type(value) is tuple


class TracedFunction:
    """``fn`` traced for elements of ``input_spec``; ``output_spec`` is the structure it returns.
    ``what`` (``"Dataset.map()"``) names the transformation in errors."""

    def __init__(self, fn, input_spec, what, extra_spec=None):
        from ember import polymorphic_function

        self.what = what
        outputs = {}
        specs = structure.flatten(input_spec)
        extra = structure.flatten(extra_spec) if extra_spec is not None else []

        def flat_fn(*flat):
            flat = list(flat)
            if extra_spec is not None:  # reduce: (state, element)
                state = structure.pack(extra_spec, flat[:len(extra)])
                value = structure.pack(input_spec, flat[len(extra):])
                result = fn(state, value)
            else:
                value = structure.pack(input_spec, flat)
                result = fn(*value) if _should_unpack(value) else fn(value)
            if isinstance(result, list):
                warnings.warn(f"{what}: the function returned a list; it is converted to a tuple, as "
                              "TensorFlow does. Return a tuple (or a tensor) to silence this.", stacklevel=2)
                result = tuple(result)
            if result is None:
                raise TypeError(f"{what}: the function must return tensors or a nested structure of tensors, "
                                "got None")
            result = structure.map_structure(lambda v: _output(v, what), result)
            outputs["structure"] = result
            return structure.flatten(result)

        flat_fn.__name__ = getattr(fn, "__name__", "dataset_fn").replace("<", "").replace(">", "")
        signature = [TensorSpec(s.shape, s.dtype) for s in extra + specs]
        token = _C.pause_trace()  # a dataset made inside a trace still runs its functions eagerly
        try:
            traced = polymorphic_function.function(flat_fn, input_signature=signature)
            self.concrete = traced.get_concrete_function()
        finally:
            _C.resume_trace(token)
        self.output_structure = outputs["structure"]
        self.output_spec = structure.specs_of(self.output_structure)
        self.graph_function = self.concrete._gf

    def __call__(self, flat):
        return tuple(self.graph_function(list(flat)))


def _output(value, what):
    from ember.framework.tensor import Tensor

    if isinstance(value, Tensor):
        return value
    try:
        return structure.to_tensor(value, what)
    except TypeError:
        raise TypeError(f"Unsupported return value from function passed to {what}: {value!r}.") from None
