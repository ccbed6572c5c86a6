#include "ember/graph/rebind.h"

#include <string>
#include <variant>
#include <vector>

namespace ember {
namespace {

class Rebinder {
 public:
  explicit Rebinder(const std::unordered_map<int64_t, int64_t>& ids) : ids_(ids) {}

  // The rebound copy, or null when `fn` (and what it calls) names none of the ids.
  StatusOr<std::shared_ptr<FunctionGraph>> rebind(const FunctionGraph& fn) {
    std::shared_ptr<FunctionGraph> out;
    auto copy = [&]() -> FunctionGraph& {
      if (out == nullptr) out = std::make_shared<FunctionGraph>(fn);
      return *out;
    };
    const Graph& g = fn.graph;
    for (int32_t i = 0; i < g.num_nodes(); ++i) {
      const Node& node = g.node(i);
      if ((node.op->has_flag(kReadsResource) || node.op->has_flag(kWritesResource)) && !node.attrs.empty()) {
        if (const auto* id = std::get_if<int64_t>(&node.attrs[0])) {
          auto it = ids_.find(*id);
          if (it != ids_.end()) copy().graph.mutable_node(i).attrs[0] = it->second;
        }
      }
      for (size_t a = 0; a < node.attrs.size(); ++a) {
        const auto* callee_name = std::get_if<std::string>(&node.attrs[a]);
        if (callee_name == nullptr) continue;
        auto renamed = callee(*callee_name);
        if (!renamed.ok()) return renamed.status();
        if (!renamed->empty()) copy().graph.mutable_node(i).attrs[a] = *renamed;
      }
    }
    if (out != nullptr) {
      if (!fn.custom_gradient_regions.empty()) {
        return make_error(Code::kFailedPrecondition, "function '", fn.name,
                          "' has a custom gradient, whose replay names the variables it was traced with; it "
                          "cannot be rebound to other variables");
      }
      for (const auto& made : made_) out->callees.push_back(made);
    }
    return out;
  }

 private:
  // The name of `name`'s rebound copy; empty when it is not a library function or needs no rebinding.
  StatusOr<std::string> callee(const std::string& name) {
    auto seen = renamed_.find(name);
    if (seen != renamed_.end()) return seen->second;
    renamed_[name] = "";  // a call cycle, should a library hold one, ends here
    std::shared_ptr<const FunctionGraph> fn = FunctionLibrary::global().find(name);
    if (fn == nullptr) return std::string();
    auto rebound = rebind(*fn);
    if (!rebound.ok()) return rebound.status();
    if (*rebound == nullptr) return std::string();
    std::shared_ptr<const FunctionGraph> made = std::move(rebound).value();
    std::string new_name = FunctionLibrary::global().add(made);
    made_.push_back(made);
    renamed_[name] = new_name;
    return new_name;
  }

  const std::unordered_map<int64_t, int64_t>& ids_;
  std::unordered_map<std::string, std::string> renamed_;
  std::vector<std::shared_ptr<const FunctionGraph>> made_;
};

}  // namespace

StatusOr<std::shared_ptr<FunctionGraph>> rebind_variables(const FunctionGraph& fn,
                                                          const std::unordered_map<int64_t, int64_t>& ids) {
  Rebinder rebinder(ids);
  auto out = rebinder.rebind(fn);
  if (!out.ok()) return out.status();
  if (*out == nullptr) return std::make_shared<FunctionGraph>(fn);
  return out;
}

}  // namespace ember
