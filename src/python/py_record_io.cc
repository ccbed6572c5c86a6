// Bindings for TFRecord files (ember/state/record_io.h): ember.io's TFRecordWriter and record iterators,
// tf.data's TFRecordDataset and the summary event writer read and write through these. File work releases
// the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <memory>
#include <string>

#include "ember/state/record_io.h"
#include "python/py_gil.h"
#include "python/py_status.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

using record_io::RecordOptions;
using record_io::RecordReader;
using record_io::RecordWriter;

void check(const Status& s) {
  if (!s.ok()) throw_status(s);
}

RecordOptions make_options(const std::string& compression, int level, int window_bits, int mem_level,
                           int strategy, int64_t buffer_size) {
  StatusOr<record_io::Compression> c = record_io::parse_compression(compression);
  check(c.status());
  RecordOptions o;
  o.compression = *c;
  o.compression_level = level;
  o.window_bits = window_bits;
  o.mem_level = mem_level;
  o.compression_strategy = strategy;
  if (buffer_size > 0) o.buffer_size = static_cast<size_t>(buffer_size);
  return o;
}

std::string_view bytes_view(nb::handle h, const char* what) {
  if (PyBytes_Check(h.ptr()))
    return {PyBytes_AS_STRING(h.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(h.ptr()))};
  if (PyUnicode_Check(h.ptr())) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(h.ptr(), &n);
    if (p == nullptr) throw nb::python_error();
    return {p, static_cast<size_t>(n)};
  }
  throw nb::type_error((std::string(what) + ": expected bytes or str, got " +
                        nb::cast<std::string>(nb::str(h.type().attr("__name__"))))
                           .c_str());
}

}  // namespace

void bind_record_io(nb::module_& m) {
  nb::class_<RecordWriter>(m, "RecordWriter", "Writes TFRecord files (state/record_io.h).")
      .def_static(
          "open",
          [](const std::string& path, const std::string& compression, int level, int window_bits,
             int mem_level, int strategy, int64_t buffer_size, bool append) {
            RecordOptions o = make_options(compression, level, window_bits, mem_level, strategy, buffer_size);
            StatusOr<std::unique_ptr<RecordWriter>> w = [&] {
              ReleaseGil release;
              return RecordWriter::open(path, o, append);
            }();
            check(w.status());
            return std::move(w).value();
          },
          nb::arg("path"), nb::arg("compression") = "", nb::arg("compression_level") = -1,
          nb::arg("window_bits") = 15, nb::arg("mem_level") = 8, nb::arg("compression_strategy") = 0,
          nb::arg("buffer_size") = 0, nb::arg("append") = false)
      .def(
          "write",
          [](RecordWriter& w, nb::handle record) {
            std::string_view v = bytes_view(record, "TFRecordWriter.write");
            Status s;
            {
              ReleaseGil release;
              s = w.write(v);
            }
            check(s);
          },
          nb::arg("record"))
      .def("flush",
           [](RecordWriter& w) {
             Status s;
             {
               ReleaseGil release;
               s = w.flush();
             }
             check(s);
           })
      .def("close",
           [](RecordWriter& w) {
             Status s;
             {
               ReleaseGil release;
               s = w.close();
             }
             check(s);
           })
      .def_prop_ro("closed", &RecordWriter::closed)
      .def_prop_ro("path", &RecordWriter::path);

  nb::class_<RecordReader>(m, "RecordReader", "Reads TFRecord files (state/record_io.h).")
      .def_static(
          "open",
          [](const std::string& path, const std::string& compression, int window_bits, int64_t buffer_size) {
            RecordOptions o = make_options(compression, -1, window_bits, 8, 0, buffer_size);
            StatusOr<std::unique_ptr<RecordReader>> r = [&] {
              ReleaseGil release;
              return RecordReader::open(path, o);
            }();
            check(r.status());
            return std::move(r).value();
          },
          nb::arg("path"), nb::arg("compression") = "", nb::arg("window_bits") = 15,
          nb::arg("buffer_size") = 0)
      .def(
          "read",
          [](RecordReader& r) -> nb::object {
            std::string record;
            Status s;
            {
              ReleaseGil release;
              s = r.read(&record);
            }
            if (s.code() == Code::kOutOfRange) return nb::none();
            check(s);
            return nb::bytes(record.data(), record.size());
          },
          "The next record as bytes; None at the end of the records; DataLossError when corrupt.")
      .def_prop_ro("offset", &RecordReader::offset)
      .def_prop_ro("path", &RecordReader::path);

  m.def(
      "encode_record",
      [](nb::bytes data) {
        std::string r = record_io::encode_record({data.c_str(), data.size()});
        return nb::bytes(r.data(), r.size());
      },
      nb::arg("data"), "One framed TFRecord (header, data, footer) holding `data`.");
}

}  // namespace ember::python
