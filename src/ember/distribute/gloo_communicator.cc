// The Communicator on Gloo (what PyTorch runs its CPU collectives on): a full mesh of TCP pairs made through
// Gloo's FileStore, and Gloo's own algorithms (ring all-reduce, all-gather, broadcast, barrier). Chosen over
// MPI by measurement and for its failure behaviour (docs/distribute.md, "Why Gloo").
#ifdef EMBER_HAVE_GLOO
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ember/core/half.h"
#include "ember/distribute/communicator.h"
#include "ember/runtime/profiler.h"

namespace ember::distribute {
namespace {

std::chrono::milliseconds to_millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(seconds, 0.001) * 1000));
}

template <typename T, ReduceOp kOp>
void reduce_elements(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (kOp == ReduceOp::kSum)
      o[i] = x[i] + y[i];
    else if constexpr (kOp == ReduceOp::kProd)
      o[i] = x[i] * y[i];
    else if constexpr (kOp == ReduceOp::kMin)
      o[i] = std::min(x[i], y[i]);
    else
      o[i] = std::max(x[i], y[i]);
  }
}

template <typename T>
gloo::AllreduceOptions::Func reduce_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return &reduce_elements<T, ReduceOp::kSum>;
    case ReduceOp::kProd:
      return &reduce_elements<T, ReduceOp::kProd>;
    case ReduceOp::kMin:
      return &reduce_elements<T, ReduceOp::kMin>;
    case ReduceOp::kMax:
      return &reduce_elements<T, ReduceOp::kMax>;
  }
  return nullptr;
}

// Note [Staging buffers]
// Gloo's ring all-reduce ran several times slower on a buffer allocated just before the call than on one
// reused from the call before (measured on the 2-core machine: 64 MiB in 0.4-1.0 s against 0.13-0.19 s;
// bench/allreduce.py), and every op's output is a fresh allocation. So the data goes through buffers the
// communicator keeps: copy in, reduce there, copy out. The two copies cost far less than the difference.
// A pool rather than one buffer, because collectives with different tags may run at once.
class StagingPool {
 public:
  std::vector<char> acquire(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].capacity() >= bytes) {
        std::vector<char> buffer = std::move(free_[i]);
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        buffer.resize(bytes);
        return buffer;
      }
    }
    return std::vector<char>(bytes);
  }
  void release(std::vector<char> buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kMaxFree) free_.push_back(std::move(buffer));
  }

 private:
  static constexpr size_t kMaxFree = 8;
  std::mutex mutex_;
  std::vector<std::vector<char>> free_;
};

// Runs queued collectives one at a time, in the order they were queued (Note [Overlapping collectives] in
// collective_ops.cc). Started by the first job; stopping fails the jobs still queued (their peers may be
// gone) after the running one ends, which its deadline bounds.
class CollectiveThread {
 public:
  using Job = std::function<void(bool run)>;
  ~CollectiveThread() { stop(); }

  void post(Job job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      job(false);
      return;
    }
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    jobs_.push_back(std::move(job));
    cv_.notify_one();
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    profiler::set_thread_name("collectives");
    for (;;) {
      Job job;
      bool run = true;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
        run = !stopping_;
      }
      job(run);
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(const CommunicatorOptions& o, std::shared_ptr<gloo::rendezvous::Context> context)
      : Communicator(o.rank, o.size, o.timeout_seconds), context_(std::move(context)) {}

