// ember._C profiler bindings: collectors (profiling sessions), the process-wide session behind
// ember.profiler.experimental.start/stop, user spans, and the recorded Profile behind ember.profiler's
// RunMetadata (events, Chrome-trace JSON, the slowest-ops table).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "ember/runtime/profiler.h"
#include "python/py_status.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

using profiler::Event;
using profiler::Profile;

nb::dict event_dict(const Event& e) {
  nb::dict d;
  d["kind"] = e.kind == Event::Kind::kSpan ? "span" : "node";
  d["name"] = e.node;
  d["op"] = e.op;
  d["function"] = e.function;
  d["location"] = e.location;
  d["start_ns"] = e.start_ns;
  d["end_ns"] = e.end_ns;
  d["duration_ns"] = e.duration_ns();
  d["bytes"] = e.output_bytes;
  d["thread"] = e.thread;
  d["device"] = e.device;
  return d;
}

nb::list stats_list(const std::vector<profiler::OpStats>& rows) {
  nb::list out;
  for (const profiler::OpStats& r : rows) {
    nb::dict d;
    d["name"] = r.name;
    d["op"] = r.op;
    d["function"] = r.function;
    d["location"] = r.location;
    d["count"] = r.count;
    d["total_ns"] = r.total_ns;
    d["bytes"] = r.bytes;
    out.append(d);
  }
  return out;
}

Profile stopped(StatusOr<Profile> p) {
  if (!p.ok()) throw_status(p.status());
  return std::move(p).value();
}

}  // namespace

void bind_profiler(nb::module_& m) {
  nb::class_<Profile>(m, "Profile")
      .def_prop_ro("events",
                   [](const Profile& p) {
                     nb::list out;
                     for (const Event& e : p.events) out.append(event_dict(e));
                     return out;
                   })
      .def_prop_ro("threads",
                   [](const Profile& p) {
                     nb::dict out;
                     for (const Profile::Thread& t : p.threads) out[nb::int_(t.id)] = t.name;
                     return out;
                   })
      .def_ro("start_ns", &Profile::start_ns)
      .def_ro("end_ns", &Profile::end_ns)
      .def("chrome_trace", &Profile::to_chrome_trace_json)
      .def("table", &Profile::summary_table, nb::arg("top") = 10)
      .def("by_op", [](const Profile& p) { return stats_list(p.by_op()); })
      .def("by_node", [](const Profile& p) { return stats_list(p.by_node()); })
      .def("save", [](const Profile& p, const std::string& path) {
        Status s = p.save_chrome_trace(path);
        if (!s.ok()) throw_status(s);
      });

  nb::class_<profiler::Collector>(m, "ProfilerCollector")
      .def(nb::init<>())
      .def_prop_ro("recording", &profiler::Collector::recording)
      .def("stop", [](profiler::Collector& c) { return stopped(c.stop()); });

  m.def("profiler_start_global", [] {
    Status s = profiler::start_global();
    if (!s.ok()) throw_status(s);
  });
  m.def("profiler_stop_global", [] { return stopped(profiler::stop_global()); });
  m.def("profiler_global_started", &profiler::global_started);
  m.def("profiler_active", &profiler::active);
  m.def("profiler_now_ns", &profiler::now_ns);
  m.def("profiler_record_span",
        [](const std::string& name, const std::string& location, int64_t start_ns, int64_t end_ns) {
          profiler::record_span(name, location, start_ns, end_ns);
        });
  m.def("profiler_set_thread_name", [](const std::string& name) { profiler::set_thread_name(name); });
}

}  // namespace ember::python
