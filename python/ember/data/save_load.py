"""``Dataset.save(path)`` and ``Dataset.load(path)`` (also ``tf.data.experimental.save/load``).

Note [Saved datasets]
A saved dataset is a directory: ``element_spec.pb`` (the element's structure as a SavedModel
StructuredValue, saved_model/structure.py), ``metadata.json`` (the element count and the format), and
``data-00000.tfrecord``, one TFRecord record per element (CRC-checked framing, optionally GZIP or ZLIB as
``compression`` says). A record holds the element's tensors in flat order, each as its dtype name, shape
and bytes (little-endian values; a string tensor as each string's length and bytes). Reading never
unpickles or runs anything from the files; a record that does not match the spec is a DataLossError naming
the file. The directory is written under a temporary name and renamed into place, so a failed save leaves
an earlier one whole. The format is ember's own: TensorFlow's snapshot files are not read, and TensorFlow
does not read these. Elements must be dense tensors (no RaggedTensor or SparseTensor components).
"""

import json
import os
import shutil
import struct
import tempfile

import numpy as np

from ember import dtypes, errors
from ember.framework.tensor import convert_to_tensor
from ember.framework.tensor_spec import TensorSpec
from ember.util import nest

_FORMAT = "ember-dataset-1"
_DATA = "data-00000.tfrecord"
_SPEC = "element_spec.pb"
_METADATA = "metadata.json"


def _encode(tensors):
    parts = []
    for t in tensors:
        array = np.asarray(t.numpy())
        name = t.dtype.name.encode()
        parts.append(struct.pack("<B", len(name)) + name)
        parts.append(struct.pack("<B", array.ndim) + struct.pack(f"<{array.ndim}q", *array.shape))
        if t.dtype == dtypes.string:
            for value in array.reshape(-1):
                value = bytes(value)
                parts.append(struct.pack("<Q", len(value)) + value)
        else:
            data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
            parts.append(struct.pack("<Q", len(data)) + data)
    return b"".join(parts)


def _decode(record, specs, where):
    """The arrays of a record, checked against ``specs`` (None: whatever dtypes and shapes it holds)."""
    def fail(what):
        raise errors.DataLossError(None, None, f"Dataset.load: {where}: {what}")

    arrays, at = [], 0

    def take(n):
        nonlocal at
        if n < 0 or at + n > len(record):
            fail("a record ends before its tensors do")
        chunk = record[at:at + n]
        at += n
        return chunk

    while (at < len(record)) if specs is None else (len(arrays) < len(specs)):
        spec = None if specs is None else specs[len(arrays)]
        name = take(struct.unpack("<B", take(1))[0]).decode("ascii", "replace")
        if spec is not None and name != spec.dtype.name:
            fail(f"a tensor of dtype {name} where the element spec has {spec.dtype.name}")
        try:
            dtype = dtypes.as_dtype(name)
        except (TypeError, ValueError):
            fail(f"a tensor of unknown dtype {name!r}")
        rank = struct.unpack("<B", take(1))[0]
        shape = struct.unpack(f"<{rank}q", take(8 * rank))
        if any(d < 0 for d in shape) or (spec is not None and not spec.shape.is_compatible_with(shape)):
            fail(f"a tensor of shape {list(shape)} where the element spec has {spec.shape if spec else 'none'}")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count > len(record):  # every element takes a byte or more: a larger count is damage
            fail(f"a tensor of shape {list(shape)} in a record of {len(record)} bytes")
        spec = spec or TensorSpec(shape, dtype)
        if spec.dtype == dtypes.string:
            values = [take(struct.unpack("<Q", take(8))[0]) for _ in range(count)]
            arrays.append(np.array(values, dtype=object).reshape(shape))
        else:
            np_dtype = np.dtype(spec.dtype.as_numpy_dtype).newbyteorder("<")
            data = take(struct.unpack("<Q", take(8))[0])
            if len(data) != count * np_dtype.itemsize:
                fail(f"{len(data)} bytes for a {spec.dtype.name} tensor of shape {list(shape)}")
            arrays.append(np.frombuffer(data, dtype=np_dtype).astype(np_dtype.newbyteorder("=")).reshape(shape))
    if at != len(record):
        fail("a record holds more bytes than its tensors")
    return arrays


def _flat_specs(element_spec, what):
    specs = nest.flatten(element_spec)
    for spec in specs:
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"{what}: ember writes dense tensors to files; the element spec has "
                            f"{type(spec).__name__} {spec!r}")
    return specs


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    """Writes every element of ``dataset`` to the directory ``path`` (Note [Saved datasets])."""
    from ember.io.tf_record import TFRecordWriter
    from ember.saved_model import structure

    if shard_func is not None or checkpoint_args is not None:
        raise NotImplementedError("Dataset.save: shard_func and checkpoint_args are not supported by ember; "
                                  "it writes one shard")
    path = os.fspath(path)
    _flat_specs(dataset.element_spec, "Dataset.save")
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.saving-", dir=parent)
    try:
        count = 0
        with TFRecordWriter(os.path.join(tmp, _DATA), options=compression) as writer:
            for element in dataset:
                writer.write(_encode([convert_to_tensor(t) for t in nest.flatten(element)]))
                count += 1
        with open(os.path.join(tmp, _SPEC), "wb") as f:
            f.write(structure.encode(dataset.element_spec).SerializeToString())
        with open(os.path.join(tmp, _METADATA), "w") as f:
            json.dump({"format": _FORMAT, "num_elements": count, "compression": compression or ""}, f)
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load(path, element_spec=None, compression=None, reader_func=None, wait=False):
    """The dataset ``save`` wrote to ``path``; ``element_spec`` may be given (it must match the saved one)."""
    from ember.data.dataset_ops import Dataset
    from ember.io.tf_record import tf_record_iterator
    from ember.saved_model import structure
    from ember.saved_model.structure import StructuredValue

    if reader_func is not None:
        raise NotImplementedError("Dataset.load: reader_func is not supported by ember (one shard, read in order)")
    path = os.fspath(path)
    try:
        with open(os.path.join(path, _METADATA)) as f:
            metadata = json.load(f)
        with open(os.path.join(path, _SPEC), "rb") as f:
            saved_spec = structure.decode(StructuredValue.FromString(f.read()))
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"Dataset.load: {path} holds no dataset saved by ember "
                                               f"(no {_METADATA} or {_SPEC})") from None
    except (ValueError, TypeError, OSError) as e:
        raise errors.DataLossError(None, None, f"Dataset.load: {path}: unreadable metadata ({e})") from None
    if not isinstance(metadata, dict) or metadata.get("format") != _FORMAT:
        raise errors.DataLossError(None, None, f"Dataset.load: {path}: not an {_FORMAT} directory")
    if element_spec is None:
        element_spec = saved_spec
    else:
        nest.assert_same_structure(element_spec, saved_spec)
        for given, saved in zip(nest.flatten(element_spec), nest.flatten(saved_spec)):
            if given.dtype != saved.dtype or not given.shape.is_compatible_with(saved.shape):
                raise ValueError(f"Dataset.load: element_spec {element_spec} does not match the saved {saved_spec}")
    specs = _flat_specs(element_spec, "Dataset.load")
    data = os.path.join(path, _DATA)
    compression = metadata.get("compression") if compression is None else compression

    def elements():
        for record in tf_record_iterator(data, compression or None):
            yield nest.pack_sequence_as(element_spec, _decode(record, specs, data))

    dataset = Dataset.from_generator(elements, output_signature=element_spec)
    from ember.data.experimental import assert_cardinality

    return dataset.apply(assert_cardinality(int(metadata.get("num_elements", 0))))
