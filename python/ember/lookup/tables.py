"""The tables and initializers of ``tf.lookup`` over the table ops of ops/lookup.cc.

Each table object owns a ``_C.LookupTableHandle``; every method calls an op naming the table by that id,
eagerly or, inside ``ember.function``, as a graph node. Initialization runs once, eagerly (``init_scope``),
when the table is made, as TensorFlow 2 initializes a table created outside a function.
"""

import os

from ember import _C, dtypes, variable_creation
from ember.lookup import dense_buckets
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.init_scope import init_scope
from ember.trackable import Trackable

_Find = _C.op("LookupTableFindV2")
_Insert = _C.op("LookupTableInsertV2")
_Remove = _C.op("LookupTableRemoveV2")
_Size = _C.op("LookupTableSizeV2")
_Export = _C.op("LookupTableExportV2")
_Import = _C.op("LookupTableImportV2")
_InitializeTable = _C.op("InitializeTableV2")
_InitializeFromTextFile = _C.op("InitializeTableFromTextFileV2")


class TextFileIndex:
    """Which part of a line a text file initializer takes: the whole line or the line number (or a column
    index >= 0)."""

    WHOLE_LINE = -2
    LINE_NUMBER = -1


def _composite_map(keys, fn):
    """``fn`` over the values of a RaggedTensor or SparseTensor (the same structure back), or over a tensor."""
    if hasattr(keys, "flat_values") and hasattr(keys, "with_flat_values"):
        return keys.with_flat_values(fn(keys.flat_values))
    if hasattr(keys, "indices") and hasattr(keys, "with_values"):
        return keys.with_values(fn(keys.values))
    return fn(keys)


class KeyValueTensorInitializer(Trackable):
    """``tf.lookup.KeyValueTensorInitializer(keys, values, key_dtype=None, value_dtype=None, name=None)``."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        with init_scope():
            self._keys = convert_to_tensor(keys, dtype=key_dtype)
            self._values = convert_to_tensor(values, dtype=value_dtype)
        self._name = name or "key_value_init"
        self.key_dtype = self._keys.dtype
        self.value_dtype = self._values.dtype

    def initialize(self, table):
        """Fills ``table`` (once; InitializeTableV2)."""
        _check_initializer_dtypes(self, table)
        with init_scope():
            _InitializeTable(self._keys, self._values, table._id)


class TextFileInitializer(Trackable):
    """``tf.lookup.TextFileInitializer(filename, key_dtype, key_index, value_dtype, value_index,
    vocab_size=None, delimiter="\\t", name=None, value_index_offset=0)``: one entry per line; an index is a
    column, ``TextFileIndex.WHOLE_LINE`` or ``TextFileIndex.LINE_NUMBER``."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index, vocab_size=None, delimiter="\t",
                 name=None, value_index_offset=0):
        key_dtype, value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        if key_index < -2:
            raise ValueError(f"`key_index` should be >= -2, received: {key_index}.")
        if key_index == TextFileIndex.LINE_NUMBER and key_dtype != dtypes.int64:
            raise ValueError("`key_dtype` must be int64 if `key_index` is "
                             f"{TextFileIndex.LINE_NUMBER}, received: {key_dtype}")
        if key_index == TextFileIndex.WHOLE_LINE and not key_dtype.is_integer and key_dtype != dtypes.string:
            raise ValueError("`key_dtype` should be either integer or string for `key_index` "
                             f"{TextFileIndex.WHOLE_LINE}, received: {key_dtype}")
        if value_index < -2:
            raise ValueError(f"`value_index` should be >= -2, received: {value_index}.")
        if value_index == TextFileIndex.LINE_NUMBER and value_dtype != dtypes.int64:
            raise ValueError("`value_dtype` must be int64 for `value_index` "
                             f"{TextFileIndex.LINE_NUMBER}, received: {value_dtype}")
        if value_index == TextFileIndex.WHOLE_LINE and value_dtype != dtypes.string:
            raise ValueError("`value_dtype` must be string for `value_index` "
                             f"{TextFileIndex.WHOLE_LINE}, received: {value_dtype}")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"`vocab_size` should be > 0, received: {vocab_size}")
        if isinstance(filename, Tensor):
            filename = filename.numpy()
        if isinstance(filename, bytes):
            filename = filename.decode()
        self._filename = os.fspath(filename)
        # The vocabulary travels with a SavedModel as an asset, as TensorFlow's (its child "_filename").
        from ember.saved_model.asset import Asset

        with init_scope():
            self._filename_asset = Asset(self._filename)
        self._key_index = key_index
        self._value_index = value_index
        self._vocab_size = vocab_size
        self._delimiter = delimiter
        self._offset = value_index_offset
        self._name = name or "text_file_init"
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype

    def _trackable_children(self):
        return [("_filename", self._filename_asset)]

    def initialize(self, table):
        """Fills ``table`` from the file (once; InitializeTableFromTextFileV2)."""
        _check_initializer_dtypes(self, table)
        with init_scope():
            _InitializeFromTextFile(convert_to_tensor(self._filename), table._id, self._key_index,
                                    self._value_index, -1 if self._vocab_size is None else self._vocab_size,
                                    self._delimiter, self._offset)


