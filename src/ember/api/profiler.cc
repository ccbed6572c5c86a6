#include "ember/api/profiler.h"

namespace ember::profiler {

Profile Session::stop() {
  auto p = collector_.stop();
  if (!p.ok()) throw StatusError(p.status());
  return std::move(p).value();
}

void start() {
  Status s = start_global();
  if (!s.ok()) throw StatusError(s);
}

Profile stop() {
  auto p = stop_global();
  if (!p.ok()) throw StatusError(p.status());
  return std::move(p).value();
}

void save_chrome_trace(const Profile& profile, const std::string& path) {
  Status s = profile.save_chrome_trace(path);
  if (!s.ok()) throw StatusError(s);
}

}  // namespace ember::profiler
