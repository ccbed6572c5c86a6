"""``ember.io``: ``write_graph``, as ``tf.io.write_graph``; TFRecord files (``tf_record.py``); parsing
tf.train.Example and SequenceExample records (``parsing.py``); image files (``decode_jpeg``, ``encode_png``,
``decode_image``, ...: ``ember/ops/image_codec_ops.py``)."""

import os
import tempfile

from ember import dtypes
from ember.framework.tensor import convert_to_tensor

from google.protobuf import text_format

from ember.io import gfile  # noqa: F401
from ember.io.bytes_ops import decode_base64, decode_raw, encode_base64  # noqa: F401
from ember.data.csv import decode_csv  # noqa: F401
from ember.io.parsing import (FixedLenFeature, FixedLenSequenceFeature, RaggedFeature, VarLenFeature,  # noqa: F401
                              parse_example, parse_sequence_example, parse_single_example,
                              parse_single_sequence_example)
from ember.ops.image_codec_ops import (decode_and_crop_jpeg, decode_bmp, decode_gif, decode_image,  # noqa: F401
                                       decode_jpeg, decode_png, encode_jpeg, encode_png, extract_jpeg_shape,
                                       is_jpeg)


def read_file(filename, name=None):
    """The whole contents of the file ``filename`` as a scalar string tensor (ReadFile)."""
    from ember import _C

    return _C.op("ReadFile")(convert_to_tensor(filename, dtype=dtypes.string))


def write_file(filename, contents, name=None):
    """Writes the scalar string ``contents`` to ``filename``, replacing it and creating its directory
    (WriteFile). Inside an ember.function it runs in program order."""
    from ember import _C

    return _C.op("WriteFile")(convert_to_tensor(filename, dtype=dtypes.string),
                              convert_to_tensor(contents, dtype=dtypes.string))


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes a GraphDef (or the GraphDef of a FuncGraph / ConcreteFunction) to ``logdir/name``: protobuf
    text format when ``as_text``, else the binary bytes TensorFlow's ``GraphDef.FromString`` reads. Creates
    ``logdir`` if needed; the file appears complete or not at all (written to a temporary name, renamed).
    Returns the path written."""
    graph_def = _as_graph_def(graph_or_graph_def)
    logdir = os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, os.fspath(name))
    data = text_format.MessageToString(graph_def).encode() if as_text else graph_def.SerializeToString()
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _as_graph_def(value):
    if getattr(getattr(value, "DESCRIPTOR", None), "name", None) == "GraphDef":
        return value
    graph = getattr(value, "graph", value)  # a ConcreteFunction's graph
    if hasattr(graph, "as_graph_def"):
        return graph.as_graph_def()
    raise TypeError(f"write_graph expects a GraphDef, a FuncGraph or a ConcreteFunction, got {type(value).__name__}")


from ember.io.tf_record import TFRecordCompressionType, TFRecordOptions, TFRecordWriter  # noqa: E402

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "write_graph"]
