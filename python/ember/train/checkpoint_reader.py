"""Reading a checkpoint's tensors by key: ``load_checkpoint`` and ``list_variables``, as ``tf.train``'s.

The bundle (TensorFlow's format V2) is read by C++ (src/ember/state/tensor_bundle.h); this module turns
its answers into what TensorFlow's CheckpointReader returns: NumPy arrays, shape lists and dtypes.
"""

import os

import numpy as np

from ember import _C, dtypes, errors

DT_STRING = 7
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def _prefix_of(ckpt_dir_or_file):
    """A checkpoint prefix: the argument itself, or the latest checkpoint of a directory."""
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        from ember.train.checkpoint_management import latest_checkpoint
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {path}")
        return latest
    return path


class CheckpointReader:
    """The tensors of one checkpoint, by key (``tf.train.load_checkpoint``'s reader)."""

    def __init__(self, prefix):
        self._prefix = prefix
        self._bundle = _C.BundleReader.open(prefix)

    @property
    def prefix(self):
        return self._prefix

    def has_tensor(self, key):
        return self._bundle.contains(key)

    def get_tensor(self, key):
        """The value of ``key`` as a NumPy array (bytes, or an object array of bytes, for strings)."""
        if not self._bundle.contains(key):
            raise errors.NotFoundError(None, None, f"Key {key} not found in checkpoint {self._prefix}")
        if self._bundle.tf_dtype(key) == DT_STRING:
            dims = self._bundle.dims(key)
            values = self._bundle.read_strings(key)
            if not dims:
                return values[0]
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out.reshape(dims)
        return self._bundle.read(key).numpy()

    def _tensor(self, key):
        """The value of a numeric ``key`` as an ember tensor (no NumPy copy)."""
        return self._bundle.read(key)

    def _string(self, key):
        return self._bundle.read_string(key)

    def get_variable_to_shape_map(self):
        return {key: list(self._bundle.dims(key)) for key in self._bundle.keys()}

    def get_variable_to_dtype_map(self):
        """{key: dtype} (string entries map to the name "string")."""
        return {key: _dtype_of(self._bundle.tf_dtype(key)) for key in self._bundle.keys()}

    def debug_string(self):
        lines = [f"{key} ({_dtype_name(self._bundle.tf_dtype(key))}) {self._bundle.dims(key)}"
                 for key in self._bundle.keys()]
        return ("\n".join(lines) + "\n").encode()


def _dtype_of(datatype):
    if datatype == DT_STRING:
        return "string"
    try:
        return dtypes.as_dtype(datatype)
    except (TypeError, ValueError):
        return f"DataType {datatype}"


def _dtype_name(datatype):
    dtype = _dtype_of(datatype)
    return dtype if isinstance(dtype, str) else dtype.name


def load_checkpoint(ckpt_dir_or_file):
    """A CheckpointReader of a checkpoint prefix, or of the latest checkpoint in a directory."""
    return CheckpointReader(_prefix_of(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """[(key, shape)] of every tensor in the checkpoint, sorted by key."""
    reader = load_checkpoint(ckpt_dir_or_file)
    return sorted(reader.get_variable_to_shape_map().items())
