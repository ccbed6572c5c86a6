// ember.config's devices and ember.device: logical device configuration, device names, soft placement and
// the thread's eager device scope (core/device.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ember/core/device.h"
#include "python/py_status.h"

namespace nb = nanobind;

namespace ember::python {

void bind_devices(nb::module_& m) {
  m.def("devices_configure_cpus", [](int count) {
    if (Status s = configure_logical_cpus(count); !s.ok()) throw_status(s);
  });
  m.def("devices_num_cpus", [] { return num_logical_cpus(); });
  m.def("devices_list", [] {
    std::vector<std::string> names;
    for (Device d : logical_devices()) names.push_back(short_device_name(d));
    return names;
  });
  m.def("devices_initialized", [] { return devices_initialized(); });
  m.def("devices_mark_initialized", [] { mark_devices_initialized(); });
  m.def("devices_reset_for_tests", [] { reset_devices_for_tests(); });
  m.def("set_soft_device_placement", [](bool on) { set_soft_device_placement(on); });
  m.def("get_soft_device_placement", [] { return soft_device_placement(); });
  // The canonical partial name of `inner` inside `outer`; InvalidArgumentError for a name it cannot read.
  m.def("device_merge", [](const std::string& outer, const std::string& inner) {
    auto o = DeviceSpec::parse(outer);
    if (!o.ok()) throw_status(o.status());
    auto i = DeviceSpec::parse(inner);
    if (!i.ok()) throw_status(i.status());
    return DeviceSpec::merge(*o, *i).to_string();
  });
  // The full name of the device `spec` resolves to (soft placement as configured), or the error.
  m.def("device_resolve", [](const std::string& spec) {
    auto parsed = DeviceSpec::parse(spec);
    if (!parsed.ok()) throw_status(parsed.status());
    auto d = resolve_device(*parsed, soft_device_placement());
    if (!d.ok()) throw_status(d.status());
    return full_device_name(*d);
  });
  m.def("set_eager_device_scope", [](const std::string& spec) { set_eager_device_scope(spec); });
  m.def("current_device_name", [] { return full_device_name(current_device()); });
}

}  // namespace ember::python
