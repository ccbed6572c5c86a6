// ember.config.experimental's native-kernel switches (jit/jit.h): the mode, a wait for pending compiles,
// and the counters tests and benchmarks read.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "ember/jit/jit.h"
#include "python/py_gil.h"

namespace nb = nanobind;

namespace ember::python {

void bind_jit(nb::module_& m) {
  m.def("jit_available", &jit::available);
  m.def("jit_mode", [] {
    switch (jit::mode()) {
      case jit::Mode::kOff:
        return std::string("off");
      case jit::Mode::kSync:
        return std::string("sync");
      case jit::Mode::kAsync:
        break;
    }
    return std::string("async");
  });
  m.def("jit_set_mode", [](const std::string& mode) {
    jit::install();
    if (mode == "off")
      jit::set_mode(jit::Mode::kOff);
    else if (mode == "async")
      jit::set_mode(jit::Mode::kAsync);
    else if (mode == "sync")
      jit::set_mode(jit::Mode::kSync);
    else
      throw nb::value_error(
          ("set_native_kernels: expected 'off', 'async' or 'sync', got '" + mode + "'").c_str());
  });
  m.def("jit_wait", [] {
    ReleaseGil release;
    jit::wait_for_pending();
  });
  m.def("jit_shutdown", [] {
    ReleaseGil release;
    jit::shutdown();
  });
  m.def("jit_stats", [] {
    jit::Stats s = jit::stats();
    nb::dict d;
    d["requested"] = s.requested;
    d["compiled"] = s.compiled;
    d["disk_hits"] = s.disk_hits;
    d["memory_hits"] = s.memory_hits;
    d["disk_rejects"] = s.disk_rejects;
    d["failures"] = s.failures;
    d["native_runs"] = s.native_runs;
    d["interpreted_runs"] = s.interpreted_runs;
    d["compile_seconds"] = s.compile_seconds;
    d["queued_bindings"] = s.queued_bindings;
    return d;
  });
  m.def("jit_cache_directory", &jit::cache_directory);
}

}  // namespace ember::python
