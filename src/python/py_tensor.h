// The Python face of a tensor: `ember._C.TensorBase`, a static CPython type whose number slots call ops
// directly (architecture.md §0.2), and the fast op callables. `ember.Tensor` (python/ember) subclasses
// it with __slots__ = () to add the rest of TensorFlow's methods in Python.
#pragma once

#include <Python.h>

#include "ember/core/tensor_impl.h"
#include "ember/ops/execute.h"
#include "ember/ops/op_def.h"

namespace ember::python {

struct PyTensor {
  PyObject_HEAD TensorImpl* impl;
  PyObject* weakrefs;
};

extern PyTypeObject TensorBaseType;

/// Python classes registered by the package at import (ember.Tensor, dtype objects, error classes, the
/// converter for lists/arrays).
struct Registered {
  PyTypeObject* tensor_class = nullptr;
  PyObject* dtype_objects[kNumDTypes] = {};
  PyObject* error_classes[17] = {};
  PyObject* convert_fn = nullptr;  // convert(value, dtype_enum_or_None) -> Tensor
};
Registered& registered();

inline bool is_tensor(PyObject* o) { return PyObject_TypeCheck(o, &TensorBaseType); }
inline TensorImpl* impl_of(PyObject* o) { return reinterpret_cast<PyTensor*>(o)->impl; }

/// Wraps a TensorRef in a new ember.Tensor (steals the reference).
PyObject* wrap_tensor(TensorRef ref);
/// Sets the Python error for a failed Status and returns nullptr.
PyObject* raise_status(const Status& s);
/// Converts a Python value to a tensor, adopting `dtype_hint` for Python scalars (TF's rule); returns
/// a new reference to a TensorBase instance or nullptr with an error set.
PyObject* to_tensor(PyObject* value, int dtype_hint);
/// execute_op for callers reached from C: a C++ exception (std::bad_alloc included) becomes a Status.
Status guarded_execute(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
                       OutputList& outputs);
/// Runs an op on PyObject inputs (already tensors) and wraps the outputs (one object, or a tuple when
/// the op has several outputs).
PyObject* run_op(const OpDef& op, PyObject* const* inputs, size_t n_inputs, std::span<const AttrValue> attrs,
                 bool force_tuple);

bool init_tensor_type(PyObject* module);
bool init_op_caller(PyObject* module);

}  // namespace ember::python
