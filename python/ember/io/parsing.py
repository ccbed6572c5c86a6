"""tf.io.parse_example / parse_single_example, tf.io.parse_sequence_example / parse_single_sequence_example and
the feature specs (FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, RaggedFeature with its
partitions), over TensorFlow's ParseExampleV2 and ParseSequenceExampleV2 ops (src/ember/ops/parse_example.cc):
one node parses every feature of every serialized record, so a graph or SavedModel holds the op TensorFlow's
holds. The message classes (tf.train.Example, Features, Feature, BytesList, FloatList, Int64List,
SequenceExample, FeatureList, FeatureLists) are those of proto/ember/example.proto, whose bytes are
TensorFlow's."""

import collections

import numpy as np

from ember import _C, dtypes
from ember.framework import protos
from ember.framework.tensor import Tensor, convert_to_tensor

_ParseExampleV2 = _C.op("ParseExampleV2")
_ParseSequenceExampleV2 = _C.op("ParseSequenceExampleV2")
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
    """A feature of any number of values, parsed to a RaggedTensor [batch, None]; each of ``partitions``
    (outermost first) splits the values into one more ragged dimension, read from another feature (its
    ``key``: int64 row splits, lengths, starts, limits or value row ids per record) or of a uniform length."""

    RowSplits = collections.namedtuple("RowSplits", ["key"])
    RowLengths = collections.namedtuple("RowLengths", ["key"])
    RowStarts = collections.namedtuple("RowStarts", ["key"])
    RowLimits = collections.namedtuple("RowLimits", ["key"])
    ValueRowIds = collections.namedtuple("ValueRowIds", ["key"])
    UniformRowLength = collections.namedtuple("UniformRowLength", ["length"])
    _PARTITION_TYPES = (RowSplits, RowLengths, RowStarts, RowLimits, ValueRowIds, UniformRowLength)

    def __new__(cls, dtype, value_key=None, partitions=(), row_splits_dtype=dtypes.int32, validate=False):
        if value_key is not None and (not isinstance(value_key, str) or not value_key):
            raise ValueError(f"RaggedFeature: value_key must be a non-empty string, got {value_key!r}")
        if not isinstance(partitions, (list, tuple)):
            raise TypeError(f"RaggedFeature: partitions must be a list or tuple, got {type(partitions).__name__}")
        for partition in partitions:
            if not isinstance(partition, cls._PARTITION_TYPES):
                raise TypeError("RaggedFeature: each partition must be a RaggedFeature.RowSplits, RowLengths, "
                                f"RowStarts, RowLimits, ValueRowIds or UniformRowLength, got {partition!r}")
        dtype, row_splits_dtype = dtypes.as_dtype(dtype), dtypes.as_dtype(row_splits_dtype)
        if row_splits_dtype not in (dtypes.int32, dtypes.int64):
            raise ValueError(f"RaggedFeature: row_splits_dtype must be int32 or int64, got {row_splits_dtype.name}")
        return super().__new__(cls, dtype, value_key, tuple(partitions), row_splits_dtype, validate)


def _check_dtype(dtype, key, op):
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _EXAMPLE_DTYPES:
        raise ValueError(f"{op}: feature {key!r} has dtype {dtype.name}; an Example holds float32, int64 or "
                         "string values")
    return dtype


def _shape(shape, key, op):
    dims = [shape] if isinstance(shape, int) else list(shape if shape is not None else [])
    if any(d is None or int(d) < 0 for d in dims):
        raise ValueError(f"{op}: feature {key!r} needs a fully defined shape, got {shape!r}")
    return [int(d) for d in dims]


def _values(value, dtype, shape, what, op):
    """`value` as a tensor of `dtype` and `shape` (as TensorFlow's kernel wants a default); `what` names it
    in the error."""
    size = int(np.prod(shape))
    array = np.asarray(value.numpy() if isinstance(value, Tensor) else value,
                       dtype=object if dtype == dtypes.string else dtype.as_numpy_dtype)
    if array.size != size:
        raise ValueError(f"{op}: {what} has {array.size} value(s), expected {size}")
    return convert_to_tensor(array.reshape(shape), dtype=dtype)


def _strings(values):
    return convert_to_tensor(np.array(list(values), dtype=object).reshape([len(values)]), dtype=dtypes.string)


def _string_tensor(value):
    return value if isinstance(value, Tensor) else convert_to_tensor(value, dtype=dtypes.string)


