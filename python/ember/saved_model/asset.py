"""``tf.saved_model.Asset``: a file that a SavedModel carries with it.

An Asset attached to a saved object (an attribute of a Module) is copied into the SavedModel's
``assets/`` directory; a function that reads ``asset.asset_path`` receives the path as a string tensor,
and after a load that path is the copy's (``<export_dir>/assets/<file name>``), wherever the directory has
been moved. TensorFlow's layout: the object graph's ``asset`` node names an entry of the MetaGraphDef's
``asset_file_def`` (the file name inside ``assets/``), and each concrete function that reads the path
binds the asset node as one of its captured inputs (``bound_inputs``), as it binds variables.
"""

import os

from ember import _C, trackable
from ember.framework.tensor import Tensor, convert_to_tensor


class Asset(trackable.Trackable):
    """A file whose path functions read as ``asset_path`` (a scalar string tensor)."""

    def __init__(self, path):
        if isinstance(path, Tensor):
            path = path.numpy()
        if isinstance(path, bytes):
            path = path.decode()
        kind = type(path).__name__
        try:
            path = os.fspath(path)
        except TypeError:
            path = None
        if not isinstance(path, str):
            raise TypeError(f"saved_model.Asset: expected a path (str, bytes, os.PathLike or a string tensor), "
                            f"got {kind}")
        self._ember_path = path
        self._ember_tensor = convert_to_tensor(path)

    @property
    def asset_path(self):
        # Inside a function the path is a captured argument that ops read symbolically: never folded into
        # the constants of the trace, so saving can bind it to this asset (Note [Saving assets]).
        return _C.capture_symbolically(self._ember_tensor)

    def _trackable_children(self):
        return []

    def __repr__(self):
        return f"<ember.saved_model.Asset {self._ember_path!r}>"
