// Profiling from C++ (the seeds' RunOptions/RunMetadata): while a session records, every node a staged
// function runs is timed, with its output bytes and the source line that created it. The result exports a
// Chrome-trace timeline (open it in chrome://tracing or https://ui.perfetto.dev) and a table of the
// slowest ops:
//
//   auto f = ember::function([](const ember::Tensor& x) { return ember::tanh(ember::matmul(x, x)); });
//   ember::profiler::Session session;                   // records from here
//   f(x);
//   ember::profiler::Profile p = session.stop();
//   ember::profiler::save_chrome_trace(p, "/tmp/f.trace.json");
//   std::cout << p.summary_table(10);
//
// Or in one call: `ember::profiler::Profile p = ember::profiler::profile([&] { f(x); });`.
// Sessions may nest and overlap; each sees every node that started while it recorded, on any thread.
// Errors throw ember::StatusError.
#pragma once

#include <string>
#include <utility>

#include "ember/runtime/profiler.h"

namespace ember::profiler {

/// Records from construction until stop() (or destruction, which discards the events).
class Session {
 public:
  Session() = default;
  /// The profile of everything run since construction; throws when called a second time.
  Profile stop();
  bool recording() const { return collector_.recording(); }

 private:
  Collector collector_;
};

/// Runs `body` under a session and returns what it recorded.
template <typename F>
Profile profile(F&& body) {
  Session session;
  std::forward<F>(body)();
  return session.stop();
}

/// The process-wide session (TensorFlow's profiler.experimental.start/stop, shared with Python): start
/// throws AlreadyExists while one runs; stop throws Unavailable when none does.
void start();
Profile stop();

/// Writes `profile`'s Chrome-trace JSON to `path`.
void save_chrome_trace(const Profile& profile, const std::string& path);

}  // namespace ember::profiler
