// The distribute layer: collectives across processes on Gloo (docs/distribute.md, "Across processes").
//
// A Communicator joins this process to a group of `size` processes (ranks 0 .. size-1) and runs
// collectives among them: all-reduce, broadcast, all-gather and barrier, on host buffers. The process has at
// most one default communicator, made by ember.distribute (MultiWorkerMirroredStrategy or
// ember.distribute.experimental.collective.initialize) from TF_CONFIG or the launcher's environment; the
// collective ops (collective_ops.cc: CollectiveReduceV2, CollectiveBcastSendV2/RecvV2, CollectiveGatherV2)
// run on it, eagerly and inside ember.function.
//
// Every collective has a deadline. A peer that dies closes its connections and the others fail at once with
// kUnavailable; a peer that hangs makes them fail with kDeadlineExceeded when the timeout passes. After
// either the communicator is broken (the peers disagree on what ran) and every later collective fails with
// kFailedPrecondition naming the first error: a program recovers by making a new group, as TensorFlow's
// MultiWorkerMirroredStrategy does after a worker restarts.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/core/dtype.h"
#include "ember/core/status.h"

namespace ember::distribute {

enum class ReduceOp : uint8_t { kSum, kProd, kMin, kMax };

/// Parses TensorFlow's merge_op spelling ("Add", "Mul", "Min", "Max").
StatusOr<ReduceOp> parse_merge_op(const std::string& name);

struct CommunicatorOptions {
  int rank = 0;
  int size = 1;
  /// A directory every process of the group can reach (Gloo's FileStore): ranks publish their addresses
  /// there while connecting. It must be fresh for each group (docs/distribute.md, "Rendezvous").
  std::string store_path;
  /// Keys in the store start with this, so several groups can share a directory.
  std::string store_prefix = "ember";
  /// The address this process listens on for its peers (loopback by default).
  std::string hostname = "127.0.0.1";
  /// How long the rendezvous waits for every rank, and the default deadline of each collective.
  double timeout_seconds = 60;
};

/// A collective queued on a communicator's collective thread (Note [Overlapping collectives] in
/// collective_ops.cc): the data travels in `buffer`, which the thread reduces in place.
class PendingCollective {
 public:
  explicit PendingCollective(std::vector<char> buffer) : buffer_(std::move(buffer)) {}
  std::vector<char>& buffer() { return buffer_; }
  /// Called once, by whoever ran the collective.
  void finish(Status status);
  /// Blocks until finish(); on success copies the buffer's `bytes` to `output`. The buffer then goes to
  /// `release` (the communicator's staging pool), if set.
  Status wait(void* output, size_t bytes);
  void set_release(std::function<void(std::vector<char>)> release) { release_ = std::move(release); }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  Status status_;
  std::vector<char> buffer_;
  std::function<void(std::vector<char>)> release_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  double default_timeout() const { return timeout_seconds_; }

  /// Reduces `count` elements of `dtype` at `input` across the group into `output` (which may be `input`).
  /// `tag` must differ between collectives that may run at the same time; `timeout_seconds` <= 0 takes the
  /// default.
  virtual Status all_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                            uint32_t tag, double timeout_seconds) = 0;
  /// Copies `bytes` at `data` on rank `root` to `data` on every rank.
  virtual Status broadcast(void* data, int64_t bytes, int root, uint32_t tag, double timeout_seconds) = 0;
  /// Concatenates `bytes` from every rank's `input` into `output` (size() * bytes), in rank order.
  virtual Status all_gather(const void* input, void* output, int64_t bytes, uint32_t tag,
                            double timeout_seconds) = 0;
  virtual Status barrier(uint32_t tag, double timeout_seconds) = 0;
  /// How many all-reduces so far began with a round trip to agree on their size (Note [Agreed once per
  /// tag] in gloo_communicator.cc); tests read it.
  virtual int64_t size_agreements() const { return 0; }
  /// Copies `count` elements at `input` and queues their all-reduce on the communicator's collective
  /// thread, which runs queued collectives one at a time in the order they were queued (every rank queues
  /// them in the same order, as it would call them). Returns at once; wait() on the result.
  virtual std::shared_ptr<PendingCollective> start_all_reduce(const void* input, int64_t count, DType dtype,
                                                              ReduceOp op, uint32_t tag,
                                                              double timeout_seconds) = 0;

 protected:
  Communicator(int rank, int size, double timeout) : rank_(rank), size_(size), timeout_seconds_(timeout) {}

 private:
  int rank_;
  int size_;
  double timeout_seconds_;
};

/// Connects to the other ranks (blocks until all have joined, or fails after the timeout).
StatusOr<std::shared_ptr<Communicator>> create_communicator(const CommunicatorOptions& options);

/// Whether this build has a collective library (Gloo); without one create_communicator is kUnimplemented.
bool have_collective_library();

/// The process's communicator, used by the collective ops; null until set.
std::shared_ptr<Communicator> default_communicator();
void set_default_communicator(std::shared_ptr<Communicator> communicator);

}  // namespace ember::distribute
