"""tf.io.parse_example / parse_single_example and the feature specs (FixedLenFeature, FixedLenSequenceFeature,
VarLenFeature, RaggedFeature), over TensorFlow's ParseExampleV2 op (src/ember/ops/parse_example.cc): one node
parses every feature of every serialized tf.train.Example, so a graph or SavedModel holds the op TensorFlow's
holds. The message classes (tf.train.Example, Features, Feature, BytesList, FloatList, Int64List,
SequenceExample) are those of proto/ember/example.proto, whose bytes are TensorFlow's."""

import collections

import numpy as np

from ember import _C, dtypes
from ember.framework import protos
from ember.framework.tensor import Tensor, convert_to_tensor

_ParseExampleV2 = _C.op("ParseExampleV2")
_EXAMPLE_DTYPES = (dtypes.float32, dtypes.int64, dtypes.string)


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of a fixed number of values, parsed to a dense tensor of ``shape`` (per record)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple("FixedLenSequenceFeature",
                                                     ["shape", "dtype", "allow_missing", "default_value"])):
    """A feature of any number of steps of ``shape``, parsed to [batch, longest, *shape], padded with
    ``default_value`` (0 or b"" when None)."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any number of values, parsed to a SparseTensor [batch, longest]."""


class RaggedFeature(collections.namedtuple("RaggedFeature", ["dtype", "value_key", "partitions",
                                                             "row_splits_dtype", "validate"])):
    """A feature of any number of values, parsed to a RaggedTensor [batch, None] (partitions not supported)."""

    def __new__(cls, dtype, value_key=None, partitions=(), row_splits_dtype=dtypes.int32, validate=False):
        return super().__new__(cls, dtype, value_key, partitions, row_splits_dtype, validate)


def _check_dtype(dtype, key):
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _EXAMPLE_DTYPES:
        raise ValueError(f"parse_example: feature {key!r} has dtype {dtype.name}; an Example holds float32, "
                         "int64 or string values")
    return dtype


def _shape(shape, key):
    dims = [shape] if isinstance(shape, int) else list(shape if shape is not None else [])
    if any(d is None or int(d) < 0 for d in dims):
        raise ValueError(f"parse_example: feature {key!r} needs a fully defined shape, got {shape!r}")
    return [int(d) for d in dims]


def _values(value, dtype, shape, what):
    """`value` as a tensor of `dtype` and `shape` (as TensorFlow's kernel wants a default); `what` names it
    in the error."""
    size = int(np.prod(shape))
    array = np.asarray(value.numpy() if isinstance(value, Tensor) else value,
                       dtype=object if dtype == dtypes.string else dtype.as_numpy_dtype)
    if array.size != size:
        raise ValueError(f"parse_example: {what} has {array.size} value(s), expected {size}")
    return convert_to_tensor(array.reshape(shape), dtype=dtype)


def _strings(values):
    return convert_to_tensor(np.array(list(values), dtype=object).reshape([len(values)]), dtype=dtypes.string)