class _Features:
    """One set of feature specs (an Example's, a SequenceExample's context or its feature lists) as the keys,
    defaults and attributes of a parse op: the sparse and dense keys sorted, the ragged ones in the order
    TensorFlow's parsing_config adds them (each feature's value key, then its partitions' keys, once)."""

    def __init__(self, features, op, feature_lists=False):
        self.op, self.feature_lists = op, feature_lists
        self.sparse = []  # (key, dtype)
        self.dense = []  # (key, dtype, shape, default or missing_assumed_empty)
        self.ragged = []  # (parse key, value dtype, split dtype)
        self.ragged_specs = {}  # output key -> RaggedFeature
        for key in sorted(features or {}):
            spec = features[key]
            if isinstance(spec, VarLenFeature):
                self.sparse.append((key, _check_dtype(spec.dtype, key, op)))
            elif isinstance(spec, RaggedFeature):
                self._add_ragged(key, spec)
            elif isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
                self._add_dense(key, spec)
            else:
                raise TypeError(f"{op}: feature {key!r}: expected a FixedLenFeature, FixedLenSequenceFeature, "
                                f"VarLenFeature or RaggedFeature, got {spec!r}")
        self._check_disjoint()

    def _add_ragged(self, key, spec):
        self._add_ragged_key(spec.value_key or key, _check_dtype(spec.dtype, key, self.op), spec.row_splits_dtype)
        for partition in spec.partitions:
            if not isinstance(partition, RaggedFeature.UniformRowLength):
                self._add_ragged_key(partition.key, dtypes.int64, spec.row_splits_dtype)
        self.ragged_specs[key] = spec

    def _add_ragged_key(self, key, value_type, split_type):
        for known, known_value_type, known_split_type in self.ragged:
            if known == key:
                if (known_value_type, known_split_type) != (value_type, split_type):
                    raise ValueError(f"{self.op}: ragged feature {key!r} is read as {known_value_type.name} "
                                     f"(splits {known_split_type.name}) and as {value_type.name} (splits "
                                     f"{split_type.name})")
                return
        self.ragged.append((key, value_type, split_type))

    def _check_disjoint(self):
        """As TensorFlow: a feature key is parsed as one kind only."""
        kinds = {"dense": {d[0] for d in self.dense}, "sparse": {s[0] for s in self.sparse},
                 "ragged": {r[0] for r in self.ragged}}
        for first, second in (("dense", "sparse"), ("ragged", "sparse"), ("dense", "ragged")):
            both = kinds[first] & kinds[second]
            if both:
                raise ValueError(f"{self.op}: {first.capitalize()} and {second} keys must not intersect; "
                                 f"intersection: {sorted(both)}")

    def _add_dense(self, key, spec):
        op = self.op
        dtype = _check_dtype(spec.dtype, key, op)
        sequence = isinstance(spec, FixedLenSequenceFeature)
        if self.feature_lists != sequence and self.feature_lists is not None:
            where, kind = (("sequence_features", "FixedLenSequenceFeature") if self.feature_lists else
                           ("context_features", "FixedLenFeature"))
            raise ValueError(f"{op}: unsupported {type(spec).__name__} {key!r} in {where}, whose dense "
                             f"features are {kind}s")
        shape = _shape(spec.shape, key, op)
        what = f"the {'padding' if sequence else 'default'} of {type(spec).__name__} {key!r}"
        if self.feature_lists:  # a feature list: no default, missing ones may read as empty
            if spec.default_value is not None:
                raise ValueError(f"{op}: FixedLenSequenceFeature {key!r} in sequence_features takes no "
                                 f"default_value (its steps are padded with zeros), got {spec.default_value!r}")
            default = bool(spec.allow_missing)
        elif sequence:
            if not spec.allow_missing:
                raise ValueError(f"{op}: FixedLenSequenceFeature {key!r} needs allow_missing=True")
            padding = spec.default_value
            if padding is None:
                padding = b"" if dtype == dtypes.string else 0
            default, shape = _values(padding, dtype, [], what, op), [-1] + shape
        elif spec.default_value is None:  # required: an empty default
            default = _values([], dtype, [0], what, op)
        else:
            default = _values(spec.default_value, dtype, shape, what, op)
        self.dense.append((key, dtype, shape, default))

    def keys(self):
        return [_strings([s[0] for s in self.sparse]), _strings([d[0] for d in self.dense]),
                _strings([r[0] for r in self.ragged])]

    def results(self, outputs, scalar):
        """The features from this set's outputs (consumed from the front of the list `outputs`)."""
        from ember import ragged, sparse

        def take(n):
            taken = outputs[:n]
            del outputs[:n]
            return taken

        num_sparse, num_dense, num_ragged = len(self.sparse), len(self.dense), len(self.ragged)
        indices, values, shapes = take(num_sparse), take(num_sparse), take(num_sparse)
        result = {key: sparse.SparseTensor(i, v, s) for (key, _), i, v, s in zip(self.sparse, indices, values, shapes)}
        result.update((d[0], value) for d, value in zip(self.dense, take(num_dense)))
        lengths = dict(zip((d[0] for d in self.dense), take(num_dense) if self.feature_lists else []))
        ragged_values, outer_splits = take(num_ragged), take(num_ragged)
        inner_splits = take(num_ragged) if self.feature_lists else [None] * num_ragged
        parsed = {}  # parse key -> values (a scalar input's Example) or a RaggedTensor
        for (key, _, _), v, outer, inner in zip(self.ragged, ragged_values, outer_splits, inner_splits):
            if inner is not None:
                v = ragged.RaggedTensor.from_row_splits(v, inner, validate=False)
            parsed[key] = v if scalar else ragged.RaggedTensor.from_row_splits(v, outer, validate=False)
        for key, spec in self.ragged_specs.items():
            result[key] = _partitioned(parsed, key, spec)
        return result, lengths


