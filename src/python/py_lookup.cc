// ember._C.LookupTableHandle: a Python tf.lookup table's strong reference to its LookupTable
// (core/lookup_table.h), as VariableHandle is a variable's. The table ops name the table by `id`.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "ember/core/lookup_table.h"
#include "python/py_status.h"

namespace nb = nanobind;

namespace ember::python {

struct LookupTableHandle {
  std::shared_ptr<LookupTable> table;
};

void bind_lookup_tables(nb::module_& m) {
  nb::class_<LookupTableHandle>(m, "LookupTableHandle")
      .def_prop_ro("id", [](const LookupTableHandle& h) { return h.table->id(); })
      .def_prop_ro("name", [](const LookupTableHandle& h) { return h.table->name(); })
      .def_prop_ro("key_dtype",
                   [](const LookupTableHandle& h) { return static_cast<int>(h.table->key_dtype()); })
      .def_prop_ro("value_dtype",
                   [](const LookupTableHandle& h) { return static_cast<int>(h.table->value_dtype()); })
      .def_prop_ro("is_mutable", [](const LookupTableHandle& h) { return h.table->is_mutable(); })
      .def_prop_ro("initialized", [](const LookupTableHandle& h) { return h.table->initialized(); });
  // Ids from here up are tables' (Note [Table ids]): what tells a table apart from a variable in an id.
  m.attr("FIRST_LOOKUP_TABLE_ID") = kFirstTableId;
  m.def(
      "create_lookup_table",
      [](const std::string& name, int key_dtype, int value_dtype, bool is_mutable) {
        if (key_dtype < 0 || key_dtype >= kNumDTypes || value_dtype < 0 || value_dtype >= kNumDTypes)
          throw nb::value_error("create_lookup_table: dtype out of range");
        auto table = LookupTableRegistry::global().create(name, static_cast<DType>(key_dtype),
                                                          static_cast<DType>(value_dtype), is_mutable);
        if (!table.ok()) throw_status(table.status());
        return LookupTableHandle{std::move(table).value()};
      },
      nb::arg("name"), nb::arg("key_dtype"), nb::arg("value_dtype"), nb::arg("is_mutable"),
      "A new lookup table (a HashTable, or a MutableHashTable when is_mutable) owned by the returned "
      "handle.");
}

}  // namespace ember::python
