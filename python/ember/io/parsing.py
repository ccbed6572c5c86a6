"""tf.io.parse_example / parse_single_example and the feature specs (FixedLenFeature, VarLenFeature,
RaggedFeature), over the ParseExampleFeature op (src/ember/ops/parse_example.cc): one op per feature, each
reading that feature from every serialized tf.train.Example. The message classes (tf.train.Example,
Features, Feature, BytesList, FloatList, Int64List, SequenceExample) are those of proto/ember/example.proto,
whose bytes are TensorFlow's."""

import collections

import numpy as np

from ember import _C, dtypes
from ember.framework import protos
from ember.framework.tensor import Tensor, convert_to_tensor

_ParseExampleFeature = _C.op("ParseExampleFeature")
_EXAMPLE_DTYPES = (dtypes.float32, dtypes.int64, dtypes.string)


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of a fixed number of values, parsed to a dense tensor of ``shape`` (per record)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


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
        raise ValueError(f"parse_example: FixedLenFeature {key!r} needs a fully defined shape, got {shape!r} "
                         "(FixedLenSequenceFeature is not implemented)")
    return [int(d) for d in dims]


def _parse_one(serialized, key, spec):
    from ember import ragged, sparse

    if isinstance(spec, FixedLenFeature):
        dtype = _check_dtype(spec.dtype, key)
        shape = _shape(spec.shape, key)
        required = spec.default_value is None
        size = int(np.prod(shape)) if shape else 1
        if required:
            default = convert_to_tensor(np.zeros([0], dtype.as_numpy_dtype) if dtype != dtypes.string else
                                        np.array([], dtype=object), dtype=dtype)
        else:
            value = spec.default_value
            array = np.asarray(value.numpy() if isinstance(value, Tensor) else value,
                               dtype=object if dtype == dtypes.string else dtype.as_numpy_dtype)
            if array.size != size:
                raise ValueError(f"parse_example: the default of FixedLenFeature {key!r} has {array.size} "
                                 f"value(s), its shape {shape} holds {size}")
            default = convert_to_tensor(array.reshape([size]), dtype=dtype)
        return _ParseExampleFeature(serialized, key, "dense", dtype, shape, required, default, dtypes.int64)
    if isinstance(spec, VarLenFeature):
        dtype = _check_dtype(spec.dtype, key)
        empty = convert_to_tensor(np.zeros([0], np.float32))
        indices, values, dense_shape = _ParseExampleFeature(serialized, key, "var_len", dtype, [], True, empty,
                                                            dtypes.int64)
        return sparse.SparseTensor(indices, values, dense_shape)
    if isinstance(spec, RaggedFeature):
        dtype = _check_dtype(spec.dtype, key)
        if spec.partitions:
            raise NotImplementedError(f"parse_example: RaggedFeature {key!r} with partitions is not implemented")
        empty = convert_to_tensor(np.zeros([0], np.float32))
        splits_dtype = dtypes.as_dtype(spec.row_splits_dtype)
        out = _ParseExampleFeature(serialized, spec.value_key or key, "ragged", dtype, [], True, empty,
                                   splits_dtype)
        if serialized.shape.rank == 0:
            return out
        values, splits = out
        return ragged.RaggedTensor.from_row_splits(values, splits, validate=False)
    raise TypeError(f"parse_example: feature {key!r}: expected a FixedLenFeature, VarLenFeature or RaggedFeature, "
                    f"got {spec!r}")


def parse_example(serialized, features, example_names=None, name=None):
    """A dict of the ``features`` (key -> spec) of each serialized Example of the vector ``serialized``."""
    if not isinstance(features, dict) or not features:
        raise ValueError(f"parse_example: features must be a non-empty dict of feature specs, got {features!r}")
    serialized = serialized if isinstance(serialized, Tensor) else convert_to_tensor(serialized, dtype=dtypes.string)
    if serialized.dtype != dtypes.string:
        raise TypeError(f"parse_example: serialized must be a string tensor, got {serialized.dtype.name}")
    return {key: _parse_one(serialized, key, spec) for key, spec in features.items()}


def parse_single_example(serialized, features, example_names=None, name=None):
    """parse_example of one serialized Example (a scalar): no batch dimension in the results."""
    serialized = serialized if isinstance(serialized, Tensor) else convert_to_tensor(serialized, dtype=dtypes.string)
    if serialized.shape.rank not in (0, None):
        raise ValueError(f"parse_single_example: serialized must be a scalar, got shape {serialized.shape}")
    return parse_example(serialized, features)


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
