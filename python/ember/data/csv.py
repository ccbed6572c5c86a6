"""CSV records as TensorFlow reads them: ``tf.io.decode_csv``, ``tf.data.experimental.CsvDataset`` and
``make_csv_dataset`` (docs/data.md).

Every record is parsed by the registry op ``DecodeCSV`` (src/ember/ops/decode_csv.cc: TensorFlow's rules,
RFC 4180 quoting with ``""`` for a quote inside a quoted field, an empty field or ``na_value`` takes the
column's default, an empty default makes the column required), eagerly and inside ``ember.function`` alike,
so a traced decode_csv exports to a GraphDef that TensorFlow runs. The datasets read their files in Python
(lines joined while a quote is open) and hand each record to the op; ``split_record`` below only counts and
names fields where the op cannot (``exclude_cols``, make_csv_dataset's header and dtype inference).
"""

import numpy as np

from ember import _C, dtypes, errors
from ember.data import dataset_ops
from ember.data.readers import _filenames, _open_compressed
from ember.framework.tensor import Tensor, constant, convert_to_tensor
from ember.framework.tensor_spec import TensorSpec

_CSV_DTYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)
_INT_RANGE = {dtypes.int32: (-2**31, 2**31 - 1), dtypes.int64: (-2**63, 2**63 - 1)}


_DecodeCSV = _C.op("DecodeCSV")


def _invalid(message):
    return errors.InvalidArgumentError(None, None, message)


def _default(default, what, index):
    """record_defaults[index] as a tensor of at most one value (a dtype: an empty one, the column required)."""
    if isinstance(default, dtypes.DType):
        default = constant([], dtype=default)
    t = default if isinstance(default, Tensor) else convert_to_tensor(default)
    if t.dtype not in _CSV_DTYPES:
        raise TypeError(f"{what}: record_defaults[{index}] must be float32, float64, int32, int64 or string, "
                        f"got {t.dtype.name}")
    if t.shape.rank is not None and t.shape.rank > 1:
        raise ValueError(f"{what}: record_defaults[{index}] must be of rank 0 or 1 (at most one value), got "
                         f"shape {list(t.shape)}")
    return t


def _defaults(record_defaults, what):
    if not isinstance(record_defaults, (list, tuple)) or not record_defaults:
        raise ValueError(f"{what}: record_defaults must be a non-empty list, got {record_defaults!r}")
    return [_default(d, what, i) for i, d in enumerate(record_defaults)]


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


def _select(select_cols, n, what):
    if select_cols is None:
        return []
    select_cols = [int(c) for c in select_cols]
    if len(select_cols) != n:
        raise ValueError(f"{what}: Length of select_cols and record_defaults do not match: {len(select_cols)} "
                         f"and {n}.")
    return select_cols


def _decode(records, defaults, field_delim, use_quote_delim, na_value, select_cols):
    """DecodeCSV's outputs, a list of one tensor per column."""
    delim = field_delim.decode() if isinstance(field_delim, bytes) else field_delim
    na = na_value.decode() if isinstance(na_value, bytes) else na_value
    outs = _DecodeCSV(records, defaults, [d.dtype for d in defaults], delim, bool(use_quote_delim), na,
                      list(select_cols))
    return list(outs) if isinstance(outs, (tuple, list)) else [outs]


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, na_value="", select_cols=None,
               name=None):
    """``tf.io.decode_csv``: each string of ``records`` split into fields, one tensor per column of the
    records' shape, with the dtype of its ``record_defaults`` entry (the op DecodeCSV)."""
    what = "decode_csv"
    defaults = _defaults(record_defaults, what)
    select = _select(select_cols, len(defaults), what)
    records = convert_to_tensor(records, dtype=dtypes.string)
    return _decode(records, defaults, field_delim, use_quote_delim, na_value, select)


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
        self._defaults = _defaults(record_defaults, what)
        self._select = _select(select_cols, len(self._defaults), what)
        self._delim = _delim(field_delim, what)
        self._use_quote_delim = bool(use_quote_delim)
        self._na_value = _bytes(na_value)
        self._compression = compression_type
        self._header = bool(header)
        self._spec = tuple(TensorSpec([], d.dtype) for d in self._defaults)

    def _flat_iter(self):
        return self._read(skip_bad_records=False)

    def _flat_iter_ignoring_errors(self):
        """ignore_errors' way in: a bad record is skipped and reading goes on, as TensorFlow's."""
        return self._read(skip_bad_records=True)

    def _read(self, skip_bad_records):
        for path in self._files:
            with _open_compressed(path, self._compression, self._what) as stream:
                for row, record in enumerate(_lines(stream, self._use_quote_delim)):
                    if row == 0 and self._header:
                        continue
                    try:
                        values = self._parse(record, row)
                    except errors.InvalidArgumentError:
                        if skip_bad_records:
                            continue
                        raise
                    yield tuple(values)

    def _parse(self, record, row):
        """The record's selected columns, parsed by DecodeCSV (its messages say record 0: the record
        is given alone, so the line is named here)."""
        select = self._select
        if self._exclude is not None:
            n = len(split_record(record, self._delim, self._use_quote_delim, self._what, row))
            select = [c for c in range(n) if c not in self._exclude]
            if len(select) != len(self._defaults):
                raise _invalid(f"{self._what}: Expect {len(self._defaults) + len(self._exclude)} fields but "
                               f"have {n} in record {row}")
        try:
            return _decode(_C.from_strings([record], []), self._defaults, self._delim, self._use_quote_delim,
                           self._na_value, select)
        except errors.InvalidArgumentError as e:
            raise _invalid(f"{self._what}: line {row}: {e.message}") from None

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
        # TensorFlow's inference parses in Python (int(), NumPy's float types), not with DecodeCSV.
        try:
            if dtype in _INT_RANGE:
                low, high = _INT_RANGE[dtype]
                if low <= int(text.decode("utf-8", "replace")) <= high:
                    return dtype
            else:
                with np.errstate(over="ignore"):
                    if dtype.as_numpy_dtype(text.decode("utf-8", "replace")) < np.inf:  # nan, overflow fail
                        return dtype
        except (ValueError, OverflowError):
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

