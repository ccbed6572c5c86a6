#include "ember/runtime/profiler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <unordered_map>

#include "ember/core/device.h"

#include "ember/core/device.h"

namespace ember::profiler {

namespace internal {
std::atomic<int> g_active_sessions{0};
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Note [Profiler recording]
// The executor may record from several threads at once, and each node's event must cost little next to
// the kernel. So every thread appends to its own buffer, guarded by a mutex that only a stopping session
// ever contends for. A buffer stores a node's strings once (an interned description, found again through
// the Node pointer and checked against the node's current fields, so a node freed and another allocated
// at its address cannot borrow its names) and per event only the description's index, the times and the
// bytes. Buffers live in a global registry, so the events of a thread that exited still reach the session.
//
// A session is a time window: stop() takes, from every buffer, the events that started after the session
// did. Overlapping sessions therefore see the same events; the buffers are trimmed to what the oldest
// session still recording can want, and emptied when the last one stops. When no session is recording,
// record() returns at once (and the executor does not even call it: active() is one relaxed load).
namespace {

struct Description {
  Event::Kind kind = Event::Kind::kNode;
  const Node* node = nullptr;  // the cache key (null for spans)
  const OpDef* op = nullptr;
  std::string function, name, op_name, location;
  int line = 0;
  std::string file;
};

struct RawEvent {
  int32_t description;
  int64_t start_ns, end_ns, output_bytes;
  int32_t device;
};

struct ThreadBuffer {
  std::mutex mu;
  int id = 0;
  std::string name;
  std::vector<Description> descriptions;
  std::unordered_map<const Node*, int32_t> by_node;
  std::vector<RawEvent> events;

  void clear() {
    descriptions.clear();
    by_node.clear();
    events.clear();
  }
};

struct ActiveSession {
  uint64_t id;
  int64_t start_ns;
};

struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::vector<ActiveSession> sessions;
  int next_thread = 1;
  uint64_t next_session = 1;
};

// Never destroyed: threads may record (and exit) during static destruction.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

ThreadBuffer& this_thread_buffer() {
  thread_local std::shared_ptr<ThreadBuffer> buffer;
  if (buffer == nullptr) {
    auto b = std::make_shared<ThreadBuffer>();
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    b->id = r.next_thread++;
    b->name = "thread " + std::to_string(b->id) + " (tid " + std::to_string(::syscall(SYS_gettid)) + ")";
    r.buffers.push_back(b);
    buffer = std::move(b);
  }
  return *buffer;
}

bool describes(const Description& d, std::string_view function, const Node& node) {
  return d.op == node.op && d.line == node.location.line && d.function == function && d.name == node.name &&
         d.file == node.location.file;
}

int32_t describe_node(ThreadBuffer& b, std::string_view function, const Node& node) {
  auto it = b.by_node.find(&node);
  if (it != b.by_node.end() && describes(b.descriptions[it->second], function, node)) return it->second;
  Description d;
  d.node = &node;
  d.op = node.op;
  d.function = function;
  d.name = node.name;
  d.op_name = node.op != nullptr ? node.op->name : "";
  d.location = node.location.to_string();
  d.line = node.location.line;
  d.file = node.location.file;
  int32_t index = static_cast<int32_t>(b.descriptions.size());
  b.descriptions.push_back(std::move(d));
  b.by_node[&node] = index;
  return index;
}

Event to_event(const ThreadBuffer& b, const RawEvent& raw) {
  const Description& d = b.descriptions[raw.description];
  Event e;
  e.kind = d.kind;
  e.function = d.function;
  e.node = d.name;
  e.op = d.op_name;
  e.location = d.location;
  e.start_ns = raw.start_ns;
  e.end_ns = raw.end_ns;
  e.output_bytes = raw.output_bytes;
  e.thread = b.id;
  e.device = raw.device;
  return e;
}

}  // namespace

void record(const NodeEvent& event) {
  if (!active() || event.node == nullptr) return;
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  int32_t d = describe_node(b, event.function, *event.node);
  b.events.push_back(RawEvent{d, event.start_ns, event.end_ns, event.output_bytes, current_device().index});
}

void record_span(std::string_view name, std::string_view location, int64_t start_ns, int64_t end_ns) {
  if (!active()) return;
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  Description d;
  d.kind = Event::Kind::kSpan;
  d.name = name;
  d.op_name = "Trace";
  d.location = location;
  b.descriptions.push_back(std::move(d));
  b.events.push_back(
      RawEvent{static_cast<int32_t>(b.descriptions.size() - 1), start_ns, end_ns, 0, current_device().index});
}

void set_thread_name(std::string_view name) {
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  b.name = name;
}

// ---- Sessions ----------------------------------------------------------------------------------------

Collector::Collector() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  id_ = r.next_session++;
  start_ns_ = now_ns();
  r.sessions.push_back(ActiveSession{id_, start_ns_});
  internal::g_active_sessions.fetch_add(1, std::memory_order_relaxed);
  recording_ = true;
}

