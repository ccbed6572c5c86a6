// Bindings for tf.data's C++ iterators (src/ember/data/, docs/data.md): ember._C.DataIterator and the
// functions that build one. A Python iterator becomes a source that takes the GIL for each pull; a traced
// graph function becomes a map function whose calls run its compiled plan without the GIL.
#include <Python.h>
#include <cxxabi.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <atomic>
#include <charconv>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "ember/data/iterator.h"
#include "ember/ops/dataset.h"
#include "python/py_function.h"
#include "python/py_gil.h"
#include "python/py_status.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

// Note [Python exceptions through the pipeline]
// A Python iterator feeding a C++ iterator may raise anything (a generator's TypeError, an ember.errors
// class). The exception crosses the C++ threads as a Status whose message carries a marker with a number;
// the number keys the exception object here, and the consumer re-raises that very object, so the user sees
// the exception class and traceback that the source raised.
constexpr std::string_view kMarker =
    "\x1e"
    "python exception #";

std::mutex& stash_mu() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<uint64_t, PyObject*>& stash() {
  static auto* m = new std::unordered_map<uint64_t, PyObject*>();  // leaked: outlives interpreter exit
  return *m;
}

// Takes the pending Python exception (the GIL is held).
Status stash_python_error() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value != nullptr && tb != nullptr) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  std::string text = "an exception";
  if (value != nullptr) {
    if (PyObject* s = PyObject_Str(value)) {
      if (const char* c = PyUnicode_AsUTF8(s)) text = c;
      Py_DECREF(s);
    }
    PyErr_Clear();
  }
  static std::atomic<uint64_t> counter{0};
  uint64_t id = ++counter;
  {
    std::lock_guard<std::mutex> lock(stash_mu());
    stash()[id] = value;  // owns the reference
  }
  return make_error(Code::kUnknown, text, kMarker, id);
}

[[noreturn]] void throw_data_status(const Status& s) {
  size_t at = s.message().find(kMarker);
  if (at != std::string::npos) {
    uint64_t id = 0;
    const char* first = s.message().data() + at + kMarker.size();
    std::from_chars(first, s.message().data() + s.message().size(), id);
    PyObject* value = nullptr;
    {
      std::lock_guard<std::mutex> lock(stash_mu());
      auto it = stash().find(id);
      if (it != stash().end()) {
        value = it->second;
        stash().erase(it);
      }
    }
    if (value != nullptr) {
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(value)), value);
      Py_DECREF(value);
      throw nb::python_error();
    }
  }
  throw_status(s);
}

// Deletes a Python reference from any thread: under the GIL, or leaked once the interpreter is gone.
template <typename T>
std::shared_ptr<T> holding_gil_on_release(T* p) {
  return std::shared_ptr<T>(p, [](T* q) {
    if (!Py_IsInitialized()) return;  // the interpreter is gone: leak rather than touch it
    AcquireGil gil;
    if (gil.is_valid()) delete q;  // else the interpreter is exiting: leak
  });
}

class PyDataIterator {
 public:
  explicit PyDataIterator(data::IteratorPtr it);
  ~PyDataIterator();

  /// The next element as a tuple of tensors, or None at the end.
  nb::object next() {
    Status status;
    data::Element element;
    bool more = false;
    {
      ReleaseGil release;
      std::lock_guard<std::mutex> lock(mu_);
      if (!it_) {
        status = make_error(Code::kFailedPrecondition, "the iterator was closed");
      } else {
        StatusOr<bool> r = it_->next(element);
        status = r.status();
        more = r.ok() && *r;
      }
    }
    if (!status.ok()) throw_data_status(status);
    if (!more) return nb::none();
    PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(element.size()));
    if (tuple == nullptr) throw nb::python_error();
    for (size_t i = 0; i < element.size(); ++i) {
      PyObject* t = wrap_tensor(std::move(element[i]));
      if (t == nullptr) {
        Py_DECREF(tuple);
        throw nb::python_error();
      }
      PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), t);
    }
    return nb::steal(tuple);
  }

  /// Stops the iterator's threads. Without the GIL, which they may need, and which a next() on another
  /// thread may need while it holds mu_ (a py_function in a map; the package closes every iterator at exit).
  void close() {
    ReleaseGil release(ReleaseGil::kIfHeld);
    data::IteratorPtr old;
    std::lock_guard<std::mutex> lock(mu_);
    old = std::move(it_);
    old.reset();
  }

  /// Hands the C++ iterator to a downstream one (this object is then closed).
  data::IteratorPtr take(const char* what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!it_) throw nb::value_error((std::string(what) + ": the input iterator was already used").c_str());
    return std::move(it_);
  }

 private:
  std::mutex mu_;
  data::IteratorPtr it_;
};

