// Bindings for checkpoint bundles (ember/state/tensor_bundle.h): ember.train's CheckpointReader and
// Checkpoint read and write TensorFlow's format through these. Big reads and writes release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/state/crc32c.h"
#include "ember/state/tensor_bundle.h"
#include "python/py_gil.h"
#include "python/py_status.h"
#include "python/py_tensor.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

template <typename T>
T take(StatusOr<T> r) {
  if (!r.ok()) throw_status(r.status());
  return std::move(r).value();
}

void check(const Status& s) {
  if (!s.ok()) throw_status(s);
}

}  // namespace

void bind_state(nb::module_& m) {
  nb::class_<BundleWriter>(m, "BundleWriter",
                           "Writes one checkpoint bundle (<prefix>.index and <prefix>.data-*-of-* shards) "
                           "atomically at finish().")
      .def(nb::init<std::string, bool>(), nb::arg("prefix"), nb::arg("sync") = true)
      .def(
          "add",
          [](BundleWriter& w, const std::string& key, nb::handle tensor) {
            TensorImpl* t = tensor_arg(tensor, "BundleWriter.add");
            if (t->is_symbolic())
              throw nb::type_error("BundleWriter.add: expected an eager tensor, got a symbolic one");
            Status s;
            {
              ReleaseGil release;
              s = w.add(key, TensorRef(t));
            }
            check(s);
          },
          nb::arg("key"), nb::arg("tensor"))
      .def(
          "add_strings",
          [](BundleWriter& w, const std::string& key, const std::vector<nb::bytes>& values,
             const std::vector<int64_t>& dims) {
            std::vector<std::string_view> views;
            views.reserve(values.size());
            for (const nb::bytes& b : values) views.emplace_back(b.c_str(), b.size());
            check(w.add_strings(key, views, dims));
          },
          nb::arg("key"), nb::arg("values"), nb::arg("dims") = std::vector<int64_t>{})
      .def("finish", [](BundleWriter& w) {
        Status s;
        {
          ReleaseGil release;
          s = w.finish();
        }
        check(s);
      });

  m.def(
      "_kill_at_checkpoint_step_for_testing",
      [](const std::string& at) {
        set_bundle_finish_hook_for_testing([at](const std::string& step) {
          if (step == at) ::raise(SIGKILL);
          return Status();
        });
      },
      nb::arg("step"),
      "For tests of a crash: SIGKILLs this process when a checkpoint write reaches `step` "
      "(set_bundle_finish_hook_for_testing's steps).");
  m.def(
      "_pause_at_checkpoint_step_for_testing",
      [](const std::string& at) {
        set_bundle_finish_hook_for_testing([at](const std::string& step) {
          if (step != at) return Status();
          const std::string line = "paused at " + step + "\n";
          (void)!::write(1, line.data(), line.size());
          for (;;) ::pause();  // until the test kills this process
        });
      },
      nb::arg("step"),
      "For tests of a crash beside a live writer: when a checkpoint write reaches `step`, prints "
      "\"paused at <step>\" to stdout and waits for a signal forever.");
  m.def("_refuse_hard_links_for_testing", &set_bundle_hard_links_refused_for_testing, nb::arg("refuse"),
        "For tests: checkpoint writes behave as on a file system that refuses hard links.");
  m.def(
      "settle_abandoned_save",
      [](const std::string& prefix, bool temporary_files) {
        Status s;
        {
          ReleaseGil release;
          s = settle_abandoned_save(prefix, temporary_files);
        }
        check(s);
      },
      nb::arg("prefix"), nb::arg("temporary_files"),
      "Settles what a killed save at `prefix` left (a kept .previous generation; with temporary_files, "
      "abandoned .tempstate files), leaving a live save's files alone.");

  nb::class_<BundleReader>(m, "BundleReader",
                           "A checkpoint bundle opened for reading (TensorFlow's format V2).")
      .def_static(
          "open",
          [](const std::string& prefix) {
            StatusOr<BundleReader> r = [&] {
              ReleaseGil release;
              return BundleReader::open(prefix);
            }();
            return std::make_unique<BundleReader>(take(std::move(r)));
          },
          nb::arg("prefix"))
      .def_prop_ro("prefix", &BundleReader::prefix)
      .def("keys", &BundleReader::keys)
      .def("contains", &BundleReader::contains)
      .def("tf_dtype", [](const BundleReader& r, const std::string& key) { return take(r.tf_dtype(key)); })
      .def("dims", [](const BundleReader& r, const std::string& key) { return take(r.dims(key)); })
      .def("read",
           [](const BundleReader& r, const std::string& key) {
             StatusOr<TensorRef> t = [&] {
               ReleaseGil release;
               return r.read(key);
             }();
             return nb::steal(wrap_tensor(take(std::move(t))));
           })
      .def("read_strings",
           [](const BundleReader& r, const std::string& key) {
             std::vector<std::string> values = take(r.read_strings(key));
             nb::list out;
             for (const std::string& v : values) out.append(nb::bytes(v.data(), v.size()));
             return out;
           })
      .def("read_string", [](const BundleReader& r, const std::string& key) {
        std::string v = take(r.read_string(key));
        return nb::bytes(v.data(), v.size());
      });

  m.def(
      "crc32c", [](nb::bytes data) { return crc32c::value(data.c_str(), data.size()); }, nb::arg("data"),
      "The CRC-32C of `data` (tests check the checksum against known values).");
}

}  // namespace ember::python
