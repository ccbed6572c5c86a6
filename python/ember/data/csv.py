"""CSV records as TensorFlow reads them: ``tf.io.decode_csv``, ``tf.data.experimental.CsvDataset`` and
``make_csv_dataset`` (docs/data.md).

One record parser serves all three (TensorFlow's rules: RFC 4180 quoting with ``""`` for a quote inside a
quoted field, an empty field or ``na_value`` takes the column's default, an empty default makes the column
required). It runs in Python over NumPy: no registry op, since decode_csv inside a traced function (a
dataset's map) runs the same parser through ``numpy_function``, whose outputs get the records' shape.
"""

import numpy as np

from ember import dtypes, errors
from ember.data import dataset_ops
from ember.data.readers import _filenames, _open_compressed
from ember.framework.tensor import Tensor, constant, convert_to_tensor
from ember.framework.tensor_spec import TensorSpec

_CSV_DTYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)
_INT_RANGE = {dtypes.int32: (-2**31, 2**31 - 1), dtypes.int64: (-2**63, 2**63 - 1)}


def _invalid(message):
    return errors.InvalidArgumentError(None, None, message)


class _Column:
    """One column's dtype and default (None: required)."""

    def __init__(self, default, what, index):
        if isinstance(default, dtypes.DType):
            if default not in _CSV_DTYPES:
                raise TypeError(f"{what}: record_defaults[{index}] must be float32, float64, int32, int64 or "
                                f"string, got {default.name}")
            self.dtype, self.default = default, None
        else:
            t = default if isinstance(default, Tensor) else convert_to_tensor(default)
            if t.dtype not in _CSV_DTYPES:
                raise TypeError(f"{what}: record_defaults[{index}] must be float32, float64, int32, int64 or "
                                f"string, got {t.dtype.name}")
            if t._is_symbolic:
                raise NotImplementedError(f"{what}: record_defaults[{index}] is a symbolic tensor; ember parses "
                                          "CSV in Python and needs the defaults' values when the op is built")
            values = np.asarray(t.numpy(), dtype=object if t.dtype == dtypes.string else None).reshape(-1)
            if values.size > 1:
                raise ValueError(f"{what}: record_defaults[{index}] must have at most one value, got shape "
                                 f"{list(t.shape)}")
            self.dtype = t.dtype
            self.default = values[0] if values.size else None

    def convert(self, field, na_value, what, col, row):
        if field == b"" or field == na_value:
            if self.default is None:
                raise _invalid(f"{what}: Field {col} is required but missing in record {row}!")
            return self.default
        if self.dtype == dtypes.string:
            return field
        text = field.decode("utf-8", "replace")
        try:
            if "_" in text:
                raise ValueError(text)
            if self.dtype in _INT_RANGE:
                value = int(text)
                low, high = _INT_RANGE[self.dtype]
                if not low <= value <= high:
                    raise ValueError(text)
                return value
            return float(text)
        except ValueError:
            raise _invalid(f"{what}: Field {col} in record {row} is not a valid {self.dtype.name}: "
                           f"{text}") from None


def columns(record_defaults, what):
    if not isinstance(record_defaults, (list, tuple)) or not record_defaults:
        raise ValueError(f"{what}: record_defaults must be a non-empty list, got {record_defaults!r}")
    return [_Column(d, what, i) for i, d in enumerate(record_defaults)]


def split_record(record, delim, use_quote_delim, what, row):
    """The fields of one record (bytes), unquoted."""
    fields, i, n = [], 0, len(record)
    if n == 0:
        return fields  # no fields at all, as TensorFlow counts an empty record
    while True:
        if use_quote_delim and i < n and record[i:i + 1] == b'"':
            chunks, j = [], i + 1
            while True:
                end = record.find(b'"', j)
                if end < 0:
                    raise _invalid(f"{what}: Quoted field has to end with quote followed by delim or end, in "
                                   f"record {row}: {record!r}")
                chunks.append(record[j:end])
                if record[end + 1:end + 2] == b'"':
                    chunks.append(b'"')
                    j = end + 2
                    continue
                j = end + 1
                break
            if j < n and record[j:j + 1] != delim:
                raise _invalid(f"{what}: Quote inside a string has to be escaped by another quote, in record "
                               f"{row}: {record!r}")
            fields.append(b"".join(chunks))
        else:
            j = record.find(delim, i)
            j = n if j < 0 else j
            field = record[i:j]
            if use_quote_delim and b'"' in field:
                raise _invalid(f"{what}: Unquoted fields cannot have quotes inside, in record {row}: {record!r}")
            fields.append(field)
        if j >= n:
            return fields
        i = j + 1


