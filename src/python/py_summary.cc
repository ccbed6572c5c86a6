// Bindings for summaries: the event file writer (ember/state/summary_writer.h) and the call-time summary
// context (ember/ops/summary.h) that ember.summary keeps in step with its Python context managers.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <memory>
#include <string>

#include "ember/ops/summary.h"
#include "ember/state/summary_writer.h"
#include "python/py_gil.h"
#include "python/py_status.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

void check(const Status& s) {
  if (!s.ok()) throw_status(s);
}

}  // namespace

void bind_summary(nb::module_& m) {
  nb::class_<EventFileWriter>(m, "EventFileWriter", "A TensorBoard event file (state/summary_writer.h).")
      .def_static(
          "create",
          [](const std::string& logdir, int64_t max_queue, int64_t flush_millis, const std::string& suffix) {
            StatusOr<std::shared_ptr<EventFileWriter>> w = [&] {
              ReleaseGil release;
              return EventFileWriter::create(logdir, max_queue, flush_millis, suffix);
            }();
            check(w.status());
            return std::move(w).value();
          },
          nb::arg("logdir"), nb::arg("max_queue") = 10, nb::arg("flush_millis") = 120000,
          nb::arg("filename_suffix") = ".v2")
      .def(
          "write_event",
          [](EventFileWriter& w, nb::bytes event) {
            std::string bytes(event.c_str(), event.size());
            Status s;
            {
              ReleaseGil release;
              s = w.write_serialized_event(std::move(bytes));
            }
            check(s);
          },
          nb::arg("event"), "Queues a serialized Event.")
      .def("flush",
           [](EventFileWriter& w) {
             Status s;
             {
               ReleaseGil release;
               s = w.flush();
             }
             check(s);
           })
      .def("close",
           [](EventFileWriter& w) {
             Status s;
             {
               ReleaseGil release;
               s = w.close();
             }
             check(s);
           })
      .def_prop_ro("closed", &EventFileWriter::closed)
      .def_prop_ro("path", &EventFileWriter::path);

  m.def(
      "set_summary_context",
      [](std::shared_ptr<EventFileWriter> writer, int record, bool has_step, int64_t step,
         int64_t step_variable) {
        auto context = std::make_shared<SummaryContext>();
        context->writer = std::move(writer);
        if (record < 0 || record > 2) throw nb::value_error("set_summary_context: record must be 0, 1 or 2");
        context->record = static_cast<SummaryContext::Record>(record);
        context->has_step = has_step;
        context->step = step;
        context->step_variable = step_variable;
        set_summary_context(std::move(context));
      },
      nb::arg("writer").none(), nb::arg("record"), nb::arg("has_step"), nb::arg("step"),
      nb::arg("step_variable"),
      "Sets the calling thread's summary context (ops/summary.h): record 0 always, 1 never, 2 the op's "
      "condition input decides.");
}

}  // namespace ember::python
