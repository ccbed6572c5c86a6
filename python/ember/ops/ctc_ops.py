"""``tf.nn``'s CTC functions: ctc_loss (TensorFlow 2's, and compat.v1's), the greedy and beam-search decoders
and ctc_unique_labels.

They take TensorFlow's code paths: ``tf.nn.ctc_loss`` with a SparseTensor moves the blank to the last class
and calls the CTCLoss kernel, as TensorFlow does on CPU; with dense labels TensorFlow 2 does not use that
kernel but an HMM written in TensorFlow ops (``ctc_loss_dense``), whose results differ where a label cannot
fit in its frames (a large finite loss instead of an error) — ember runs that HMM as the CTCLossDense op
(Note [TensorFlow 2's dense CTC] in src/ember/kernels/ctc.cc). Gradients flow to the logits through each
op's gradient output.
"""

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.sparse.sparse_tensor import SparseTensor

__all__ = ["collapse_repeated", "ctc_loss", "ctc_greedy_decoder", "ctc_beam_search_decoder", "ctc_unique_labels"]

_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)


def _tensor(x, dtype=None):
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=dtype)


def _num_classes(logits):
    if logits.shape.rank is not None and logits.shape.rank != 3:
        raise ValueError(f"ctc: logits must be 3-D ([frames, batch, classes]), got shape {logits.shape}")
    classes = logits.shape[2] if logits.shape.rank is not None else None
    return classes if classes is not None else array_ops.shape(logits)[2]


def _int_arg(value, what):
    """A Python or NumPy integer (or an integral float) as int; TypeError for anything else (inf, nan,
    1.5, a string), not the OverflowError int() gives for inf."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"ctc: {what} must be an integer, got {value!r}")
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise TypeError(f"ctc: {what} must be an integer, got {value!r}")
    return int(value)


def _ctc_loss_impl(labels, inputs, sequence_length, preprocess_collapse_repeated, ctc_merge_repeated,
                   ignore_longer_outputs_than_inputs, time_major):
    if not isinstance(labels, SparseTensor):
        raise TypeError("Expected argument `labels` to be a SparseTensor. "
                        f"Received labels={labels} of type: {type(labels).__name__}")
    inputs = _tensor(inputs)
    if not time_major:
        inputs = array_ops.transpose(inputs, [1, 0, 2])
    orig_dtype = inputs.dtype
    if orig_dtype in _HALF_TYPES:
        inputs = math_ops.cast(inputs, dtypes.float32)
    loss, _ = _C.op("CTCLoss")(inputs, labels.indices, labels.values, _tensor(sequence_length, dtypes.int32),
                               bool(preprocess_collapse_repeated), bool(ctc_merge_repeated),
                               bool(ignore_longer_outputs_than_inputs))
    return math_ops.cast(loss, orig_dtype) if orig_dtype in _HALF_TYPES else loss


def ctc_loss_v1(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False,
                ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False, time_major=True, logits=None):
    """``tf.compat.v1.nn.ctc_loss``: the CTCLoss kernel on a SparseTensor of labels (the blank is the last
    class); ``logits`` is the deprecated name of ``inputs``."""
    if inputs is None:
        inputs = logits
    elif logits is not None:
        raise ValueError("Cannot specify both `logits` and `inputs`")
    return _ctc_loss_impl(labels, inputs, sequence_length, preprocess_collapse_repeated, ctc_merge_repeated,
                          ignore_longer_outputs_than_inputs, time_major)


def _ctc_loss_sparse(labels, logits, logit_length, logits_time_major, blank_index):
    # TensorFlow's CPU path: move the blank to the last class, shift the labels above it down by one.
    logits = array_ops.concat([logits[:, :, :blank_index], logits[:, :, blank_index + 1:],
                               logits[:, :, blank_index:blank_index + 1]], axis=2)
    values = labels.values
    values = array_ops.where(values < blank_index, values, values - 1)
    return _ctc_loss_impl(SparseTensor(labels.indices, values, labels.dense_shape), logits, logit_length,
                          False, True, False, logits_time_major)


def ctc_loss(labels, logits, label_length, logit_length, logits_time_major=True, unique=None, blank_index=None,
             name=None):
    """``tf.nn.ctc_loss`` (TensorFlow 2): the negative log probability of each row's labels under the logits
    ([frames, batch, classes], or batch-major with ``logits_time_major=False``). Labels are dense
    [batch, max_label] with ``label_length``, or a SparseTensor (then ``blank_index`` is required).
    ``unique`` (from ``ctc_unique_labels``) is accepted; it only changes how TensorFlow sums, not the result."""
    if blank_index is not None:
        blank_index = _int_arg(blank_index, "blank_index")
    if isinstance(labels, SparseTensor):
        if blank_index is None:
            raise ValueError("Argument `blank_index` must be provided when `labels` is a `SparseTensor`.")
        logits = _tensor(logits)
        if blank_index < 0:
            blank_index += _num_classes(logits)
        return _ctc_loss_sparse(labels, logits, logit_length, logits_time_major, blank_index)
    if blank_index is None:
        blank_index = 0
    logits = _tensor(logits)
    labels = _tensor(labels)
    label_length = _tensor(label_length)
    logit_length = _tensor(logit_length)
    orig_dtype = logits.dtype
    if orig_dtype in _HALF_TYPES:
        logits = math_ops.cast(logits, dtypes.float32)
    if logits.dtype == dtypes.float64:
        # TensorFlow's ctc_loss_dense builds float32 constants into its HMM, so float64 logits fail there.
        raise errors.InvalidArgumentError(
            None, None, "ctc_loss: dense labels need float32 logits (TensorFlow's ctc_loss_dense mixes float32 "
            "constants into its computation and fails for float64: cannot compute Mul as input #1(zero-based) "
            "was expected to be a double tensor but is a float tensor); got float64")
    if not logits_time_major:
        logits = array_ops.transpose(logits, [1, 0, 2])
    if blank_index < 0:
        blank_index += _num_classes(logits)
    if isinstance(blank_index, Tensor):
        raise ValueError("ctc_loss: a negative blank_index needs the number of classes known statically")
    loss, _ = _C.op("CTCLossDense")(logits, labels, label_length, logit_length, int(blank_index))
    return math_ops.cast(loss, orig_dtype) if orig_dtype in _HALF_TYPES else loss


def _sparse_results(outputs, paths):
    return [SparseTensor(outputs[p], outputs[paths + p], outputs[2 * paths + p]) for p in range(paths)]


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """``tf.nn.ctc_greedy_decoder``: best-path decoding of time-major logits. Returns ([decoded SparseTensor],
    log_probabilities [batch, 1]), the log probability being -sum of each frame's maximum logit."""
    outputs = _C.op("CTCGreedyDecoder")(_tensor(inputs), _tensor(sequence_length, dtypes.int32), bool(merge_repeated),
                                        -1 if blank_index is None else _int_arg(blank_index, "blank_index"))
    return _sparse_results(outputs, 1), outputs[3]


