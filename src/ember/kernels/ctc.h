// Kernels of the CTC (Connectionist Temporal Classification) ops (ops/ctc.cc): TensorFlow's CTCLoss
// (Graves' forward-backward over the label sequence with blanks, blank = classes - 1), the loss of
// TensorFlow 2's tf.nn.ctc_loss for dense labels (an HMM over label and blank states), and the greedy and
// beam-search decoders. Logits are time-major [max_time, batch, classes] and row-major; every routine
// computes in the logits' dtype (float or double) except where TensorFlow's kernels round to float, which
// these follow (Note [Float rounding in CTC] in ctc.cc) so that float64 results match TensorFlow's.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/core/status.h"

namespace ember::kernels {

/// The shape of time-major logits.
struct CtcDims {
  int64_t max_time = 0;
  int64_t batch = 0;
  int64_t classes = 0;
};

/// CTCLoss: loss[b] = -log p(labels[b] | logits[:, b, :]) over the first seq_len[b] frames, and its
/// gradient w.r.t. the logits (zero past seq_len[b]). labels[b] is batch row b's label sequence.
template <typename T>
Status ctc_loss(const T* logits, CtcDims dims, const int32_t* seq_len,
                const std::vector<std::vector<int>>& labels, bool preprocess_collapse_repeated,
                bool ctc_merge_repeated, bool ignore_longer_outputs_than_inputs, T* loss, T* gradient);

/// tf.nn.ctc_loss's loss for dense labels [batch, max_label] (int64 here), with label_length and
/// logit_length per row and any blank class: loss [batch] and gradient [max_time, batch, classes].
template <typename T>
void ctc_loss_dense(const T* logits, CtcDims dims, const int64_t* labels, int64_t max_label,
                    const int64_t* label_length, const int64_t* logit_length, int64_t blank, T* loss,
                    T* gradient);

/// Decoded label sequences: [batch][path] -> labels.
using CtcPaths = std::vector<std::vector<std::vector<int>>>;

/// Best-path decoding: the arg-max class per frame, repeats merged when `merge_repeated`, blanks
/// dropped. log_prob[b] = -sum over frames of the maximum logit.
template <typename T>
void ctc_greedy_decode(const T* logits, CtcDims dims, const int32_t* seq_len, bool merge_repeated, int blank,
                       CtcPaths* paths, T* log_prob);

/// Beam search (blank = classes - 1): the `top_paths` best label sequences of each row and their log
/// probabilities, log_prob [batch, top_paths].
template <typename T>
Status ctc_beam_search_decode(const T* logits, CtcDims dims, const int32_t* seq_len, int beam_width,
                              int top_paths, bool merge_repeated, CtcPaths* paths, T* log_prob);

}  // namespace ember::kernels
