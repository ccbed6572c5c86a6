// TensorBoard event files: `<logdir>/events.out.tfevents.<seconds>.<host>.<pid>.<n><suffix>`, a TFRecord
// file (state/record_io.h) of Event messages (proto/ember/event.proto) beginning with the file_version
// event "brain.Event:2". An EventFileWriter is the SummarySink of ops/summary.h: the summary ops hand it a
// tensor and it builds the Summary TensorFlow 2.21 would write (histogram buckets, PNG images, WAV audio
// encoded here, only for summaries actually recorded). Events are queued and written when more than
// `max_queue` wait or `flush_millis` have passed since the last flush (TensorFlow's rule, checked at each
// write), on flush() and on close().
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"
#include "ember/event.pb.h"
#include "ember/ops/summary.h"
#include "ember/state/record_io.h"

namespace ember {

class EventFileWriter : public SummarySink {
 public:
  /// Creates `logdir` (and its parents) and the event file, and writes the file_version event.
  static StatusOr<std::shared_ptr<EventFileWriter>> create(const std::string& logdir, int64_t max_queue = 10,
                                                           int64_t flush_millis = 120000,
                                                           const std::string& filename_suffix = ".v2");
  ~EventFileWriter() override;

  Status write_summary(const SummaryRequest& request) override;
  /// Queues one event (wall_time is set to now when it is 0).
  Status write_event(proto::Event event);
  /// Queues an already serialized Event.
  Status write_serialized_event(std::string bytes);
  Status flush() override;
  /// Flushes and closes the file; later writes fail with FailedPrecondition.
  Status close();
  bool closed() const;
  const std::string& path() const { return path_; }

 private:
  EventFileWriter(std::string path, std::unique_ptr<record_io::RecordWriter> file, int64_t max_queue,
                  int64_t flush_millis);
  Status enqueue_locked(std::string bytes);
  Status flush_locked();

  std::string path_;
  mutable std::mutex mu_;
  std::unique_ptr<record_io::RecordWriter> file_;
  std::vector<std::string> queue_;
  int64_t max_queue_;
  int64_t flush_millis_;
  std::chrono::steady_clock::time_point last_flush_;
};

/// The summary value pieces, exposed for tests: TensorBoard's histogram buckets ([k, 3] float64 of
/// left edge, right edge, count), a PNG of `height` x `width` x `channels` (1-4) uint8 pixels, and a
/// 16-bit PCM WAV of `frames` x `channels` float samples.
std::vector<double> histogram_buckets(const TensorImpl& data, int64_t bucket_count);
std::string encode_png(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels);
std::string encode_wav(const float* samples, int64_t frames, int64_t channels, int32_t sample_rate);

}  // namespace ember
