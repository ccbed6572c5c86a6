"""The sources of tf.data: from_tensor_slices, from_tensors, range and from_generator."""

from ember import _C, errors
from ember.data import structure
from ember.data.dataset_ops import Dataset, _count
from ember.dtypes import as_dtype
from ember.framework.tensor import Tensor, constant
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec


def _eager_structure(tensors, what):
    value = structure.normalize(tensors, what)
    for t in structure.flatten(value):
        if t._is_symbolic:
            raise NotImplementedError(f"{what}: a dataset of graph tensors (made from a function's arguments "
                                      "while tracing) is not supported yet; make the dataset outside the "
                                      "function and pass it in, or iterate it there")
    return value


class _TensorSliceDataset(Dataset):
    def __init__(self, tensors):
        what = "Dataset.from_tensor_slices()"
        value = _eager_structure(tensors, what)
        flat = structure.flatten(value)
        if not flat:
            raise ValueError(f"{what}: expected at least one tensor, got an empty structure")
        rows = None
        for t in flat:
            if t.shape.rank == 0:
                raise ValueError(f"{what}: Unbatching a tensor is only supported for rank >= 1 (got a scalar)")
            n = t.shape[0]
            if rows is not None and n != rows:
                raise ValueError(f"{what}: all components must have the same size in their first dimension: "
                                 f"Dimensions {rows} and {n} are not compatible")
            rows = n
        self._flat = flat
        self._rows = rows
        self._spec = structure.map_structure(lambda t: TensorSpec(t.shape[1:], t.dtype), value)

    def _native(self):
        return _C.data_slices(list(self._flat))

    def _cardinality(self):
        return self._rows


class _TensorDataset(Dataset):
    def __init__(self, tensors):
        value = _eager_structure(tensors, "Dataset.from_tensors()")
        self._flat = tuple(structure.flatten(value))
        self._spec = structure.specs_of(value)

    def _flat_iter(self):
        return iter((self._flat,))

    def _cardinality(self):
        return 1


class _RangeDataset(Dataset):
    def __init__(self, args, output_type):
        what = "Dataset.range()"
        if not 1 <= len(args) <= 3:
            raise TypeError(f"{what}: expected 1 to 3 arguments (start, stop, step), got {len(args)}")
        values = [_count(a, what, "each argument") for a in args]
        start, stop, step = (0, values[0], 1) if len(values) == 1 else (values + [1])[:3]
        if step == 0:
            raise errors.InvalidArgumentError(None, None, f"{what}: step must not be 0")
        self._range = range(start, stop, step)
        self._dtype = as_dtype(output_type)
        self._spec = TensorSpec([], self._dtype)

    def _flat_iter(self):
        dtype = self._dtype
        return ((constant(i, dtype=dtype),) for i in self._range)

    def _cardinality(self):
        return len(self._range)


def _signature_from(output_types, output_shapes, output_signature, what):
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise TypeError(f"{what}: give either `output_signature` or `output_types`/`output_shapes`")
        for s in structure.flatten(output_signature):
            if not isinstance(s, TensorSpec):
                raise TypeError(f"{what}: `output_signature` must hold TensorSpecs, got {s!r}")
        return output_signature
    if output_types is None:
        raise TypeError(f"{what}: `output_signature` must be given")
    if output_shapes is None:
        return structure.map_structure(lambda t: TensorSpec(TensorShape(None), as_dtype(t)), output_types)
    flat_types = structure.flatten(output_types)
    flat_shapes = _flatten_shapes(output_shapes, len(flat_types))
    return structure.pack(output_types, [TensorSpec(TensorShape(s), as_dtype(t))
                                         for t, s in zip(flat_types, flat_shapes)])


def _flatten_shapes(shapes, n):
    # A shape is a list or TensorShape (a leaf), so a structure of shapes is tuples/dicts of those.
    if n == 1 and not isinstance(shapes, dict) and not (isinstance(shapes, tuple) and shapes and
                                                       isinstance(shapes[0], (list, tuple, TensorShape))):
        return [shapes]
    out = []

    def walk(x):
        if isinstance(x, dict):
            for k in sorted(x):
                walk(x[k])
        elif isinstance(x, tuple) and (not x or isinstance(x[0], (tuple, list, dict, TensorShape))):
            for v in x:
                walk(v)
        else:
            out.append(x)
    walk(shapes)
    return out


class _GeneratorDataset(Dataset):
    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        what = "Dataset.from_generator()"
        if not callable(generator):
            raise TypeError(f"{what}: `generator` must be a callable, got {type(generator).__name__}")
        self._generator = generator
        self._args = tuple(args) if args is not None else ()
        self._spec = _signature_from(output_types, output_shapes, output_signature, what)

    def _flat_iter(self):
        specs = structure.flatten(self._spec)
        spec = self._spec
        args = [a.numpy() if isinstance(a, Tensor) else a for a in self._args]
        for value in self._generator(*args):
            yield _generator_element(value, spec, specs)


def _generator_element(value, spec, specs):
    if structure.is_structure(spec) and not structure.same_structure(spec, value if structure.is_structure(value)
                                                                      else object()):
        raise errors.InvalidArgumentError(None, None, f"TypeError: `generator` yielded an element that did not "
                                          f"match the expected structure. The expected structure was {spec}, "
                                          f"but the yielded element was {value!r}.")
    leaves = structure.flatten(value) if structure.is_structure(spec) else [value]
    out = []
    for leaf, s in zip(leaves, specs):
        try:
            t = structure.to_tensor(leaf, "from_generator", dtype=s.dtype)
        except (TypeError, ValueError):
            raise errors.InvalidArgumentError(None, None, f"TypeError: `generator` yielded an element that could "
                                              f"not be converted to the expected type. The expected type was "
                                              f"{s.dtype.name}, but the yielded element was {leaf!r}.") from None
        if not s.shape.is_compatible_with(t.shape):
            raise errors.InvalidArgumentError(None, None, f"TypeError: `generator` yielded an element of shape "
                                              f"{tuple(t.shape.as_list())} where an element of shape "
                                              f"{tuple(s.shape.as_list()) if s.shape.rank is not None else None}"
                                              f" was expected.")
        out.append(t)
    return tuple(out)


