#include "ember/ops/registry.h"

#include <cstdio>
#include <cstdlib>

#include "ember/ops/families.h"

namespace ember {

int OpDef::attr_index(std::string_view attr_name) const {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == attr_name) return static_cast<int>(i);
  return -1;
}

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry;
    register_all_ops(*r);
    return r;
  }();
  return *registry;
}

const OpDef& OpRegistry::add(OpDef def) {
  if (by_name_.count(def.name)) {
    std::fprintf(stderr, "ember: op %s registered twice\n", def.name.c_str());
    std::abort();
  }
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