class _Params:
    """The inputs and attributes of one ParseExampleV2 node, each kind's keys in sorted order (as
    TensorFlow's parsing_config orders them)."""

    def __init__(self, features):
        self.sparse, self.dense, self.ragged = [], [], []  # (output key, feature key, ...) per kind
        self.dense_defaults, self.dense_types, self.dense_shapes = [], [], []
        for key in sorted(features):
            spec = features[key]
            if isinstance(spec, VarLenFeature):
                self.sparse.append((key, key, _check_dtype(spec.dtype, key)))
            elif isinstance(spec, RaggedFeature):
                if spec.partitions:
                    raise NotImplementedError(f"parse_example: RaggedFeature {key!r} with partitions is not "
                                              "implemented")
                self.ragged.append((key, spec.value_key or key, _check_dtype(spec.dtype, key),
                                    dtypes.as_dtype(spec.row_splits_dtype)))
            elif isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
                self._add_dense(key, spec)
            else:
                raise TypeError(f"parse_example: feature {key!r}: expected a FixedLenFeature, "
                                f"FixedLenSequenceFeature, VarLenFeature or RaggedFeature, got {spec!r}")

        self._check_disjoint()

    def _check_disjoint(self):
        """As TensorFlow: a feature key is parsed as one kind only."""
        kinds = {"dense": {d[1] for d in self.dense}, "sparse": {s[1] for s in self.sparse},
                 "ragged": {r[1] for r in self.ragged}}
        for first, second in (("dense", "sparse"), ("ragged", "sparse"), ("dense", "ragged")):
            both = kinds[first] & kinds[second]
            if both:
                raise ValueError(f"parse_example: {first.capitalize()} and {second} keys must not intersect; "
                                 f"intersection: {sorted(both)}")

    def _add_dense(self, key, spec):
        dtype = _check_dtype(spec.dtype, key)
        shape = _shape(spec.shape, key)
        what = f"the {'padding' if isinstance(spec, FixedLenSequenceFeature) else 'default'} of " \
               f"{type(spec).__name__} {key!r}"
        if isinstance(spec, FixedLenSequenceFeature):
            if not spec.allow_missing:
                raise ValueError(f"parse_example: FixedLenSequenceFeature {key!r} needs allow_missing=True")
            padding = spec.default_value
            if padding is None:
                padding = b"" if dtype == dtypes.string else 0
            default, shape = _values(padding, dtype, [], what), [-1] + shape
        elif spec.default_value is None:  # required: an empty default
            default = _values([], dtype, [0], what)
        else:
            default = _values(spec.default_value, dtype, shape, what)
        self.dense.append((key, key))
        self.dense_defaults.append(default)
        self.dense_types.append(dtype)
        self.dense_shapes.append(shape)

    def run(self, serialized, names):
        outputs = _ParseExampleV2(
            serialized, names, _strings([s[1] for s in self.sparse]), _strings([d[1] for d in self.dense]),
            _strings([r[1] for r in self.ragged]), self.dense_defaults, self.dense_types, len(self.sparse),
            [s[2] for s in self.sparse], [r[2] for r in self.ragged], [r[3] for r in self.ragged],
            self.dense_shapes)
        return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]

    def results(self, outputs, scalar):
        from ember import ragged, sparse

        num_sparse, num_dense, num_ragged = len(self.sparse), len(self.dense), len(self.ragged)
        result = {}
        for i, (key, _, _) in enumerate(self.sparse):
            result[key] = sparse.SparseTensor(outputs[i], outputs[num_sparse + i], outputs[2 * num_sparse + i])
        for i, (key, _) in enumerate(self.dense):
            result[key] = outputs[3 * num_sparse + i]
        base = 3 * num_sparse + num_dense
        for i, (key, _, _, _) in enumerate(self.ragged):
            values, splits = outputs[base + i], outputs[base + num_ragged + i]
            result[key] = values if scalar else ragged.RaggedTensor.from_row_splits(values, splits, validate=False)
        return result


def parse_example(serialized, features, example_names=None, name=None):
    """A dict of the ``features`` (key -> spec) of each serialized Example of the vector ``serialized``."""
    if not isinstance(features, dict) or not features:
        raise ValueError(f"parse_example: features must be a non-empty dict of feature specs, got {features!r}")
    serialized = serialized if isinstance(serialized, Tensor) else convert_to_tensor(serialized, dtype=dtypes.string)
    if serialized.dtype != dtypes.string:
        raise TypeError(f"parse_example: serialized must be a string tensor, got {serialized.dtype.name}")
    if example_names is None:
        names = _strings([])
    else:
        names = example_names if isinstance(example_names, Tensor) else convert_to_tensor(example_names,
                                                                                          dtype=dtypes.string)
    params = _Params(features)
    return params.results(params.run(serialized, names), scalar=serialized.shape.rank == 0)


def parse_single_example(serialized, features, example_names=None, name=None):
    """parse_example of one serialized Example (a scalar): no batch dimension in the results."""
    serialized = serialized if isinstance(serialized, Tensor) else convert_to_tensor(serialized, dtype=dtypes.string)
    if serialized.shape.rank not in (0, None):
        raise ValueError(f"parse_single_example: serialized must be a scalar, got shape {serialized.shape}")
    return parse_example(serialized, features, example_names)


def _message(name):
    return protos.message_class(name)


Example = _message("Example")
SequenceExample = _message("SequenceExample")
Features = _message("Features")
Feature = _message("Feature")
FeatureList = _message("FeatureList")
FeatureLists = _message("FeatureLists")
BytesList = _message("BytesList")
FloatList = _message("FloatList")
Int64List = _message("Int64List")
