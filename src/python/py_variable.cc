// ember._C.VariableHandle: the Python ember.Variable's strong reference to its VariableResource.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ember/core/resource.h"
#include "python/py_status.h"
#include "python/py_tensor.h"

namespace nb = nanobind;

namespace ember::python {

struct VariableHandle {
  std::shared_ptr<VariableResource> resource;
};

void bind_variables(nb::module_& m) {
  nb::class_<VariableHandle>(m, "VariableHandle")
      .def_prop_ro("id", [](const VariableHandle& h) { return h.resource->id(); })
      .def_prop_ro("name", [](const VariableHandle& h) { return h.resource->name(); })
      .def_prop_ro("device", [](const VariableHandle& h) { return full_device_name(h.resource->device()); })
      .def_prop_ro("dtype", [](const VariableHandle& h) { return static_cast<int>(h.resource->dtype()); })
      // The declared shape: dims with -1 for an unknown one, None for an unknown rank.
      .def_prop_ro("shape",
                   [](const VariableHandle& h) -> nb::object {
                     const Shape& shape = h.resource->shape();
                     if (!shape.rank_known()) return nb::none();
                     return nb::cast(shape.dim_vector());
                   })
      .def_prop_rw(
          "trainable", [](const VariableHandle& h) { return h.resource->trainable(); },
          [](VariableHandle& h, bool trainable) { h.resource->set_trainable(trainable); });
  // `shape` (dims, -1 unknown) or `unknown_rank` declare a shape the value fits; by default the value's.
  m.def(
      "create_variable",
      [](nb::handle value, const std::string& name, std::optional<std::vector<int64_t>> shape,
         bool unknown_rank) {
        if (!is_tensor(value.ptr())) throw nb::type_error("create_variable: expected an ember.Tensor");
        TensorImpl* t = impl_of(value.ptr());
        if (t->is_symbolic())
          throw nb::type_error(
              "create_variable: the initial value must be a concrete tensor, not a symbolic one");
        if (!shape && !unknown_rank)
          return VariableHandle{ResourceManager::global().create_variable(name, TensorRef(t))};
        Shape declared = Shape::unknown_rank();
        if (!unknown_rank) {
          auto dims = Shape::from_dims(*shape, /*allow_unknown=*/true);
          if (!dims.ok()) throw_status(dims.status().with_prefix("create_variable: shape: "));
          declared = *dims;
        }
        auto created = ResourceManager::global().create_variable(name, TensorRef(t), declared);
        if (!created.ok()) throw_status(created.status());
        return VariableHandle{std::move(created).value()};
      },
      nb::arg("value"), nb::arg("name"), nb::arg("shape") = nb::none(), nb::arg("unknown_rank") = false);
}

}  // namespace ember::python
