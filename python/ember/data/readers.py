"""tf.data.TFRecordDataset over the TFRecord reader of ember.io.tf_record (RecordReader).

ember has no string tensors yet, so a record is a Python ``bytes`` (what TensorFlow's ``.numpy()`` of the
string scalar gives) and the element spec is ``StringSpec`` (printed as TensorFlow's string TensorSpec).
Transformations that only move elements (take, skip, repeat, shuffle, zip, concatenate, enumerate, cache,
interleave, prefetch) work on records; those that compute on tensors (map, filter, batch, reduce) raise
NotImplementedError naming the transformation: decode records in Python first (``from_generator``).
"""

import os

from ember import errors
from ember.data import dataset_ops
from ember.framework.tensor import Tensor
from ember.framework.tensor_shape import TensorShape


class _StringDType:
    name = "string"

    def __repr__(self):
        return "tf.string"


string = _StringDType()


class StringSpec:
    """The spec of a string scalar (a record): shape () and dtype string."""

    shape = TensorShape([])
    dtype = string
    name = None

    def __repr__(self):
        return "TensorSpec(shape=(), dtype=tf.string, name=None)"

    def __eq__(self, other):
        return isinstance(other, StringSpec)

    def __hash__(self):
        return hash("StringSpec")

    def is_compatible_with(self, other):
        return isinstance(other, StringSpec)


def _filenames(filenames, what):
    if isinstance(filenames, Tensor):
        raise TypeError(f"{what}: ember has no string tensors; give the file names as Python strings")
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    if isinstance(filenames, dataset_ops.Dataset):
        raise TypeError(f"{what}: a dataset of file names needs string tensors, which ember does not have yet; "
                        "give a list of Python strings")
    names = []
    for f in filenames:
        if isinstance(f, bytes):
            f = f.decode()
        if not isinstance(f, (str, os.PathLike)):
            raise TypeError(f"{what}: `filenames` must be strings, got {type(f).__name__}")
        names.append(os.fspath(f))
    return names


class TFRecordDataset(dataset_ops.Dataset):
    """The records of one or more TFRecord files, file after file (or interleaved one record at a time
    from ``num_parallel_reads`` files, TensorFlow's deterministic order)."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        what = "TFRecordDataset"
        self._files = _filenames(filenames, what)
        self._compression = compression_type
        self._buffer = buffer_size
        if num_parallel_reads == dataset_ops.AUTOTUNE:
            from ember import _C
            num_parallel_reads = _C.data_autotune_parallelism()
        if num_parallel_reads is not None and num_parallel_reads <= 0:
            raise errors.InvalidArgumentError(None, None, f"{what}: num_parallel_reads must be positive or "
                                              f"AUTOTUNE, got {num_parallel_reads}")
        self._parallel = num_parallel_reads
        self._spec = StringSpec()

    def _records(self, path):
        from ember.io.tf_record import RecordReader
        reader = RecordReader(path, self._compression, self._buffer)
        try:
            for record in reader:
                yield (record,)
        finally:
            reader.close()

    def _flat_iter(self):
        if not self._parallel or self._parallel == 1:
            for path in self._files:
                yield from self._records(path)
            return
        yield from dataset_ops.interleave_flat(iter(self._files), self._records, self._parallel, 1)

    def _cardinality(self):
        return dataset_ops.UNKNOWN


def has_strings(spec):
    from ember.data import structure
    return any(isinstance(s, StringSpec) for s in structure.flatten(spec))


def refuse_strings(spec, what):
    if has_strings(spec):
        raise NotImplementedError(f"{what}: the elements hold strings (TFRecord records), and ember has no "
                                  "string tensors yet; decode the records in Python (Dataset.from_generator)")