def _partitioned(parsed, key, spec):
    """RaggedFeature `spec`'s values split by its partitions, innermost first (as TensorFlow builds them)."""
    from ember import ragged

    rt = parsed[spec.value_key or key]
    if not isinstance(rt, ragged.RaggedTensor):  # one Example: no batch dimension
        for partition in reversed(spec.partitions):
            rt = _partition_record(rt, partition, parsed, spec)
        return rt
    outer_splits = None
    if rt.ragged_rank > 1:  # a batch of feature lists: the records and their steps, split again at the end
        outer_splits, rt = rt.row_splits, rt.values
    for partition in reversed(spec.partitions):
        rt = _partition_batch(rt, partition, parsed, key, spec, outer_splits)
    if outer_splits is not None:
        rt = ragged.RaggedTensor.from_row_splits(rt, outer_splits, validate=spec.validate)
    return rt


def _partition_record(values, partition, parsed, spec):
    """`values` (one record's) split into rows by `partition`."""
    import ember
    from ember.ragged import RaggedTensor

    if isinstance(partition, RaggedFeature.UniformRowLength):
        if isinstance(values, RaggedTensor):
            length = convert_to_tensor(partition.length, dtype=spec.row_splits_dtype)
            return RaggedTensor.from_uniform_row_length(values, length, validate=spec.validate)
        return ember.reshape(values, ember.concat([[-1, partition.length], ember.shape(values)[1:]], axis=0))
    rows = ember.cast(parsed[partition.key], spec.row_splits_dtype)
    build = {RaggedFeature.RowSplits: RaggedTensor.from_row_splits,
             RaggedFeature.RowLengths: RaggedTensor.from_row_lengths,
             RaggedFeature.RowStarts: RaggedTensor.from_row_starts,
             RaggedFeature.RowLimits: RaggedTensor.from_row_limits,
             RaggedFeature.ValueRowIds: RaggedTensor.from_value_rowids}[type(partition)]
    return build(values, rows, validate=spec.validate)


