#include "ember/ops/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "ember/ops/families.h"
#include "ember/ops/py_func.h"  // registered beside the families: its header declares the hook too

namespace ember {

int OpDef::attr_index(std::string_view attr_name) const {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == attr_name) return static_cast<int>(i);
  return -1;
}

// Note [Variadic inputs]
// A variadic op's actual inputs are the declared inputs before the list, the list's elements, then the
// declared inputs after it: ConcatV2(v0, v1, v2, axis) instantiates values x3 then axis. Everything that
// walks actual inputs (dtype checks, shape-like operands, the Python binding, GraphDef's "N") maps them to
// declarations through declared_index, so the list need not be last. A rule that reads "the fixed input
// after the list" finds it counting from the end (ConcatV2's axis is input n - 1). An op with kPairedLists
// has two declared inputs, both lists of one length (TensorFlow's DynamicStitch(indices: N * int32,
// data: N * T)): its n actual inputs are the first list's n / 2, then the second's.
size_t OpDef::declared_index(size_t k, size_t n) const {
  if (variadic_input < 0) return std::min(k, inputs.size() - 1);  // extra inputs: check_inputs says so
  const size_t v = static_cast<size_t>(variadic_input);
  if (has_flag(kPairedLists)) return k < n / 2 ? v : v + 1;
  const size_t after = inputs.size() - 1 - v;
  if (k < v) return k;
  if (k + after >= n) return inputs.size() - (n - k);
  return v;
}

size_t OpDef::num_variadic(size_t n) const {
  if (variadic_input < 0) return 0;
  if (has_flag(kPairedLists)) return n / 2;
  const size_t fixed = inputs.size() - 1;
  return n > fixed ? n - fixed : 0;
}

// The collective ops live in the distribute layer (distribute/collective_ops.cc), beside the communicator
// their kernels run on; declared here only, so that no header of this layer names that one.
void register_collective_ops(OpRegistry& r);
// The special functions (ops/special_functions.cc, the one file that includes Boost.Math), declared here
// rather than in families.h, which 28 op files include.
void register_special_function_ops(OpRegistry& r);
// The CTC loss and decoders (ops/ctc.cc), declared here for the same reason.
void register_ctc_ops(OpRegistry& r);

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry;
    register_all_ops(*r);
    register_collective_ops(*r);
    register_special_function_ops(*r);
    register_ctc_ops(*r);
    register_py_func_ops(*r);
    return r;
  }();
  return *registry;
}

const OpDef& OpRegistry::add(OpDef def) {
  if (by_name_.count(def.name)) {
    std::fprintf(stderr, "ember: op %s registered twice\n", def.name.c_str());
    std::abort();
  }
  if (def.has_flag(kVariadicInput) && def.variadic_input < 0 && !def.inputs.empty())
    def.variadic_input = static_cast<int>(def.inputs.size()) - 1;
  auto owned = std::make_unique<OpDef>(std::move(def));
  owned->index = static_cast<int>(ops_.size());
  OpDef* p = owned.get();
  by_name_.emplace(p->name, p);
  ops_.push_back(std::move(owned));
  return *p;
}

const OpDef* OpRegistry::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

const OpDef& op_def(std::string_view name) {
  const OpDef* def = OpRegistry::global().find(name);
  if (def == nullptr) {
    std::fprintf(stderr, "ember: no op named %.*s\n", static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return *def;
}

}  // namespace ember