Collector::~Collector() {
  if (recording_) (void)stop();
}

StatusOr<Profile> Collector::stop() {
  if (!recording_) return make_error(Code::kFailedPrecondition, "profiler: this session was already stopped");
  recording_ = false;
  Profile p;
  p.start_ns = start_ns_;
  p.end_ns = now_ns();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::erase_if(r.sessions, [&](const ActiveSession& s) { return s.id == id_; });
  internal::g_active_sessions.fetch_sub(1, std::memory_order_relaxed);
  int64_t keep_from = INT64_MAX;  // events older than every remaining session's start can go
  for (const ActiveSession& s : r.sessions) keep_from = std::min(keep_from, s.start_ns);
  for (const auto& buffer : r.buffers) {
    std::lock_guard<std::mutex> buffer_lock(buffer->mu);
    bool used = false;
    for (const RawEvent& raw : buffer->events) {
      if (raw.start_ns < p.start_ns || raw.start_ns > p.end_ns) continue;
      p.events.push_back(to_event(*buffer, raw));
      used = true;
    }
    if (used) p.threads.push_back(Profile::Thread{buffer->id, buffer->name});
    if (r.sessions.empty())
      buffer->clear();
    else
      std::erase_if(buffer->events, [&](const RawEvent& e) { return e.start_ns < keep_from; });
  }
  // A buffer only the registry still holds belongs to a thread that exited.
  if (r.sessions.empty()) std::erase_if(r.buffers, [](const auto& b) { return b.use_count() == 1; });
  std::stable_sort(p.events.begin(), p.events.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;  // outer spans first
  });
  std::sort(p.threads.begin(), p.threads.end(),
            [](const Profile::Thread& a, const Profile::Thread& b) { return a.id < b.id; });
  return p;
}

namespace {
std::mutex g_default_mu;
std::unique_ptr<Collector> g_default;
}  // namespace

Status start_global() {
  std::lock_guard<std::mutex> lock(g_default_mu);
  if (g_default != nullptr)
    return make_error(Code::kAlreadyExists, "profiler: another profiling session is running; stop it first");
  g_default = std::make_unique<Collector>();
  return Status::OK();
}

StatusOr<Profile> stop_global() {
  std::unique_ptr<Collector> session;
  {
    std::lock_guard<std::mutex> lock(g_default_mu);
    session = std::move(g_default);
  }
  if (session == nullptr) return make_error(Code::kUnavailable, "profiler: no profiling session is running");
  return session->stop();
}

bool global_started() {
  std::lock_guard<std::mutex> lock(g_default_mu);
  return g_default != nullptr;
}

// ---- Chrome trace ------------------------------------------------------------------------------------

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    unsigned char c = *p;
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++p;
      continue;
    }
    // A multi-byte UTF-8 sequence: copy it when well formed (no overlong forms, no surrogates, at most
    // U+10FFFF), else write U+FFFD for the lead byte and resynchronize.
    int len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = len > 0 && end - p >= len;
    for (int i = 1; ok && i < len; ++i) ok = (p[i] & 0xc0) == 0x80;
    if (ok && len == 3) ok = !(c == 0xe0 && p[1] < 0xa0) && !(c == 0xed && p[1] >= 0xa0);
    if (ok && len == 4) ok = !(c == 0xf0 && p[1] < 0x90) && !(c == 0xf4 && p[1] >= 0x90);
    if (ok) {
      out.append(reinterpret_cast<const char*>(p), len);
      p += len;
    } else {
      out += "\\ufffd";
      ++p;
    }
  }
  out += '"';
  return out;
}