def _delim(field_delim, what):
    delim = field_delim.encode() if isinstance(field_delim, str) else bytes(field_delim)
    if len(delim) != 1:
        raise ValueError(f"{what}: field_delim must be one character, got {field_delim!r}")
    return delim


def _bytes(value):
    return value.encode() if isinstance(value, str) else bytes(value)


class _RecordParser:
    """Parses records into the selected columns' Python values."""

    def __init__(self, record_defaults, field_delim, use_quote_delim, na_value, select_cols, what):
        self.what = what
        self.columns = columns(record_defaults, what)
        self.delim = _delim(field_delim, what)
        self.use_quote_delim = bool(use_quote_delim)
        self.na_value = _bytes(na_value)
        if select_cols is not None:
            select_cols = [int(c) for c in select_cols]
            if any(c < 0 for c in select_cols):
                raise _invalid(f"{what}: select_cols must be non-negative, got {select_cols}")
            if any(b <= a for a, b in zip(select_cols, select_cols[1:])):
                raise _invalid(f"{what}: select_cols must be strictly increasing, got {select_cols}")
            if len(select_cols) != len(self.columns):
                raise ValueError(f"{what}: Length of select_cols and record_defaults do not match: "
                                 f"{len(select_cols)} and {len(self.columns)}.")
        self.select = select_cols

    def parse(self, record, row):
        fields = split_record(record, self.delim, self.use_quote_delim, self.what, row)
        if self.select is None:
            if len(fields) != len(self.columns):
                raise _invalid(f"{self.what}: Expect {len(self.columns)} fields but have {len(fields)} in record "
                               f"{row}")
            picked = fields
        else:
            if len(fields) <= self.select[-1]:
                raise _invalid(f"{self.what}: Expect at least {self.select[-1] + 1} fields but have "
                               f"{len(fields)} in record {row}")
            picked = [fields[c] for c in self.select]
        return [col.convert(f, self.na_value, self.what, i, row)
                for i, (col, f) in enumerate(zip(self.columns, picked))]


def _decode(records, parser):
    flat = records.reshape(-1)
    rows = [parser.parse(_bytes(r), i) for i, r in enumerate(flat)]
    out = []
    for c, col in enumerate(parser.columns):
        values = [row[c] for row in rows]
        if col.dtype == dtypes.string:
            array = np.array(values, dtype=object)
        else:
            array = np.array(values, dtype=col.dtype.as_numpy_dtype)
        out.append(array.reshape(records.shape))
    return out


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, na_value="", select_cols=None,
               name=None):
    """``tf.io.decode_csv``: each string of ``records`` split into fields, one tensor per column of the
    records' shape, with the dtype of its ``record_defaults`` entry."""
    what = "decode_csv"
    parser = _RecordParser(record_defaults, field_delim, use_quote_delim, na_value, select_cols, what)
    records = convert_to_tensor(records, dtype=dtypes.string)
    if records._is_symbolic:
        from ember.ops.script_ops import numpy_function
        outs = numpy_function(lambda r: _decode(np.asarray(r, dtype=object), parser), [records],
                              [c.dtype for c in parser.columns], stateful=False)
        from ember.debugging import ensure_shape
        return [ensure_shape(t, records.shape) for t in outs]
    arrays = _decode(np.asarray(records.numpy(), dtype=object), parser)
    return [_tensor(a, c.dtype) for a, c in zip(arrays, parser.columns)]


def _tensor(array, dtype):
    if dtype == dtypes.string:
        from ember import _C
        return _C.from_strings([bytes(v) for v in array.reshape(-1)], list(array.shape))
    return constant(array, dtype=dtype)


def _lines(stream, use_quote_delim):
    """Records: lines, joined while a quote is open (TensorFlow's reader keeps a quoted newline)."""
    pending = b""
    for line in stream:
        pending += line
        if use_quote_delim and pending.count(b'"') % 2:
            continue
        if pending.endswith(b"\n"):
            pending = pending[:-2] if pending.endswith(b"\r\n") else pending[:-1]
        yield pending
        pending = b""
    if pending:
        yield pending