def _check_initializer_dtypes(initializer, table):
    if initializer.key_dtype != table.key_dtype or initializer.value_dtype != table.value_dtype:
        raise TypeError(f"Invalid key dtype for table, expected {table.key_dtype} but got "
                        f"{initializer.key_dtype}." if initializer.key_dtype != table.key_dtype else
                        f"Invalid value dtype for table, expected {table.value_dtype} but got "
                        f"{initializer.value_dtype}.")


class _LookupInterface(Trackable):
    """What every table shows (TensorFlow's LookupInterface): dtypes, name, ``table[keys]``."""

    @property
    def key_dtype(self):
        return self._key_dtype

    @property
    def value_dtype(self):
        return self._value_dtype

    @property
    def name(self):
        return self._name

    def __getitem__(self, keys):
        return self.lookup(keys)


class _Table(_LookupInterface):
    """A table with its own resource: ``size`` and ``export`` too."""

    def __init__(self, key_dtype, value_dtype, name, is_mutable):
        self._key_dtype = dtypes.as_dtype(key_dtype)
        self._value_dtype = dtypes.as_dtype(value_dtype)
        self._name = name
        if _C.in_trace():
            if is_mutable:
                raise NotImplementedError(
                    f"{type(self).__name__} created inside ember.function: TensorFlow makes a new, empty table "
                    "on every call, which ember does not; create the table outside the function")
            # Built once, eagerly, and immutable: the same table on every call, as TensorFlow's would be.
            variable_creation.keep_with_trace(self)
        self._handle = _C.create_lookup_table(name, self._key_dtype._enum, self._value_dtype._enum, is_mutable)
        self._id = self._handle.id

    def size(self, name=None):
        """The number of entries, an int64 scalar."""
        return _Size(self._id)

    def export(self, name=None):
        """(keys, values): every entry, in no particular order."""
        return _Export(self._id, self._key_dtype, self._value_dtype)

    def _keys_of_dtype(self, keys):
        """Keys as a tensor of the key dtype; TensorFlow's TypeError for a tensor of another dtype."""
        if isinstance(keys, Tensor):
            if keys.dtype != self._key_dtype:
                raise TypeError(f"Dtype of argument `keys` must be {self._key_dtype!r}, received: {keys.dtype!r}")
            return keys
        return convert_to_tensor(keys, dtype=self._key_dtype)


class StaticHashTable(_Table):
    """``tf.lookup.StaticHashTable(initializer, default_value, name=None)``: an immutable table filled once
    by its initializer."""

    def __init__(self, initializer, default_value, name=None, experimental_is_anonymous=False):
        super().__init__(initializer.key_dtype, initializer.value_dtype, name or "hash_table", is_mutable=False)
        self._initializer = initializer
        with init_scope():
            self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
        initializer.initialize(self)

    @property
    def default_value(self):
        return self._default_value

    def lookup(self, keys, name=None):
        """The value of each key (the default where absent), shaped as ``keys``; a RaggedTensor or
        SparseTensor gives one of the same structure."""
        return _composite_map(keys, lambda k: _Find(self._keys_of_dtype(k), self._default_value, self._id))


