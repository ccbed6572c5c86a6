// The iterators that run threads: map (parallel, in input order) and prefetch.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <thread>

#include "ember/data/iterator.h"

namespace ember::data {
namespace {

Status run_guarded(const MapFn& fn, const Element& in, Element& out, const std::string& name) {
  try {
    return fn(in, out).with_prefix(name + ": ");
  } catch (const std::bad_alloc&) {
    return make_error(Code::kResourceExhausted, name, ": out of memory");
  } catch (const std::exception& e) {
    return make_error(Code::kInternal, name, ": ", e.what());
  }
}

// Note [Ordered parallel map]
// Workers take turns pulling a chunk of elements from the input (input_mu_ makes one puller at a time, so
// slots enter `slots_` in input order), run the function on their chunk with no lock held, and mark the
// slots done. The consumer hands out the front slot once it is done: the output order is the input order
// whatever order the workers finish in, as TensorFlow's deterministic map. A chunk, rather than one
// element per turn, keeps the locks off the per-element path when the function is cheap; the buffer of
// slots bounds how far the workers run ahead of the consumer.
class MapIterator final : public Iterator {
 public:
  MapIterator(IteratorPtr input, MapFn fn, int threads, std::string name)
      : input_(std::move(input)), fn_(std::move(fn)), threads_(threads), name_(std::move(name)) {
    capacity_ = static_cast<size_t>(std::max(threads_, 1)) * kChunk * 2;
  }

  ~MapIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  StatusOr<bool> next(Element& out) override {
    if (threads_ == 0) return next_inline(out);
    std::unique_lock<std::mutex> lock(mu_);
    if (workers_.empty()) start();
    for (;;) {
      if (!slots_.empty() && slots_.front()->done) {
        std::shared_ptr<Slot> slot = std::move(slots_.front());
        slots_.pop_front();
        lock.unlock();
        work_cv_.notify_one();  // room for another chunk
        if (!slot->status.ok()) return slot->status;
        out = std::move(slot->out);
        return true;
      }
      if (slots_.empty() && input_done_) return false;
      done_cv_.wait(lock);
    }
  }

 private:
  static constexpr size_t kChunk = 16;

  struct Slot {
    Element in, out;
    Status status;
    bool done = false;
  };

  StatusOr<bool> next_inline(Element& out) {
    if (input_done_) return false;
    Element in;
    StatusOr<bool> more = input_->next(in);
    if (!more.ok()) return more.status();
    if (!*more) {
      input_done_ = true;
      return false;
    }
    Status s = run_guarded(fn_, in, out, name_);
    if (!s.ok()) return s;
    return true;
  }

  void start() {
    try {
      for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { work(); });
    } catch (const std::system_error&) {
      if (workers_.empty()) threads_ = 0;  // no thread to be had: run on the caller's thread
    }
  }

  void work() {
    std::vector<std::shared_ptr<Slot>> chunk;
    for (;;) {
      chunk.clear();
      bool end = false;
      {
        std::unique_lock<std::mutex> turn(input_mu_);
        size_t want;
        {
          std::unique_lock<std::mutex> lock(mu_);
          work_cv_.wait(lock, [&] { return cancelled_ || input_done_ || slots_.size() < capacity_; });
          if (cancelled_ || input_done_) return;
          // Share the room among the workers so that a small buffer still keeps all of them busy.
          want = std::clamp<size_t>((capacity_ - slots_.size()) / static_cast<size_t>(threads_), 1, kChunk);
        }
        for (size_t i = 0; i < want && !end; ++i) {
          auto slot = std::make_shared<Slot>();
          StatusOr<bool> more = input_->next(slot->in);
          if (!more.ok()) {
            slot->status = more.status();
            slot->done = true;  // the input's error takes this element's place
          } else if (!*more) {
            end = true;
            break;
          }
          chunk.push_back(std::move(slot));
        }
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& slot : chunk) slots_.push_back(slot);
        if (end) input_done_ = true;
      }
      if (end) {
        work_cv_.notify_all();  // the other workers stop waiting for room
        done_cv_.notify_all();  // the consumer may be waiting for the end
      }
      for (auto& slot : chunk) {
        if (slot->done) continue;
        slot->status = run_guarded(fn_, slot->in, slot->out, name_);
        slot->in.clear();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& slot : chunk) slot->done = true;
      }
      done_cv_.notify_all();
    }
  }

  IteratorPtr input_;
  MapFn fn_;
  int threads_;
  std::string name_;
  size_t capacity_;

  std::mutex input_mu_;  // held by the worker pulling from input_ (one at a time, in order)
  std::mutex mu_;        // guards everything below
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::shared_ptr<Slot>> slots_;
  bool input_done_ = false;
  bool cancelled_ = false;
  std::vector<std::thread> workers_;
};

class PrefetchIterator final : public Iterator {
 public:
  PrefetchIterator(IteratorPtr input, int64_t buffer_size)
      : input_(std::move(input)), capacity_(static_cast<size_t>(std::max<int64_t>(buffer_size, 1))) {}

  ~PrefetchIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    room_cv_.notify_all();
    if (producer_.joinable()) producer_.join();
  }

  StatusOr<bool> next(Element& out) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!started_) {
      started_ = true;
      try {
        producer_ = std::thread([this] { produce(); });
      } catch (const std::system_error&) {
        lock.unlock();
        return input_->next(out);  // no thread to be had: pull directly (nothing was buffered)
      }
    }
    if (!producer_.joinable()) {
      lock.unlock();
      return input_->next(out);
    }
    ready_cv_.wait(lock, [&] { return !buffer_.empty() || finished_; });
    if (buffer_.empty()) return false;
    Entry entry = std::move(buffer_.front());
    buffer_.pop_front();
    lock.unlock();
    room_cv_.notify_one();
    if (!entry.status.ok()) return entry.status;
    out = std::move(entry.element);
    return true;
  }

 private:
  struct Entry {
    Element element;
    Status status;
  };

  void produce() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        room_cv_.wait(lock, [&] { return cancelled_ || buffer_.size() < capacity_; });
        if (cancelled_) return;
      }
      Entry entry;
      StatusOr<bool> more = input_->next(entry.element);
      std::lock_guard<std::mutex> lock(mu_);
      if (more.ok() && !*more) {
        finished_ = true;
        ready_cv_.notify_all();
        return;
      }
      if (!more.ok()) entry.status = more.status();
      buffer_.push_back(std::move(entry));
      ready_cv_.notify_one();
    }
  }

  IteratorPtr input_;
  size_t capacity_;
  std::mutex mu_;
  std::condition_variable ready_cv_, room_cv_;
  std::deque<Entry> buffer_;
  bool started_ = false;
  bool finished_ = false;
  bool cancelled_ = false;
  std::thread producer_;
};

}  // namespace

IteratorPtr make_map(IteratorPtr input, MapFn fn, int num_parallel, std::string name) {
  return std::make_unique<MapIterator>(std::move(input), std::move(fn), std::max(num_parallel, 0),
                                       std::move(name));
}

IteratorPtr make_prefetch(IteratorPtr input, int64_t buffer_size) {
  return std::make_unique<PrefetchIterator>(std::move(input), buffer_size);
}

}  // namespace ember::data