class CsvDataset(dataset_ops.Dataset):
    """``tf.data.experimental.CsvDataset``: the records (lines) of CSV files as tuples of scalars, one per
    selected column. Lines end at ``\\n`` or ``\\r\\n`` outside quotes; a quoted field may span lines."""

    _what = "CsvDataset"

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None, header=False,
                 field_delim=",", use_quote_delim=True, na_value="", select_cols=None, exclude_cols=None,
                 name=None):
        what = self._what
        self._files = _filenames(filenames, what)
        if select_cols is not None and exclude_cols is not None:
            raise ValueError(f"{what}: select_cols and exclude_cols cannot both be given")
        self._exclude = None if exclude_cols is None else sorted(int(c) for c in exclude_cols)
        self._parser = _RecordParser(record_defaults, field_delim, use_quote_delim, na_value, select_cols, what)
        if self._exclude is not None:  # resolved against each record's field count
            self._parser.select = []
        self._compression = compression_type
        self._header = bool(header)
        self._spec = tuple(TensorSpec([], c.dtype) for c in self._parser.columns)

    def _flat_iter(self):
        return self._read(skip_bad_records=False)

    def _flat_iter_ignoring_errors(self):
        """ignore_errors' way in: a bad record is skipped and reading goes on, as TensorFlow's."""
        return self._read(skip_bad_records=True)

    def _read(self, skip_bad_records):
        parser = self._parser
        for path in self._files:
            with _open_compressed(path, self._compression, self._what) as stream:
                for row, record in enumerate(_lines(stream, parser.use_quote_delim)):
                    if row == 0 and self._header:
                        continue
                    try:
                        values = self._parse(record, row)
                    except errors.InvalidArgumentError:
                        if skip_bad_records:
                            continue
                        raise
                    yield tuple(_tensor(np.array(v, dtype=object if c.dtype == dtypes.string
                                                  else c.dtype.as_numpy_dtype), c.dtype)
                                for v, c in zip(values, parser.columns))

    def _parse(self, record, row):
        parser = self._parser
        if self._exclude is not None:
            n = len(split_record(record, parser.delim, parser.use_quote_delim, self._what, row))
            parser.select = [c for c in range(n) if c not in self._exclude]
            if len(parser.select) != len(parser.columns):
                raise _invalid(f"{self._what}: Expect {len(parser.columns) + len(self._exclude)} fields but "
                               f"have {n} in record {row}")
        return parser.parse(record, row)

    def _cardinality(self):
        return dataset_ops.UNKNOWN


def _infer_dtype(text, na_value, previous):
    """The least permissive of int32, int64, float32, float64, string that holds ``text`` and every value of
    the column seen before (TensorFlow's make_csv_dataset inference)."""
    if text in (b"", na_value):
        return previous
    order = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64, dtypes.string]
    start = 0 if previous is None else order.index(previous)
    for dtype in order[start:]:
        if dtype == dtypes.string:
            return dtype
        try:
            column = _Column(constant([], dtype=dtype), "", 0)
            value = column.convert(text, None, "", 0, 0)
            if dtype in (dtypes.float32, dtypes.float64):
                with np.errstate(over="ignore"):
                    if not dtype.as_numpy_dtype(value) < np.inf:  # TensorFlow's test: nan and overflow fail
                        continue
            return dtype
        except errors.InvalidArgumentError:
            continue