def ctc_beam_search_decoder_v1(inputs, sequence_length, beam_width=100, top_paths=1, merge_repeated=True):
    """``tf.compat.v1.nn.ctc_beam_search_decoder``: the ``top_paths`` best label sequences (SparseTensors) by
    beam search over time-major logits (the blank is the last class), and their log probabilities
    [batch, top_paths]; ``merge_repeated`` merges repeated labels of a path."""
    beam_width, top_paths = _int_arg(beam_width, "beam_width"), _int_arg(top_paths, "top_paths")
    outputs = _C.op("CTCBeamSearchDecoder")(_tensor(inputs), _tensor(sequence_length, dtypes.int32), beam_width,
                                            top_paths, bool(merge_repeated))
    return _sparse_results(outputs, top_paths), outputs[3 * top_paths]


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1):
    """``tf.nn.ctc_beam_search_decoder`` (TensorFlow 2): as compat.v1's with ``merge_repeated=False``."""
    return ctc_beam_search_decoder_v1(inputs, sequence_length, beam_width, top_paths, merge_repeated=False)


def ctc_unique_labels(labels, name=None):
    """``tf.nn.ctc_unique_labels``: per row of [batch, max_label] labels, the unique labels in order of first
    appearance padded with zeros (int64), and each position's index into them (int32)."""
    labels = _tensor(labels)
    n = array_ops.shape(labels)[1]
    same = math_ops.equal(array_ops.expand_dims(labels, 2), array_ops.expand_dims(labels, 1))  # [b, i, j]
    positions = array_ops.range(n)
    earlier = array_ops.expand_dims(positions, 1) > array_ops.expand_dims(positions, 0)  # j < i
    first = math_ops.logical_not(math_ops.reduce_any(math_ops.logical_and(same, earlier), axis=2))
    rank = math_ops.cumsum(math_ops.cast(first, dtypes.int32), axis=1) - 1
    first_position = math_ops.argmax(math_ops.cast(same, dtypes.int32), axis=2, output_type=dtypes.int32)
    idx = array_ops.gather(rank, first_position, batch_dims=1)
    slot = math_ops.logical_and(array_ops.expand_dims(first, 1),
                                math_ops.equal(array_ops.expand_dims(rank, 1),
                                               array_ops.reshape(positions, [1, -1, 1])))  # [b, k, j]
    y = math_ops.reduce_sum(array_ops.where(slot, array_ops.expand_dims(math_ops.cast(labels, dtypes.int64), 1),
                                            array_ops.zeros_like(math_ops.cast(slot, dtypes.int64))), axis=2)
    return y, idx


def collapse_repeated(labels, seq_length, name=None):
    """Merges runs of one label in each row of labels [batch, max_len] (only within the first seq_length[b]
    entries): (collapsed labels [batch, new_max_len], zero-padded, and the new lengths, int32)."""
    from ember.ops.indexing_ops import scatter_nd, sequence_mask

    labels = labels if isinstance(labels, Tensor) else convert_to_tensor(labels)
    seq_length = seq_length if isinstance(seq_length, Tensor) else convert_to_tensor(seq_length)
    if labels.shape.rank is not None and labels.shape.rank != 2:
        raise ValueError(f"collapse_repeated: labels must be [batch, max_len]; got shape {labels.shape}")
    # A label is kept where it differs from the one before it and lies within the row's length.
    keep = array_ops.concat([array_ops.ones_like(labels[:, :1], dtypes.bool),
                             math_ops.not_equal(labels[:, 1:], labels[:, :-1])], axis=1)
    keep = math_ops.logical_and(keep, sequence_mask(seq_length, maxlen=array_ops.shape(labels)[1]))
    new_length = math_ops.reduce_sum(math_ops.cast(keep, dtypes.int32), axis=1)
    new_max = math_ops.reduce_max(new_length)
    slots = sequence_mask(new_length, maxlen=new_max)
    kept = array_ops.boolean_mask(array_ops.reshape(labels, [-1]), array_ops.reshape(keep, [-1]))
    flat = scatter_nd(array_ops.where(array_ops.reshape(slots, [-1])), kept,
                      array_ops.shape(array_ops.reshape(slots, [-1]), out_type=dtypes.int64))
    return array_ops.reshape(flat, array_ops.shape(slots)), new_length
