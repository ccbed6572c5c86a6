// Per-node profiling of graph function runs (the seeds' RunOptions/RunMetadata): while a profiling session
// is active, the executor records one event per node it runs. Sessions export Chrome-trace JSON and a text
// table of the slowest ops.
//
//   ember::profiler::Collector collector;             // recording starts
//   ... run functions (on any thread) ...
//   ember::profiler::Profile p = std::move(collector.stop()).value();
//   std::string json = p.to_chrome_trace_json();      // open in chrome://tracing or ui.perfetto.dev
//   std::cout << p.summary_table(10);
//
// See Note [Profiler recording] in profiler.cc for how events are collected. C++ programs use the façade
// (ember/api/profiler.h: ember::profiler::Session, which throws); Python uses ember.profiler.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/graph/graph.h"

namespace ember::profiler {

namespace internal {
extern std::atomic<int> g_active_sessions;
}

/// True while at least one session records (one relaxed load: the executor asks before every node).
inline bool active() { return internal::g_active_sessions.load(std::memory_order_relaxed) > 0; }

/// Monotonic nanoseconds (the clock every event uses).
int64_t now_ns();

/// One node execution. The strings are copied.
struct NodeEvent {
  std::string_view function;   // the graph function's name
  const Node* node = nullptr;  // op, node name, source location
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t output_bytes = 0;  // bytes of the node's outputs
};
/// Records a node event for every active session (callable from any thread; a no-op when none is active).
void record(const NodeEvent& event);

/// Records a span the user annotated (ember.profiler.experimental.Trace): `name` shows on the timeline,
/// `location` is where it was opened ("train.py:12", may be empty).
void record_span(std::string_view name, std::string_view location, int64_t start_ns, int64_t end_ns);

/// Names the calling thread on the timeline ("main", "inter-op worker 3"); optional.
void set_thread_name(std::string_view name);

/// One recorded event of a Profile.
struct Event {
  enum class Kind { kNode, kSpan };
  Kind kind = Kind::kNode;
  std::string function;  // graph function (empty for a span)
  std::string node;      // node name, or the span's name
  std::string op;        // op type ("MatMul"; "Trace" for a span)
  std::string location;  // "model.py:42" or ""
  int64_t start_ns = 0;  // now_ns() clock
  int64_t end_ns = 0;
  int64_t output_bytes = 0;
  int thread = 0;  // small id of the recording thread (see Profile::threads)
  int device = 0;  // the logical CPU the event ran on (core/device.h): each device is a track

  int64_t duration_ns() const { return end_ns - start_ns; }
};

/// Time and bytes of one op type or one node, summed over a profile.
struct OpStats {
  std::string name;      // op type, or node name
  std::string op;        // op type (equals name for by-op rows)
  std::string function;  // by-node rows: the node's function
  std::string location;  // by-node rows: the node's source line
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t bytes = 0;
};

/// What a session recorded: the RunMetadata of the calls made while it ran.
class Profile {
 public:
  struct Thread {
    int id = 0;
    std::string name;
  };

  /// Events sorted by start time.
  std::vector<Event> events;
  std::vector<Thread> threads;
  int64_t start_ns = 0;  // when the session started
  int64_t end_ns = 0;    // when it stopped

  /// Chrome trace event format (chrome://tracing, ui.perfetto.dev): one complete ("X") event per node
  /// with ts/dur in microseconds relative to the session's start, plus process and thread names.
  std::string to_chrome_trace_json() const;
  /// Writes to_chrome_trace_json() to `path`.
  Status save_chrome_trace(const std::string& path) const;

  /// Node events aggregated by op type / by node (function + node name), slowest first. Spans are left
  /// out. A PartitionedCall's time includes the nodes of the function it calls.
  std::vector<OpStats> by_op() const;
  std::vector<OpStats> by_node() const;
  /// A fixed-width text table of the `top_n` slowest op types and nodes.
  std::string summary_table(int top_n = 10) const;
};
using RunMetadata = Profile;

/// A profiling session: records every node run in this process from construction until stop().
/// Collectors may nest and overlap: each gets the events that started while it was recording, on every
/// thread (calls made by other threads meanwhile included).
class Collector {
 public:
  Collector();
  ~Collector();  // stops without returning anything if still recording
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  bool recording() const { return recording_; }
  /// Stops recording and returns the profile; fails (FailedPrecondition) when already stopped.
  StatusOr<Profile> stop();

 private:
  int64_t start_ns_ = 0;
  uint64_t id_ = 0;
  bool recording_ = false;
};

/// The process-wide session behind TensorFlow's profiler.experimental.start()/stop(): start fails with
/// AlreadyExists while one runs, stop with Unavailable when none does. Independent of Collector objects.
Status start_global();
StatusOr<Profile> stop_global();
bool global_started();

/// JSON string literal for `s` (quotes included); invalid UTF-8 becomes U+FFFD.
std::string json_quote(std::string_view s);

}  // namespace ember::profiler