def _probe_rows(files, delim, use_quote_delim, compression_type, what):
    """(row number, fields) of every record of ``files``, the header included, for names and dtypes."""
    for path in files:
        with _open_compressed(path, compression_type, what) as stream:
            for row, record in enumerate(_lines(stream, use_quote_delim)):
                yield row, split_record(record, delim, use_quote_delim, what, row)


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None, label_name=None,
                     select_columns=None, field_delim=",", use_quote_delim=True, na_value="", header=True,
                     num_epochs=None, shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False, num_rows_for_inference=100,
                     compression_type=None, ignore_errors=False, encoding="utf-8"):
    """``tf.data.experimental.make_csv_dataset``: batches of ``{column name: values}`` (and the label
    column apart when ``label_name`` is given) read from the files matching ``file_pattern``, with column
    names from the header and dtypes inferred from the first ``num_rows_for_inference`` rows unless given."""
    from collections import OrderedDict
    what = "make_csv_dataset"
    files = _filenames(_glob_files(file_pattern, what), what)
    delim = _delim(field_delim, what)
    if column_names is None or column_defaults is None:
        if compression_type == "ZLIB":
            raise ValueError(f"{what}: `compression_type` ZLIB is not supported for probing columns.")
    if column_names is None:
        if not header:
            raise ValueError("Expected `column_names` or `header` arguments. Neither is provided.")
        _, first = next(_probe_rows(files[:1], delim, use_quote_delim, compression_type, what))
        column_names = [f.decode(encoding) for f in first]
    column_names = list(column_names)
    if len(set(column_names)) != len(column_names):
        duplicates = {n for n in column_names if column_names.count(n) > 1}
        raise ValueError("Either `column_names` argument or CSV header row contains duplicate column names: "
                         f"{duplicates}.")
    if select_columns is not None:
        if all(isinstance(c, int) for c in select_columns):
            indices = sorted(select_columns)
        else:
            missing = [c for c in select_columns if c not in column_names]
            if missing:
                raise ValueError(f"{what}: select_columns {missing} are not among the columns {column_names}")
            indices = sorted(column_names.index(c) for c in select_columns)
    else:
        indices = None
    if column_defaults is not None:
        column_defaults = [constant([], dtype=d) if isinstance(d, dtypes.DType) else d for d in column_defaults]
    else:
        selected = indices if indices is not None else range(len(column_names))
        inferred = [None] * len(selected)
        na = _bytes(na_value)
        for row, fields in _probe_rows(files, delim, use_quote_delim, compression_type, what):
            if header and row == 0:
                continue
            if num_rows_for_inference is not None and row - int(header) >= num_rows_for_inference:
                break
            for j, c in enumerate(selected):
                inferred[j] = _infer_dtype(fields[c], na, inferred[j])
        column_defaults = [constant([""] if t in (None, dtypes.string) else [0], dtype=t or dtypes.string)
                           for t in inferred]
    if indices is not None and len(column_defaults) != len(indices):
        raise ValueError("If specified, `column_defaults` and `select_columns` must have the same length: "
                         f"`column_defaults` has length {len(column_defaults)}, `select_columns` has length "
                         f"{len(indices)}.")
    if indices is not None and len(column_names) > len(indices):
        column_names = [column_names[i] for i in indices]
    if label_name is not None and label_name not in column_names:
        raise ValueError(f"`label_name` provided must be one of the columns: {column_names}. Received: "
                         f"{label_name}.")

    dataset = dataset_ops.Dataset.from_tensor_slices(constant(files))
    if shuffle:
        dataset = dataset.shuffle(len(files), shuffle_seed)
    def file_dataset(filename):
        ds = CsvDataset(filename, column_defaults, compression_type=compression_type, header=header,
                        field_delim=field_delim, use_quote_delim=use_quote_delim, na_value=na_value,
                        select_cols=indices)
        return ds.ignore_errors() if ignore_errors else ds

    cycle = num_parallel_reads or 1
    if cycle == dataset_ops.AUTOTUNE:
        from ember import _C
        cycle = _C.data_autotune_parallelism()
    if cycle <= 0:
        raise ValueError(f"{what}: num_parallel_reads must be positive or AUTOTUNE, got {num_parallel_reads}")
    dataset = _FileInterleave(dataset, file_dataset(files[0]).element_spec, file_dataset, cycle)
    if num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, shuffle_seed)
    dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None)

    def to_features(*values):
        features = OrderedDict(zip(column_names, values))
        if label_name is not None:
            label = features.pop(label_name)
            return features, label
        return features

    return dataset.map(to_features).prefetch(prefetch_buffer_size or dataset_ops.AUTOTUNE)


def _glob_files(file_pattern, what):
    import glob
    patterns = [file_pattern] if isinstance(file_pattern, (str, bytes)) else list(file_pattern)
    files = []
    for pattern in patterns:
        pattern = pattern.decode() if isinstance(pattern, bytes) else str(pattern)
        files.extend(glob.glob(pattern))
    if not files:
        raise ValueError(f"No files match `file_pattern` {file_pattern}.")
    return sorted(files)  # as TensorFlow's, whatever order the patterns came in


class _FileInterleave(dataset_ops.Dataset):
    """The records of one CsvDataset per file name, interleaved one record at a time from ``cycle`` files
    (TensorFlow's deterministic parallel interleave order)."""

    def __init__(self, filenames, spec, make_dataset, cycle):
        self._names = filenames
        self._make = make_dataset
        self._cycle = cycle
        self._spec = spec

    def _flat_iter(self):
        names = (f[0].numpy().decode() for f in self._names._flat_iter())
        return dataset_ops.interleave_flat(names, lambda n: self._make(n)._flat_iter(), self._cycle, 1)