namespace {
std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1000.0);
  return buf;
}
}  // namespace

std::string Profile::to_chrome_trace_json() const {
  const long pid = static_cast<long>(::getpid());
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"ember\",\"start_ns\":" +
                    std::to_string(start_ns) + ",\"end_ns\":" + std::to_string(end_ns) +
                    "},\"traceEvents\":[\n";
  // Events of logical devices other than CPU:0 go to a process row per device (TensorFlow's profiler shows
  // devices as such rows), named by the device; a profile of one device keeps the single "ember" row.
  int max_device = 0;
  for (const Event& e : events) max_device = std::max(max_device, e.device);
  auto device_pid = [&](int device) { return ",\"pid\":" + std::to_string(pid + int64_t{1000000} * device); };
  for (int d = 0; d <= max_device; ++d) {
    const std::string name =
        max_device == 0 ? std::string("ember") : full_device_name(Device{DeviceType::kCPU, d});
    out += std::string(d ? ",\n" : "") + "{\"name\":\"process_name\",\"ph\":\"M\"" + device_pid(d) +
           ",\"tid\":0,\"args\":{\"name\":" + json_quote(name) + "}}";
    out += ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\"" + device_pid(d) +
           ",\"tid\":0,\"args\":{\"sort_index\":" + std::to_string(d) + "}}";
    for (const Thread& t : threads) {
      out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\"" + device_pid(d) +
             ",\"tid\":" + std::to_string(t.id) + ",\"args\":{\"name\":" + json_quote(t.name) + "}}";
      out += ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\"" + device_pid(d) +
             ",\"tid\":" + std::to_string(t.id) + ",\"args\":{\"sort_index\":" + std::to_string(t.id) + "}}";
    }
  }
  for (const Event& e : events) {
    const bool span = e.kind == Event::Kind::kSpan;
    out += ",\n{\"name\":" + json_quote(span ? e.node : e.op);
    out += span ? ",\"cat\":\"user\"" : ",\"cat\":\"node\"";
    out += ",\"ph\":\"X\",\"ts\":" + micros(e.start_ns - start_ns) +
           ",\"dur\":" + micros(std::max<int64_t>(0, e.duration_ns())) + device_pid(e.device) +
           ",\"tid\":" + std::to_string(e.thread) + ",\"args\":{";
    if (span) {
      out += "\"location\":" + json_quote(e.location) + "}}";
      continue;
    }
    out += "\"op\":" + json_quote(e.op) + ",\"node\":" + json_quote(e.node) +
           ",\"function\":" + json_quote(e.function) + ",\"location\":" + json_quote(e.location) +
           ",\"bytes\":" + std::to_string(e.output_bytes) + "}}";
  }
  out += "\n]}\n";
  return out;
}

Status Profile::save_chrome_trace(const std::string& path) const {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return make_error(Code::kNotFound, "profiler: cannot open '", path, "' for writing");
  file << to_chrome_trace_json();
  file.close();
  if (!file) return make_error(Code::kDataLoss, "profiler: writing '", path, "' failed");
  return Status::OK();
}

// ---- Tables ------------------------------------------------------------------------------------------

namespace {

std::vector<OpStats> sorted(std::map<std::string, OpStats> rows) {
  std::vector<OpStats> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(),
                   [](const OpStats& a, const OpStats& b) { return a.total_ns > b.total_ns; });
  return out;
}

