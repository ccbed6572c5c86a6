// _Send and _Recv: the ends of an edge between two partitions of a multi-device function
// (runtime/partition.h). A run of the partitions shares one Rendezvous: each _Send puts its tensor under
// its key, the _Recv of the same key waits for it. The partition runner sets the thread's rendezvous
// before running a partition; the kernels find it there, so ops stay free of the runtime above them.
#pragma once

#include <condition_variable>
#include <mutex>
#include <vector>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember {

/// The tensors in flight between the partitions of one run, by key (0..n-1).
class Rendezvous {
 public:
  explicit Rendezvous(int keys) : slots_(keys), ready_(keys, false) {}
  Status send(int64_t key, TensorRef value);
  /// Waits for the key's tensor, or for abort().
  StatusOr<TensorRef> recv(int64_t key);
  /// Wakes every receiver with `why` (another partition failed: its sends will never come).
  void abort(const Status& why);
  /// Ready for another run with the same keys.
  void reset();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<TensorRef> slots_;
  std::vector<bool> ready_;
  Status aborted_;
};

/// The rendezvous of the partition this thread runs (null outside a multi-device run).
Rendezvous* current_rendezvous();
/// Sets it for a block and restores the previous one.
class RendezvousScope {
 public:
  explicit RendezvousScope(Rendezvous* r);
  ~RendezvousScope();
  RendezvousScope(const RendezvousScope&) = delete;
  RendezvousScope& operator=(const RendezvousScope&) = delete;

 private:
  Rendezvous* previous_;
};

}  // namespace ember