def _partition_batch(rt, partition, parsed, key, spec, outer_splits):
    """`rt` ([batch, (values)]) with each record's values split into rows by `partition`: the partition's
    per-record row positions are offset by where the record's values start in rt.values."""
    import ember
    from ember.ragged import RaggedTensor

    if isinstance(partition, RaggedFeature.UniformRowLength):
        length = partition.length
        if rt.ragged_rank > 1:
            rows = RaggedTensor.from_uniform_row_length(
                rt.values, convert_to_tensor(length, dtype=rt.row_splits.dtype), validate=spec.validate)
        else:
            rows = ember.reshape(rt.values, ember.concat([[-1, length], ember.shape(rt.values)[1:]], axis=0))
        return RaggedTensor.from_row_splits(rows, rt.row_splits // length, validate=spec.validate)
    rows = parsed[partition.key]
    if rows.dtype != rt.row_splits.dtype:
        rows = ember.cast(rows, rt.row_splits.dtype)
    if outer_splits is not None:
        if spec.validate:
            ember.debugging.assert_equal(outer_splits, rows.row_splits,
                                         message=f"Feature {key}: values and partitions are not aligned")
        rows = rows.values
    per_value_start = lambda: ember.repeat(rt.row_starts(), rows.row_lengths())
    if isinstance(partition, (RaggedFeature.RowSplits, RaggedFeature.RowLimits)):
        if isinstance(partition, RaggedFeature.RowSplits):
            rows = rows[:, 1:]  # a record's splits but the first are its rows' limits
        limits = rows.values + per_value_start()
        return rows.with_values(RaggedTensor.from_row_limits(rt.values, limits, validate=spec.validate))
    if isinstance(partition, RaggedFeature.RowStarts):
        starts = rows.values + per_value_start()
        return rows.with_values(RaggedTensor.from_row_starts(rt.values, starts, validate=spec.validate))
    if isinstance(partition, RaggedFeature.RowLengths):
        return rows.with_values(RaggedTensor.from_row_lengths(rt.values, rows.values, validate=spec.validate))
    # ValueRowIds: a record's rows are 0 .. its largest id; ids are offset by the rows of the records before.
    num_rows = ember.maximum(ember.reduce_max(rows + 1, axis=1), 0)
    ids = rows.values + ember.repeat(ember.math.cumsum(num_rows, exclusive=True), rows.row_lengths())
    return RaggedTensor.from_row_lengths(RaggedTensor.from_value_rowids(rt.values, ids, validate=spec.validate),
                                         num_rows, validate=spec.validate)


def parse_example(serialized, features, example_names=None, name=None):
    """A dict of the ``features`` (key -> spec) of each serialized Example of the vector ``serialized``."""
    op = "parse_example"
    if not isinstance(features, dict) or not features:
        raise ValueError(f"{op}: features must be a non-empty dict of feature specs, got {features!r}")
    serialized = _string_tensor(serialized)
    if serialized.dtype != dtypes.string:
        raise TypeError(f"{op}: serialized must be a string tensor, got {serialized.dtype.name}")
    names = _strings([]) if example_names is None else _string_tensor(example_names)
    specs = _Features(features, op, feature_lists=None)
    outputs = _ParseExampleV2(serialized, names, *specs.keys(), [d[3] for d in specs.dense],
                              [d[1] for d in specs.dense], len(specs.sparse), [s[1] for s in specs.sparse],
                              [r[1] for r in specs.ragged], [r[2] for r in specs.ragged],
                              [d[2] for d in specs.dense])
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    return specs.results(outputs, scalar=serialized.shape.rank == 0)[0]


def parse_single_example(serialized, features, example_names=None, name=None):
    """parse_example of one serialized Example (a scalar): no batch dimension in the results."""
    return parse_example(_scalar_record(serialized, "parse_single_example"), features, example_names)


def parse_sequence_example(serialized, context_features=None, sequence_features=None, example_names=None,
                           name=None):
    """The ``context_features`` and ``sequence_features`` (feature lists) of each serialized SequenceExample
    of ``serialized``: (context dict, feature-list dict, dict of each dense feature list's lengths)."""
    return _parse_sequence_example(serialized, context_features, sequence_features, example_names,
                                   "parse_sequence_example")


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None, example_name=None,
                                  name=None):
    """parse_sequence_example of one serialized SequenceExample (a scalar): (context dict, feature-list dict),
    with no batch dimension."""
    op = "parse_single_sequence_example"
    return _parse_sequence_example(_scalar_record(serialized, op), context_features, sequence_features,
                                   example_name, op)[:2]


def _scalar_record(serialized, op):
    """`serialized` as a scalar string tensor: one of unknown rank (traced) is reshaped to one, so the parse
    op's outputs have no batch dimension."""
    import ember

    serialized = _string_tensor(serialized)
    if serialized.shape.rank is None:
        return ember.reshape(serialized, [])
    if serialized.shape.rank != 0:
        raise ValueError(f"{op}: serialized must be a scalar, got shape {serialized.shape}")
    return serialized


def _parse_sequence_example(serialized, context_features, sequence_features, example_names, op):
    if not context_features and not sequence_features:
        raise ValueError(f"{op}: context_features and sequence_features are both empty; at least one must hold "
                         "feature specs")
    for what, features in (("context_features", context_features), ("sequence_features", sequence_features)):
        if features is not None and not isinstance(features, dict):
            raise TypeError(f"{op}: {what} must be a dict of feature specs, got {features!r}")
    serialized = _string_tensor(serialized)
    if serialized.dtype != dtypes.string:
        raise TypeError(f"{op}: serialized must be a string tensor, got {serialized.dtype.name}")
    names = _strings([]) if example_names is None else _string_tensor(example_names)
    if names.shape.rank == 0:
        names = convert_to_tensor(np.reshape(names.numpy(), [1]), dtype=dtypes.string)
    context = _Features(context_features, op, feature_lists=False)
    lists = _Features(sequence_features, op, feature_lists=True)
    missing_assumed_empty = convert_to_tensor(np.array([d[3] for d in lists.dense], dtype=bool).reshape([-1]))
    outputs = _ParseSequenceExampleV2(
        serialized, names, *context.keys(), *lists.keys(), missing_assumed_empty, [d[3] for d in context.dense],
        len(context.sparse), [d[1] for d in context.dense], [s[1] for s in context.sparse],
        [r[1] for r in context.ragged], [r[2] for r in context.ragged], [d[2] for d in context.dense],
        len(lists.sparse), len(lists.dense), [d[1] for d in lists.dense], [s[1] for s in lists.sparse],
        [r[1] for r in lists.ragged], [r[2] for r in lists.ragged], [d[2] for d in lists.dense])
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    scalar = serialized.shape.rank == 0
    context_result, _ = context.results(outputs, scalar)
    lists_result, lengths = lists.results(outputs, scalar)
    return context_result, lists_result, lengths


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
