"""TFRecord files, as ``tf.io``: ``TFRecordWriter``, ``TFRecordOptions``, ``TFRecordCompressionType`` and
``tf.compat.v1.io.tf_record_iterator``, over the C++ framing in ``src/ember/state/record_io.h``
(length, masked CRC32C of the length, data, masked CRC32C of the data; optionally ZLIB or GZIP).

For readers built on it (``tf.data.TFRecordDataset``, event file readers), the stable API is
:class:`RecordReader`::

    from ember.io.tf_record import RecordReader

    reader = RecordReader(path, compression_type="GZIP", buffer_size=None)  # NotFoundError if missing
    for record in reader:          # bytes; DataLossError on a corrupt or truncated record
        ...
    record = reader.read_next()    # bytes, or None at the end of the records
    reader.offset                  # where the next record starts in the uncompressed stream
    reader.close()                 # also a context manager

``compression_type`` may be ``None``/``""``/``"ZLIB"``/``"GZIP"`` or a :class:`TFRecordOptions`. A header cut
short at the end of an uncompressed file is the end of the records (TensorFlow's rule: a file still being
written ends that way), and ``read_next`` tried again later picks up records appended since.
"""

from ember import _C


class TFRecordCompressionType:
    """The compression of a TFRecord file (``tf.io.TFRecordCompressionType``)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_TYPE_NAMES = {
    TFRecordCompressionType.NONE: "",
    TFRecordCompressionType.ZLIB: "ZLIB",
    TFRecordCompressionType.GZIP: "GZIP",
}


class TFRecordOptions:
    """Options for TFRecord files (``tf.io.TFRecordOptions``): the compression and zlib's parameters."""

    compression_type_map = {
        TFRecordCompressionType.ZLIB: "ZLIB",
        TFRecordCompressionType.GZIP: "GZIP",
        TFRecordCompressionType.NONE: "",
    }

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None, output_buffer_size=None,
                 window_bits=None, compression_level=None, compression_method=None, mem_level=None,
                 compression_strategy=None):
        if compression_type is not None and not isinstance(compression_type, (int, str)):
            raise TypeError(f"compression_type must be a string or a TFRecordCompressionType, "
                            f"got {type(compression_type).__name__}")
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy
        # Validates now, as TensorFlow does.
        self.get_compression_type_string(compression_type)

    @classmethod
    def get_compression_type_string(cls, options):
        """The compression as TensorFlow's string: ``""``, ``"ZLIB"`` or ``"GZIP"``."""
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, bool) or not isinstance(options, (int, str)):
            raise TypeError(f"compression_type must be a string or a TFRecordCompressionType, "
                            f"got {type(options).__name__}")
        if isinstance(options, int):
            if options not in _TYPE_NAMES:
                raise ValueError(f'Not a valid compression_type: "{options}"')
            return _TYPE_NAMES[options]
        if options not in ("", "ZLIB", "GZIP"):
            raise ValueError(f'Not a valid compression_type: "{options}"')
        return options

    def _zlib_args(self):
        def pick(value, default):
            return default if value is None else int(value)

        return dict(compression_level=pick(self.compression_level, -1), window_bits=pick(self.window_bits, 15),
                    mem_level=pick(self.mem_level, 8), compression_strategy=pick(self.compression_strategy, 0))


def _as_options(options):
    if isinstance(options, TFRecordOptions):
        return options
    return TFRecordOptions(compression_type=TFRecordOptions.get_compression_type_string(options))


class TFRecordWriter:
    """Writes records to a TFRecord file (``tf.io.TFRecordWriter``)::

        with tf.io.TFRecordWriter("/tmp/data.tfrecord", options="GZIP") as w:
            w.write(example.SerializeToString())

    ``options`` is a compression string or a :class:`TFRecordOptions`. Writes are buffered; ``flush`` hands
    them to the operating system, ``close`` (or leaving the ``with``) ends the file.
    """

    def __init__(self, path, options=None):
        import os

        options = _as_options(options)
        compression = TFRecordOptions.get_compression_type_string(options)
        buffer_size = options.output_buffer_size or 0
        self._path = os.fspath(path)
        self._writer = _C.RecordWriter.open(self._path, compression, buffer_size=int(buffer_size),
                                            **options._zlib_args())

    def write(self, record):
        """Appends one record (bytes; a str is written as UTF-8)."""
        self._writer.write(record)

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()

    def __del__(self):
        writer = getattr(self, "_writer", None)
        if writer is not None and not writer.closed:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - a destructor must not raise
                pass


class RecordReader:
    """Reads the records of one TFRecord file; see the module docstring (the API ``tf.data`` builds on)."""

    def __init__(self, path, compression_type=None, buffer_size=None):
        import os

        options = _as_options(compression_type)
        compression = TFRecordOptions.get_compression_type_string(options)
        size = buffer_size if buffer_size is not None else options.input_buffer_size
        window_bits = 15 if options.window_bits is None else int(options.window_bits)
        self._path = os.fspath(path)
        self._reader = _C.RecordReader.open(self._path, compression, window_bits=window_bits,
                                            buffer_size=int(size or 0))

    @property
    def path(self):
        return self._path

    @property
    def offset(self):
        return self._reader.offset

    def read_next(self):
        """The next record as bytes, or None at the end of the records; DataLossError when corrupt."""
        if self._reader is None:
            raise ValueError(f"RecordReader for {self._path} is closed")
        return self._reader.read()

    def __iter__(self):
        return self

    def __next__(self):
        record = self.read_next()
        if record is None:
            raise StopIteration
        return record

    def close(self):
        self._reader = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()


def tf_record_iterator(path, options=None):
    """Yields the records of the TFRecord file at ``path`` as bytes
    (``tf.compat.v1.io.tf_record_iterator``); DataLossError on a corrupt or truncated record."""
    reader = RecordReader(path, options)
    while True:
        record = reader.read_next()
        if record is None:
            return
        yield record


__all__ = ["RecordReader", "TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]