class StaticVocabularyTable(_LookupInterface):
    """``tf.lookup.StaticVocabularyTable(initializer, num_oov_buckets, lookup_key_dtype=None, name=None)``:
    in-vocabulary keys map to their int64 ids, the others to ``vocab_size + Fingerprint64(key) %
    num_oov_buckets`` (tf.strings.to_hash_bucket_fast of the key, or of its decimal string for integers)."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None,
                 experimental_is_anonymous=False):
        if num_oov_buckets <= 0:
            raise ValueError(f"`num_oov_buckets` must be > 0; use StaticHashTable. Received: {num_oov_buckets}.")
        if initializer is not None and initializer.value_dtype != dtypes.int64:
            raise TypeError(f"Invalid `value_dtype`, expected {dtypes.int64} but got {initializer.value_dtype}.")
        if initializer is not None and initializer.key_dtype not in (dtypes.int64, dtypes.string):
            raise TypeError(f"Invalid `key_dtype`, expected one of {(dtypes.int64, dtypes.string)}, but got "
                            f"{initializer.key_dtype}.")
        self._num_oov_buckets = num_oov_buckets
        self._name = name or "hash_table"
        self._table = None if initializer is None else StaticHashTable(initializer, -1, name=self._name)
        key_dtype = self._table.key_dtype if self._table is not None else dtypes.string
        self._key_dtype = dtypes.as_dtype(lookup_key_dtype or key_dtype)
        self._value_dtype = dtypes.int64

    def size(self, name=None):
        """Vocabulary size plus the number of OOV buckets."""
        from ember.ops import math_ops

        oov = convert_to_tensor(self._num_oov_buckets, dtype=dtypes.int64)
        return oov if self._table is None else math_ops.add(self._table.size(), oov)

    def lookup(self, keys, name=None):
        return _composite_map(keys, self._lookup_dense)

    def _lookup_dense(self, keys):
        import ember

        if isinstance(keys, Tensor) and keys.dtype != self._key_dtype:
            raise TypeError(f"Dtype of argument `keys` must be {self._key_dtype!r}, received: {keys.dtype!r}")
        keys = convert_to_tensor(keys, dtype=self._key_dtype)
        if self._key_dtype == dtypes.int32 and self._table is not None:
            keys = ember.cast(keys, dtypes.int64)
        text = keys if keys.dtype == dtypes.string else ember.strings.as_string(keys)
        buckets = ember.strings.to_hash_bucket_fast(text, self._num_oov_buckets)
        if self._table is None:
            return buckets
        ids = self._table.lookup(keys)
        buckets = buckets + self._table.size()
        return ember.where(ember.not_equal(ids, self._table.default_value), ids, buckets)


class MutableHashTable(_Table):
    """``tf.lookup.experimental.MutableHashTable(key_dtype, value_dtype, default_value, name=
    "MutableHashTable", checkpoint=True)``: insert, remove, lookup, export; a ``tf.train.Checkpoint`` saves
    its entries as TensorFlow does (``<path>/.ATTRIBUTES/table-keys`` and ``-values``)."""

    def __init__(self, key_dtype, value_dtype, default_value, name="MutableHashTable", checkpoint=True,
                 experimental_is_anonymous=False):
        super().__init__(key_dtype, value_dtype, name, is_mutable=True)
        with init_scope():
            self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
        if self._default_value.shape.rank:
            raise NotImplementedError("MutableHashTable with vector values (MutableHashTableOfTensors) is not "
                                      "implemented in ember; default_value must be a scalar")
        self._checkpoint = checkpoint

    @property
    def default_value(self):
        return self._default_value

    def lookup(self, keys, dynamic_default_values=None, name=None):
        keys = self._keys_of_dtype(keys)
        default = self._default_value if dynamic_default_values is None else convert_to_tensor(
            dynamic_default_values, dtype=self._value_dtype)
        return _Find(keys, default, self._id)

    def insert(self, keys, values, name=None):
        """Sets table[keys[i]] = values[i] (keys and values of one shape)."""
        _Insert(self._keys_of_dtype(keys), convert_to_tensor(values, dtype=self._value_dtype), self._id)

    def remove(self, keys, name=None):
        """Removes the keys present."""
        if isinstance(keys, Tensor) and keys.dtype != self._key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self._key_dtype}, got {keys.dtype}.")
        _Remove(self._keys_of_dtype(keys), self._id)

    # ---- checkpointing (train/checkpoint.py): the entries as two saved tensors, as TensorFlow's
    _ember_saved_attribute = "table"
    _ember_saved_suffixes = ("-keys", "-values")

    def _ember_checkpoint_tensors(self):
        if not self._checkpoint:
            return {}
        with init_scope():
            keys, values = self.export()
        return {"-keys": keys, "-values": values}

    def _ember_restore_tensors(self, tensors):
        keys, values = tensors["-keys"], tensors["-values"]
        if keys.dtype != self._key_dtype or values.dtype != self._value_dtype:
            raise TypeError(f"Restoring table {self._name!r}: the checkpoint holds {keys.dtype.name} -> "
                            f"{values.dtype.name}, the table maps {self._key_dtype.name} -> {self._value_dtype.name}")
        with init_scope():
            _Import(keys, values, self._id)


class DenseHashTable(MutableHashTable):
    """``tf.lookup.experimental.DenseHashTable(key_dtype, value_dtype, default_value, empty_key, deleted_key,
    initial_num_buckets=None, name="MutableDenseHashTable", checkpoint=True)``. ember stores it as a
    MutableHashTable; as TensorFlow's, inserting, looking up or removing ``empty_key`` or ``deleted_key`` is
    an InvalidArgumentError. Checkpoints (and SavedModels) hold TensorFlow's bucket array
    (lookup/dense_buckets.py), so each framework restores the other's."""

    def __init__(self, key_dtype, value_dtype, default_value, empty_key, deleted_key, initial_num_buckets=None,
                 name="MutableDenseHashTable", checkpoint=True, experimental_is_anonymous=False):
        if initial_num_buckets is not None and (initial_num_buckets < 4 or
                                                initial_num_buckets & (initial_num_buckets - 1)):
            from ember import errors

            raise errors.InvalidArgumentError(None, None, "MutableDenseHashTableV2: Number of buckets must be at "
                                              f"least 4 and a power of 2, got: {initial_num_buckets}")
        super().__init__(key_dtype, value_dtype, default_value, name=name, checkpoint=checkpoint)
        self._initial_num_buckets = initial_num_buckets
        with init_scope():
            self._empty_key = convert_to_tensor(empty_key, dtype=self._key_dtype)
            self._deleted_key = convert_to_tensor(deleted_key, dtype=self._key_dtype)
        if bool((self._empty_key == self._deleted_key).numpy()):
            raise ValueError("Empty and deleted keys must have the same shape and must not be equal.")

    def _ember_checkpoint_tensors(self):
        if not self._checkpoint:
            return {}
        with init_scope():
            keys, values = (t.numpy() for t in self.export())
        buckets = dense_buckets.num_buckets_for(len(keys), self._initial_num_buckets)
        key_buckets, value_buckets = dense_buckets.to_buckets(keys, values, self._empty_key.numpy(), buckets)
        return {"-keys": convert_to_tensor(key_buckets, dtype=self._key_dtype),
                "-values": convert_to_tensor(value_buckets, dtype=self._value_dtype)}

    def _ember_restore_tensors(self, tensors):
        keys, values = dense_buckets.entries_of(tensors["-keys"].numpy(), tensors["-values"].numpy(),
                                                [self._empty_key.numpy(), self._deleted_key.numpy()])
        super()._ember_restore_tensors({"-keys": convert_to_tensor(keys, dtype=tensors["-keys"].dtype),
                                        "-values": convert_to_tensor(values, dtype=tensors["-values"].dtype)})

    def _reserved_keys_check(self, keys):
        import ember

        keys = self._keys_of_dtype(keys)
        for reserved, what in ((self._empty_key, "empty_key"), (self._deleted_key, "deleted_key")):
            ember.debugging.Assert(ember.logical_not(ember.reduce_any(ember.equal(keys, reserved))),
                                   [f"Using the {what} as a table key is not allowed"])
        return keys

    def lookup(self, keys, name=None):
        return super().lookup(self._reserved_keys_check(keys))

    def insert(self, keys, values, name=None):
        super().insert(self._reserved_keys_check(keys), values)

    def remove(self, keys, name=None):
        super().remove(self._reserved_keys_check(keys))

    def erase(self, keys, name=None):
        self.remove(keys)
