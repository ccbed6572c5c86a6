// What every communicator shares: the process's default, TensorFlow's merge_op names, and the build
// without a collective library.
#include "ember/distribute/communicator.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace ember::distribute {
namespace {

std::mutex default_mutex;
std::shared_ptr<Communicator>& default_slot() {
  static auto* slot = new std::shared_ptr<Communicator>();
  return *slot;
}

}  // namespace

StatusOr<ReduceOp> parse_merge_op(const std::string& name) {
  if (name == "Add") return ReduceOp::kSum;
  if (name == "Mul") return ReduceOp::kProd;
  if (name == "Min") return ReduceOp::kMin;
  if (name == "Max") return ReduceOp::kMax;
  return invalid_argument("merge_op must be \"Add\", \"Mul\", \"Min\" or \"Max\", got \"", name, "\"");
}

void PendingCollective::finish(Status status) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_ = std::move(status);
  done_ = true;
  done_cv_.notify_all();
}

Status PendingCollective::wait(void* output, size_t bytes) {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return done_; });
  if (status_.ok() && bytes != 0) std::memcpy(output, buffer_.data(), std::min(bytes, buffer_.size()));
  if (release_) {
    release_(std::move(buffer_));
    release_ = nullptr;
  }
  return status_;
}

std::shared_ptr<Communicator> default_communicator() {
  std::lock_guard<std::mutex> lock(default_mutex);
  return default_slot();
}

void set_default_communicator(std::shared_ptr<Communicator> communicator) {
  std::lock_guard<std::mutex> lock(default_mutex);
  default_slot() = std::move(communicator);
}

#ifndef EMBER_HAVE_GLOO
bool have_collective_library() { return false; }

StatusOr<std::shared_ptr<Communicator>> create_communicator(const CommunicatorOptions&) {
  return make_error(Code::kUnimplemented,
                    "collectives across processes need Gloo: this ember was built without it (install "
                    "Debian's libgloo-dev and rebuild)");
}
#endif

}  // namespace ember::distribute
