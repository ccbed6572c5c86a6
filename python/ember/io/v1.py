"""``tf.compat.v1.io``: the TensorFlow 1 names of ``tf.io`` (``tf_record_iterator`` lives only here)."""

from ember.io import write_graph  # noqa: F401
from ember.io.tf_record import (TFRecordCompressionType, TFRecordOptions, TFRecordWriter,  # noqa: F401
                                tf_record_iterator)
from ember.io.bytes_ops import decode_base64, encode_base64  # noqa: F401,E402
from ember.io.bytes_ops import decode_raw_v1 as decode_raw  # noqa: F401,E402
