"""``tf.compat.v1.nn``: ``ember.nn`` (which holds v1's fused_batch_norm too) with TensorFlow 1's signatures where
TensorFlow 2 changed a function: ctc_loss and ctc_beam_search_decoder, and v1's names of the TensorFlow 2 forms."""

from ember import nn as _nn
from ember.ops.ctc_ops import ctc_beam_search_decoder as ctc_beam_search_decoder_v2  # noqa: F401
from ember.ops.ctc_ops import ctc_beam_search_decoder_v1 as ctc_beam_search_decoder  # noqa: F401
from ember.ops.ctc_ops import ctc_loss as ctc_loss_v2  # noqa: F401  (v1's ctc_loss_v2: TF2's dense/sparse form)
from ember.ops.ctc_ops import ctc_loss_v1 as ctc_loss  # noqa: F401


def __getattr__(name):
    return getattr(_nn, name)


def __dir__():
    return sorted(set(dir(_nn)) | set(globals()))