std::string clip(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

void append_rows(std::string& out, const std::vector<OpStats>& rows, int top_n, int64_t total_ns,
                 bool with_node) {
  size_t name_width = with_node ? 4 : 2;
  size_t op_width = 2;
  size_t fn_width = 8;
  const size_t shown = std::min(rows.size(), static_cast<size_t>(std::max(top_n, 0)));
  for (size_t i = 0; i < shown; ++i) {
    name_width = std::max(name_width, std::min<size_t>(rows[i].name.size(), 40));
    op_width = std::max(op_width, std::min<size_t>(rows[i].op.size(), 24));
    fn_width = std::max(fn_width, std::min<size_t>(rows[i].function.size(), 32));
  }
  char buf[512];
  const int nw = static_cast<int>(name_width), ow = static_cast<int>(op_width),
            fw = static_cast<int>(fn_width);
  if (with_node)
    std::snprintf(buf, sizeof buf, "  %-*s  %-*s %7s %12s %10s %7s %12s  %-*s  %s\n", nw, "Node", ow, "Op",
                  "Count", "Total(us)", "Mean(us)", "Time%", "Bytes", fw, "Function", "Location");
  else
    std::snprintf(buf, sizeof buf, "  %-*s %7s %12s %10s %7s %12s\n", nw, "Op", "Count", "Total(us)",
                  "Mean(us)", "Time%", "Bytes");
  out += buf;
  for (size_t i = 0; i < shown; ++i) {
    const OpStats& r = rows[i];
    double total_us = static_cast<double>(r.total_ns) / 1000.0;
    double mean_us = r.count > 0 ? total_us / static_cast<double>(r.count) : 0.0;
    double pct = total_ns > 0 ? 100.0 * static_cast<double>(r.total_ns) / static_cast<double>(total_ns) : 0.0;
    if (with_node)
      std::snprintf(buf, sizeof buf, "  %-*s  %-*s %7lld %12.3f %10.3f %6.1f%% %12lld  %-*s  %s\n", nw,
                    clip(r.name, 40).c_str(), ow, clip(r.op, 24).c_str(), static_cast<long long>(r.count),
                    total_us, mean_us, pct, static_cast<long long>(r.bytes), fw, clip(r.function, 32).c_str(),
                    r.location.c_str());
    else
      std::snprintf(buf, sizeof buf, "  %-*s %7lld %12.3f %10.3f %6.1f%% %12lld\n", nw,
                    clip(r.name, 40).c_str(), static_cast<long long>(r.count), total_us, mean_us, pct,
                    static_cast<long long>(r.bytes));
    out += buf;
  }
  if (rows.size() > shown) out += "  ... " + std::to_string(rows.size() - shown) + " more\n";
}

}  // namespace

std::vector<OpStats> Profile::by_op() const {
  std::map<std::string, OpStats> rows;
  for (const Event& e : events) {
    if (e.kind != Event::Kind::kNode) continue;
    OpStats& r = rows[e.op];
    r.name = r.op = e.op;
    r.count += 1;
    r.total_ns += std::max<int64_t>(0, e.duration_ns());
    r.bytes += e.output_bytes;
  }
  return sorted(std::move(rows));
}

std::vector<OpStats> Profile::by_node() const {
  std::map<std::string, OpStats> rows;
  for (const Event& e : events) {
    if (e.kind != Event::Kind::kNode) continue;
    OpStats& r = rows[e.function + '\0' + e.node];
    r.name = e.node;
    r.op = e.op;
    r.function = e.function;
    r.location = e.location;
    r.count += 1;
    r.total_ns += std::max<int64_t>(0, e.duration_ns());
    r.bytes += e.output_bytes;
  }
  return sorted(std::move(rows));
}

std::string Profile::summary_table(int top_n) const {
  int64_t node_ns = 0, node_events = 0;
  std::map<std::string, int> functions;
  for (const Event& e : events) {
    if (e.kind != Event::Kind::kNode) continue;
    node_ns += std::max<int64_t>(0, e.duration_ns());
    ++node_events;
    functions[e.function] = 1;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "ember profile: %lld node event(s) in %zu function(s), %.3f ms in nodes, %.3f ms wall, %zu "
                "thread(s)\n",
                static_cast<long long>(node_events), functions.size(), static_cast<double>(node_ns) / 1e6,
                static_cast<double>(end_ns - start_ns) / 1e6, threads.size());
  std::string out = buf;
  out += "\nOp types, slowest first:\n";
  append_rows(out, by_op(), top_n, node_ns, false);
  out += "\nNodes, slowest first:\n";
  append_rows(out, by_node(), top_n, node_ns, true);
  return out;
}

}  // namespace ember::profiler
