// Bindings for the distribute layer (ember/distribute/communicator.h): joining this process to a group of
// workers, which the collective ops then run on. ember.distribute's Python code reads TF_CONFIG and calls
// these.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "ember/distribute/communicator.h"
#include "python/py_gil.h"
#include "python/py_status.h"

namespace nb = nanobind;

namespace ember::python {

void bind_distribute(nb::module_& m) {
  m.def("have_collective_library", &distribute::have_collective_library,
        "Whether this build can run collectives across processes (Gloo).");
  m.def(
      "collective_initialize",
      [](int rank, int size, const std::string& store_path, const std::string& store_prefix,
         const std::string& hostname, double timeout_seconds) {
        distribute::CommunicatorOptions o;
        o.rank = rank;
        o.size = size;
        o.store_path = store_path;
        o.store_prefix = store_prefix;
        o.hostname = hostname;
        o.timeout_seconds = timeout_seconds;
        StatusOr<std::shared_ptr<distribute::Communicator>> c = [&] {
          ReleaseGil release;
          return distribute::create_communicator(o);
        }();
        if (!c.ok()) throw_status(c.status());
        distribute::set_default_communicator(std::move(c).value());
      },
      nb::arg("rank"), nb::arg("size"), nb::arg("store_path"), nb::arg("store_prefix") = "ember",
      nb::arg("hostname") = "127.0.0.1", nb::arg("timeout_seconds") = 60.0,
      "Joins the group of `size` workers as `rank` (blocks until every rank has joined) and makes it the "
      "process's group for the collective ops.");
  m.def(
      "collective_shutdown", [] { distribute::set_default_communicator(nullptr); },
      "Leaves the group (its connections close when no collective holds it any more).");
  m.def(
      "collective_group",
      [](void) -> nb::object {
        auto c = distribute::default_communicator();
        if (c == nullptr) return nb::none();
        return nb::make_tuple(c->rank(), c->size(), c->default_timeout());
      },
      "(rank, size, default timeout) of the process's group, or None.");
  m.def(
      "collective_size_agreements",
      [] {
        auto c = distribute::default_communicator();
        return c == nullptr ? int64_t{0} : c->size_agreements();
      },
      "All-reduces of the process's group that agreed on their size with a round trip first (tests).");
  m.def(
      "collective_barrier",
      [](uint32_t tag, double timeout_seconds) {
        auto c = distribute::default_communicator();
        if (c == nullptr) return;
        Status s;
        {
          ReleaseGil release;
          s = c->barrier(tag, timeout_seconds);
        }
        if (!s.ok()) throw_status(s);
      },
      nb::arg("tag"), nb::arg("timeout_seconds") = 0.0, "Waits until every worker of the group reaches it.");
}

}  // namespace ember::python
