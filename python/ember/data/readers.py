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


class _FileReaderDataset(dataset_ops.Dataset):
    """A reader of string records from files, file after file (or interleaved one record at a time from
    ``num_parallel_reads`` files, TensorFlow's deterministic order)."""

    _what = None

    def __init__(self, filenames, compression_type, num_parallel_reads):
        self._files = _filenames(filenames, self._what)
        self._compression = compression_type
        if num_parallel_reads == dataset_ops.AUTOTUNE:
            num_parallel_reads = _C.data_autotune_parallelism()
        if num_parallel_reads is not None and num_parallel_reads <= 0:
            raise errors.InvalidArgumentError(None, None, f"{self._what}: num_parallel_reads must be positive or "
                                              f"AUTOTUNE, got {num_parallel_reads}")
        self._parallel = num_parallel_reads
        self._spec = StringSpec()

    def _records(self, path):
        with _open_compressed(path, self._compression, self._what) as stream:
            for record in self._split(stream, path):
                yield (_C.from_strings([record], []),)

    def _flat_iter(self):
        if not self._parallel or self._parallel == 1:
            for path in self._files:
                yield from self._records(path)
            return
        yield from dataset_ops.interleave_flat(iter(self._files), self._records, self._parallel, 1)

    def _cardinality(self):
        return dataset_ops.UNKNOWN


class TFRecordDataset(_FileReaderDataset):
    """The records of one or more TFRecord files, file after file (or interleaved one record at a time
    from ``num_parallel_reads`` files, TensorFlow's deterministic order)."""

    _what = "TFRecordDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        super().__init__(filenames, compression_type, num_parallel_reads)
        self._buffer = buffer_size

    def _records(self, path):
        from ember.io.tf_record import RecordReader
        reader = RecordReader(path, self._compression, self._buffer)
        try:
            for record in reader:
                yield (_C.from_strings([record], []),)
        finally:
            reader.close()


def has_strings(spec):
    """Records are string tensors now: nothing needs to stay in Python (kept for the callers)."""
    return False


def refuse_strings(spec, what):
    """Nothing to refuse since strings are tensors (kept for the callers)."""


def _open_compressed(path, compression_type, what):
    """A binary stream of the file's bytes, decompressed (``""``/None, ``"ZLIB"``, ``"GZIP"``).
    A missing file raises NotFoundError, an unknown compression InvalidArgumentError, when iteration
    reaches the file, as TensorFlow's readers do."""
    import gzip
    import io
    import zlib

    kind = (compression_type or "").upper() if isinstance(compression_type, str) else compression_type
    if kind not in ("", None, "GZIP", "ZLIB"):
        raise errors.InvalidArgumentError(None, None, f"{what}: Unsupported compression_type "
                                                      f"{compression_type!r}: expected '', 'ZLIB' or 'GZIP'")
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{what}: {path}; No such file or directory") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{what}: {path}; Is a directory") from None
    if kind == "GZIP":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "ZLIB":
        with raw:
            try:
                return io.BytesIO(zlib.decompress(raw.read()))
            except zlib.error as e:
                raise errors.DataLossError(None, None, f"{what}: {path} is not a ZLIB stream: {e}") from None
    return raw


class TextLineDataset(_FileReaderDataset):
    """The lines of one or more text files, without their line ends (``\\n`` or ``\\r\\n``), as
    ``tf.data.TextLineDataset``: each element a string scalar."""

    _what = "TextLineDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        super().__init__(filenames, compression_type, num_parallel_reads)

    def _split(self, stream, path):
        for line in stream:
            if line.endswith(b"\n"):
                line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
            yield line


class FixedLengthRecordDataset(_FileReaderDataset):
    """Records of ``record_bytes`` bytes from files that may start with ``header_bytes`` and end with
    ``footer_bytes`` to skip, as ``tf.data.FixedLengthRecordDataset``. A body that is not a whole number of
    records is an InvalidArgumentError, raised when iteration reaches that file."""

    _what = "FixedLengthRecordDataset"

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None, buffer_size=None,
                 compression_type=None, num_parallel_reads=None, name=None):
        super().__init__(filenames, compression_type, num_parallel_reads)
        self._record_bytes = int(record_bytes)
        self._header = int(header_bytes or 0)
        self._footer = int(footer_bytes or 0)

    def _split(self, stream, path):
        if self._record_bytes <= 0:
            raise errors.InvalidArgumentError(None, None, f"{self._what}: `record_bytes` must be > 0, got "
                                                          f"{self._record_bytes}")
        if self._header < 0 or self._footer < 0:
            raise errors.InvalidArgumentError(None, None, f"{self._what}: header_bytes and footer_bytes must be "
                                                          f">= 0, got {self._header} and {self._footer}")
        data = stream.read()
        body = len(data) - self._header - self._footer
        if body < 0 or body % self._record_bytes:
            raise errors.InvalidArgumentError(
                None, None, f"{self._what}: Excluding the header ({self._header} bytes) and footer "
                            f"({self._footer} bytes), input file \"{path}\" has body length {max(body, 0)} bytes, "
                            f"which is not an exact multiple of the record length ({self._record_bytes} bytes).")
        for start in range(self._header, self._header + body, self._record_bytes):
            yield data[start:start + self._record_bytes]