  Status all_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op, uint32_t tag,
                    double timeout) override {
    const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
    std::vector<char> staging = staging_->acquire(bytes);
    if (bytes != 0) std::memcpy(staging.data(), input, bytes);
    Status status = agree_and_reduce(staging.data(), count, dtype, op, tag, timeout);
    if (status.ok() && bytes != 0) std::memcpy(output, staging.data(), bytes);
    staging_->release(std::move(staging));
    return status;
  }

  std::shared_ptr<PendingCollective> start_all_reduce(const void* input, int64_t count, DType dtype,
                                                      ReduceOp op, uint32_t tag, double timeout) override {
    const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
    auto pending = std::make_shared<PendingCollective>(staging_->acquire(bytes));
    if (bytes != 0) std::memcpy(pending->buffer().data(), input, bytes);
    std::weak_ptr<StagingPool> pool = staging_;
    pending->set_release([pool](std::vector<char> buffer) {
      if (auto p = pool.lock()) p->release(std::move(buffer));
    });
    thread_.post([this, pending, count, dtype, op, tag, timeout, bytes](bool run) {
      if (!run) {
        pending->finish(make_error(Code::kCancelled, "all-reduce on rank ", rank(),
                                   ": the group was shut down before it ran"));
        return;
      }
      const int64_t start = profiler::now_ns();
      Status status = agree_and_reduce(pending->buffer().data(), count, dtype, op, tag, timeout);
      if (profiler::active()) {
        char name[64];
        std::snprintf(name, sizeof(name), "all-reduce %zu bytes", bytes);
        profiler::record_span(name, "", start, profiler::now_ns());
      }
      pending->finish(std::move(status));
    });
    return pending;
  }

  // Reduces `count` elements at `data` in place, after the ranks agree on the count and dtype.
  Status agree_and_reduce(void* data, int64_t count, DType dtype, ReduceOp op, uint32_t tag, double timeout) {
    // Note [Agreeing on sizes]: Gloo trusts every rank to pass the same count; a rank that passes more
    // makes its peer's transport thread abort the whole process. So the ranks first agree on the count and
    // dtype (one all-reduce of two int64: max of the signature and of its negation), which turns a
    // mismatch into an error on every rank. Note [Agreed once per tag]: a tag that agreed on this signature
    // before skips the round trip.
    const int64_t mine = count * 16 + static_cast<int64_t>(dtype);
    if (!agreed_before(tag, mine)) {
      int64_t signature[2] = {mine, -mine};
      EMBER_RETURN_IF_ERROR(
          reduce_in_place(signature, 2, DType::kInt64, ReduceOp::kMax, tag ^ kSignatureTagBits, timeout));
      if (signature[0] != -signature[1]) {
        return invalid_argument(
            "all-reduce: every worker must reduce a tensor of the same size and dtype; this worker (rank ",
            rank(), ") has ", count, " elements of ", dtype_name(dtype),
            ", and the workers' element counts range over ", -signature[1] / 16, " to ", signature[0] / 16);
      }
      remember_agreed(tag, mine);
      size_agreements_.fetch_add(1, std::memory_order_relaxed);
    }
    return reduce_in_place(data, count, dtype, op, tag, timeout);
  }

  // Note [Agreed once per tag]
  // The size round trip cost more than the data's own all-reduce on the loaded 2-core machine: Gloo's own
  // loop (bench/native/allreduce_gloo.cc) took 0.65-0.95 ms for 1 MiB after its barrier, and 4.5-17 ms
  // with one extra small collective before each all-reduce, each round trip waiting for the peer to be
  // scheduled again. A tag is one collective instance (an instance key: the same node of a function every
  // step), and TensorFlow too resolves an instance's shape once. So a tag remembers the signature it
  // agreed on, and a later all-reduce with the same tag and signature goes straight to the data; every
  // rank makes the same choice as long as their sizes agree. A rank whose size for a tag changed agrees
  // again, on a tag of its own (kSignatureTagBits), so a peer whose size did not change is never sent a
  // signature where it expects data: when both changed they agree (dynamic shapes), when only one did it
  // waits for a signature the peer never sends and both fail at the deadline, rather than one aborting.
  // Eager calls take a fresh instance key each time and always agree first. The table is bounded (FIFO);
  // every rank evicts the same tags, since each sees the same sequence.
  static constexpr uint32_t kSignatureTagBits = 0x5bd1e995u;
  static constexpr size_t kMaxAgreedTags = 4096;

  int64_t size_agreements() const override { return size_agreements_.load(std::memory_order_relaxed); }

  bool agreed_before(uint32_t tag, int64_t signature) {
    std::lock_guard<std::mutex> lock(agreed_mutex_);
    auto it = agreed_.find(tag);
    return it != agreed_.end() && it->second == signature;
  }

  void remember_agreed(uint32_t tag, int64_t signature) {
    std::lock_guard<std::mutex> lock(agreed_mutex_);
    if (agreed_.insert_or_assign(tag, signature).second) {
      agreed_order_.push_back(tag);
      if (agreed_order_.size() > kMaxAgreedTags) {
        agreed_.erase(agreed_order_.front());
        agreed_order_.pop_front();
      }
    }
  }

  Status reduce_in_place(void* data, int64_t count, DType dtype, ReduceOp op, uint32_t tag, double timeout) {
    return run("all-reduce", [&] {
      gloo::AllreduceOptions opts(context_);
      switch (dtype) {
        case DType::kFloat32:
          opts.setOutput(static_cast<float*>(data), count);
          opts.setReduceFunction(reduce_function<float>(op));
          break;
        case DType::kFloat64:
          opts.setOutput(static_cast<double*>(data), count);
          opts.setReduceFunction(reduce_function<double>(op));
          break;
        case DType::kInt32:
          opts.setOutput(static_cast<int32_t*>(data), count);
          opts.setReduceFunction(reduce_function<int32_t>(op));
          break;
        case DType::kInt64:
          opts.setOutput(static_cast<int64_t*>(data), count);
          opts.setReduceFunction(reduce_function<int64_t>(op));
          break;
        default:
          return invalid_argument("all-reduce supports float32, float64, int32 and int64, got ",
                                  dtype_name(dtype));
      }
      opts.setTag(tag);
      opts.setTimeout(to_millis(timeout > 0 ? timeout : default_timeout()));
      gloo::allreduce(opts);
      return Status::OK();
    });
  }

  Status broadcast(void* data, int64_t bytes, int root, uint32_t tag, double timeout) override {
    return run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<uint8_t*>(data), bytes);
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(to_millis(timeout > 0 ? timeout : default_timeout()));
      gloo::broadcast(opts);
      return Status::OK();
    });
  }

  Status all_gather(const void* input, void* output, int64_t bytes, uint32_t tag, double timeout) override {
    return run("all-gather", [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(static_cast<uint8_t*>(const_cast<void*>(input)), bytes);
      opts.setOutput(static_cast<uint8_t*>(output), bytes * size());
      opts.setTag(tag);
      opts.setTimeout(to_millis(timeout > 0 ? timeout : default_timeout()));
      gloo::allgather(opts);
      return Status::OK();
    });
  }

  Status barrier(uint32_t tag, double timeout) override {
    return run("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(to_millis(timeout > 0 ? timeout : default_timeout()));
      gloo::barrier(opts);
      return Status::OK();
    });
  }

 private:
  // Gloo reports failures as exceptions; none may leave an op (style: no exception escapes). A peer that
  // died ("Connection closed by peer") is kUnavailable, a deadline that passed kDeadlineExceeded; either
  // leaves the pairs in an unknown state, so the communicator refuses further work.
  template <typename Fn>
  Status run(const char* what, Fn&& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!broken_.ok())
        return make_error(Code::kFailedPrecondition, what, " on rank ", rank(),
                          ": the group failed earlier (", broken_.message(),
                          "); make a new group to continue");
    }
    Status status;
    try {
      status = fn();
    } catch (const std::exception& e) {
      const std::string text = e.what();
      const bool timed_out = text.find("Timed out") != std::string::npos;
      status = make_error(timed_out ? Code::kDeadlineExceeded : Code::kUnavailable, what, " on rank ", rank(),
                          " of ", size(), timed_out ? " timed out" : " failed: a peer is gone",
                          " (Gloo: ", text, ")");
      std::lock_guard<std::mutex> lock(mutex_);
      if (broken_.ok()) broken_ = status;
    }
    return status;
  }

  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::shared_ptr<StagingPool> staging_ = std::make_shared<StagingPool>();
  std::mutex mutex_;
  Status broken_;
  std::mutex agreed_mutex_;
  std::unordered_map<uint32_t, int64_t> agreed_;  // Note [Agreed once per tag]
  std::deque<uint32_t> agreed_order_;
  std::atomic<int64_t> size_agreements_{0};
  CollectiveThread thread_;  // last: stopped (joined) before the members its jobs use are destroyed
};

}  // namespace

bool have_collective_library() { return true; }

StatusOr<std::shared_ptr<Communicator>> create_communicator(const CommunicatorOptions& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size)
    return invalid_argument("a communicator needs 0 <= rank < size, got rank ", o.rank, " and size ", o.size);
  if (o.store_path.empty()) return invalid_argument("a communicator needs a rendezvous directory, got none");
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = o.hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore file_store(o.store_path);
    gloo::rendezvous::PrefixStore store(o.store_prefix, file_store);
    auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
    context->setTimeout(to_millis(o.timeout_seconds));
    context->connectFullMesh(store, device);
    return std::shared_ptr<Communicator>(std::make_shared<GlooCommunicator>(o, std::move(context)));
  } catch (const std::exception& e) {
    const std::string text = e.what();
    return make_error(
        text.find("Timed out") != std::string::npos || text.find("Wait timeout") != std::string::npos
            ? Code::kDeadlineExceeded
            : Code::kUnavailable,
        "rank ", o.rank, " of ", o.size, " could not join its group through \"", o.store_path, "\" within ",
        o.timeout_seconds, " s (Gloo: ", text, ")");
  }
}

}  // namespace ember::distribute
#endif  // EMBER_HAVE_GLOO
