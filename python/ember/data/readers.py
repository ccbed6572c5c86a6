"""tf.data.TFRecordDataset over the TFRecord reader of ember.io.tf_record (RecordReader).

Each record is a string scalar tensor (element spec ``TensorSpec(shape=(), dtype=tf.string)``), as in
TensorFlow, so map, filter and batch work on records like on any tensors.
"""

import os

from ember import _C, dtypes, errors
from ember.data import dataset_ops
from ember.framework.tensor import Tensor
from ember.framework.tensor_spec import TensorSpec


def StringSpec():  # noqa: N802 - kept for code that names the records' spec
    """The spec of a record: a string scalar."""
    return TensorSpec([], dtypes.string)


def _filenames(filenames, what):
    if isinstance(filenames, Tensor):
        if filenames._is_symbolic or filenames.dtype != dtypes.string:
            raise TypeError(f"{what}: `filenames` must be an eager string tensor or Python strings, got "
                            f"{filenames!r}")
        value = filenames.numpy()
        filenames = [value] if isinstance(value, bytes) else value.reshape(-1).tolist()
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    if isinstance(filenames, dataset_ops.Dataset):
        filenames = [f.numpy() if isinstance(f, Tensor) else f for f in filenames]
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
                yield (_C.from_strings([record], []),)
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
    """Records are string tensors now: nothing needs to stay in Python (kept for the callers)."""
    return False


def refuse_strings(spec, what):
    """Nothing to refuse since strings are tensors (kept for the callers)."""