std::mutex& live_mu();
std::unordered_map<PyDataIterator*, bool>& live();

// live_mu() is never awaited with the GIL held: data_close_all holds it while it waits for an iterator's
// mu_, which a next() on another thread may hold while its pipeline waits for the GIL.
PyDataIterator::PyDataIterator(data::IteratorPtr it) : it_(std::move(it)) {
  ReleaseGil release(ReleaseGil::kIfHeld);
  std::lock_guard<std::mutex> lock(live_mu());
  live()[this] = true;
}
PyDataIterator::~PyDataIterator() {
  ReleaseGil release(ReleaseGil::kIfHeld);
  std::lock_guard<std::mutex> lock(live_mu());
  live().erase(this);
  close();
}

data::SourceFn python_source(nb::object iterator) {
  auto held = holding_gil_on_release(new nb::object(std::move(iterator)));
  return [held](data::Element& out) -> StatusOr<bool> {
    if (!Py_IsInitialized()) return make_error(Code::kCancelled, "the interpreter is shutting down");
    AcquireGil gil;
    if (!gil.is_valid()) return make_error(Code::kCancelled, "the interpreter is shutting down");
    PyObject* item = nullptr;
    try {
      item = PyIter_Next(held->ptr());
    } catch (abi::__forced_unwind&) {
      hang_thread_at_exit();  // Python ended this thread at exit (Note [Threads at interpreter exit])
    }
    if (item == nullptr) {
      if (PyErr_Occurred()) return stash_python_error();
      return false;
    }
    nb::object element = nb::steal(item);
    out.clear();
    if (!PyTuple_Check(item) && !PyList_Check(item))
      return invalid_argument("tf.data: a Python input must give tuples of tensors, got ",
                              Py_TYPE(item)->tp_name);
    for (nb::handle h : element) {
      if (!is_tensor(h.ptr()))
        return invalid_argument(
            "tf.data: a Python input must give tuples of tensors, got an element holding ",
            Py_TYPE(h.ptr())->tp_name);
      TensorImpl* t = impl_of(h.ptr());
      if (t->is_symbolic()) return invalid_argument("tf.data: an eager input gave a graph tensor");
      out.emplace_back(t);
    }
    return true;
  };
}

data::MapFn graph_map_fn(std::shared_ptr<PyGraphFunction> fn) {
  auto held = holding_gil_on_release(new std::shared_ptr<PyGraphFunction>(std::move(fn)));
  return [held](const data::Element& in, data::Element& out) -> Status {
    SmallVector<TensorImpl*, 4> args;
    for (const TensorRef& t : in) args.push_back(t.get());
    OutputList results;
    EMBER_RETURN_IF_ERROR((*held)->compiled().run({args.data(), args.size()}, results));
    out.clear();
    for (TensorRef& r : results) out.push_back(std::move(r));
    return Status::OK();
  };
}

// Note [Datasets inside functions]: the dataset ops' kernels call back into the Python package (ember.data.
// staged), which keeps the datasets and their eager iterators by number. An ember.errors exception there
// keeps its class (its code); any other becomes UnknownError with its type and text.
struct DatasetCallbacks {
  nb::object create, next, release;
};
DatasetCallbacks*& callbacks() {
  static DatasetCallbacks* c = nullptr;  // leaked: kernels may run while the interpreter exits
  return c;
}

Status python_error_status() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  Code code = Code::kUnknown;
  std::string text;
  if (value != nullptr) {
    if (PyObject* c = PyObject_GetAttrString(value, "error_code")) {
      long n = PyLong_Check(c) ? PyLong_AsLong(c) : -1;
      if (n > 0 && n <= 16) code = static_cast<Code>(n);
      Py_DECREF(c);
    }
    PyErr_Clear();
    if (PyObject* s = PyObject_Str(value)) {
      if (const char* u = PyUnicode_AsUTF8(s)) text = u;
      Py_DECREF(s);
    }
    PyErr_Clear();
    if (code == Code::kUnknown) text = std::string(Py_TYPE(value)->tp_name) + ": " + text;
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return Status(code, text);
}

// Calls a dataset callback with one integer (the GIL is held).
PyObject* call_dataset_callback(const nb::object& fn, int64_t arg) {
  try {
    return PyObject_CallFunction(fn.ptr(), "L", static_cast<long long>(arg));
  } catch (abi::__forced_unwind&) {
    hang_thread_at_exit();  // Python ended this thread at exit (Note [Threads at interpreter exit])
  }
}

