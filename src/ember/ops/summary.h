// Summary ops and the call-time summary context (docs/summary.md).
//
// tf.summary's writer and record condition are not baked into a traced function: the seed (000) asks that
// "these inputs are converted to placeholders, which are then resolved at function invocation time". The
// op ContextWriteSummary therefore names no writer. Its kernel asks, when it runs, for the calling thread's
// SummaryContext (the default writer, whether to record, the default step), which ember.summary keeps in
// step with its Python context managers; so one traced function writes to whichever writer is default at
// each call and writes nothing under record_if(False), with no retrace.
//
// The writer lives in a higher layer (state/summary_writer.h writes event files); this layer knows it only
// as a SummarySink. The kernel can run on an executor thread other than the caller's, so the context a
// thread sets is also published process-wide, and a thread that never set one reads the last published.
#pragma once

#include <memory>
#include <string>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember {

/// What a summary op hands its writer. `kind` says how the tensor becomes the summary's value.
struct SummaryRequest {
  enum Kind : int64_t {
    kTensor = 0,     // the tensor itself (tf.summary.scalar casts first; tf.summary.write)
    kHistogram = 1,  // TensorBoard's [buckets, 3] float64 buckets of the values (param = bucket count)
    kImage = 2,      // PNG per image of [k, h, w, c] uint8 (param = max_outputs)
    kAudio = 3,      // 16-bit WAV per clip of [k, t, c] float in [-1, 1] (param = max_outputs)
    kPayload = 4,    // `payload` is a serialized TensorProto (string tensors: text, tf.summary.write)
  };
  int64_t step = 0;
  const TensorImpl* tensor = nullptr;
  std::string_view tag;
  std::string_view metadata;  // a serialized SummaryMetadata
  int64_t kind = kTensor;
  int64_t param = 0;
  double sample_rate = 0;
  std::string_view payload;
};

class SummarySink {
 public:
  virtual ~SummarySink() = default;
  virtual Status write_summary(const SummaryRequest& request) = 0;
  virtual Status flush() = 0;
};

struct SummaryContext {
  enum class Record {
    kAlways,    // record_if(True) or no record_if (TensorFlow's default)
    kNever,     // record_if(False), or a tensor condition that was false
    kDeferred,  // a callable (or graph tensor) condition: the op's `condition` input decides
  };
  std::shared_ptr<SummarySink> writer;  // null: summaries are no-ops
  Record record = Record::kAlways;
  bool has_step = false;  // tf.summary.experimental.set_step
  int64_t step = 0;
  int64_t step_variable = 0;  // nonzero: the step is this variable's value when the op runs
};

/// Sets the calling thread's context (and publishes it for threads that never set one).
void set_summary_context(std::shared_ptr<const SummaryContext> context);
/// The context of the calling thread, else the last one published; never null.
std::shared_ptr<const SummaryContext> current_summary_context();

/// The step input meaning "none given while tracing: use the context's step when the op runs".
constexpr int64_t kSummaryStepFromContext = INT64_MIN;

}  // namespace ember