StatusOr<int64_t> py_create(int64_t dataset) {
  if (!Py_IsInitialized() || callbacks() == nullptr)
    return make_error(Code::kCancelled, "no dataset runtime");
  AcquireGil gil;
  if (!gil.is_valid()) return make_error(Code::kCancelled, "the interpreter is shutting down");
  PyObject* r = call_dataset_callback(callbacks()->create, dataset);
  if (r == nullptr) return python_error_status();
  long long h = PyLong_AsLongLong(r);
  Py_DECREF(r);
  if (h == -1 && PyErr_Occurred()) return python_error_status();
  return static_cast<int64_t>(h);
}

StatusOr<bool> py_next(int64_t handle, std::vector<TensorRef>& components) {
  if (!Py_IsInitialized() || callbacks() == nullptr)
    return make_error(Code::kCancelled, "no dataset runtime");
  AcquireGil gil;
  if (!gil.is_valid()) return make_error(Code::kCancelled, "the interpreter is shutting down");
  PyObject* r = call_dataset_callback(callbacks()->next, handle);
  if (r == nullptr) return python_error_status();
  nb::object element = nb::steal(r);
  if (r == Py_None) return false;
  if (!PyTuple_Check(r))
    return make_error(Code::kInternal, "DatasetIteratorNext: the callback gave no tuple");
  for (nb::handle h : element) {
    if (!is_tensor(h.ptr()))
      return make_error(Code::kInternal, "DatasetIteratorNext: a component is no tensor");
    components.emplace_back(impl_of(h.ptr()));
  }
  return true;
}

Status py_release(int64_t handle) {
  if (!Py_IsInitialized() || callbacks() == nullptr) return Status::OK();
  AcquireGil gil;
  if (!gil.is_valid()) return Status::OK();  // the interpreter is exiting: nothing left to release
  PyObject* r = call_dataset_callback(callbacks()->release, handle);
  if (r == nullptr) return python_error_status();
  Py_DECREF(r);
  return Status::OK();
}

// Every PyDataIterator alive, so that the package can stop their threads at interpreter exit.
std::mutex& live_mu() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<PyDataIterator*, bool>& live() {
  static auto* m = new std::unordered_map<PyDataIterator*, bool>();
  return *m;
}

std::unique_ptr<PyDataIterator> wrap(data::IteratorPtr it) {
  return std::make_unique<PyDataIterator>(std::move(it));
}

}  // namespace

void bind_data(nb::module_& m) {
  nb::class_<PyDataIterator>(m, "DataIterator")
      .def("next", &PyDataIterator::next)
      .def("close", &PyDataIterator::close);
  m.def("data_slices", [](nb::list components) {
    std::vector<TensorRef> refs;
    for (nb::handle c : components) refs.emplace_back(tensor_arg(c, "Dataset.from_tensor_slices"));
    auto it = data::make_slices(std::move(refs));
    if (!it.ok()) throw_status(it.status());
    return wrap(std::move(it).value());
  });
  m.def("data_source", [](nb::object iterator) { return wrap(data::make_source(python_source(iterator))); });
  m.def("data_map",
        [](PyDataIterator& input, std::shared_ptr<PyGraphFunction> fn, int num_parallel, std::string name) {
          return wrap(data::make_map(input.take("Dataset.map"), graph_map_fn(std::move(fn)), num_parallel,
                                     std::move(name)));
        });
  m.def("data_batch", [](PyDataIterator& input, int64_t batch_size, bool drop_remainder) {
    return wrap(data::make_batch(input.take("Dataset.batch"), batch_size, drop_remainder));
  });
  m.def("data_prefetch", [](PyDataIterator& input, int64_t buffer_size) {
    return wrap(data::make_prefetch(input.take("Dataset.prefetch"), buffer_size));
  });
  m.def("data_autotune_parallelism", &data::autotune_parallelism);
  m.def("data_close_all", [] {
    // Holding live_mu() keeps each iterator from being destroyed while it is closed.
    ReleaseGil release(ReleaseGil::kIfHeld);
    std::lock_guard<std::mutex> lock(live_mu());
    for (auto& [it, _] : live()) it->close();
  });
  m.def("set_dataset_callbacks", [](nb::object create, nb::object next, nb::object release) {
    if (callbacks() == nullptr) callbacks() = new DatasetCallbacks();
    *callbacks() = {std::move(create), std::move(next), std::move(release)};
    set_dataset_hooks({&py_create, &py_next, &py_release});
  });
}

}  // namespace ember::python
