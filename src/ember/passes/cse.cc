// Common-subexpression elimination: a stateless node with the same op, inputs (sorted for commutative
// ops), attributes and control inputs as an earlier node is replaced by it; so is a variable read. Constants
// with equal values merge too, which is what lets the next round of CSE see through them.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "ember/passes/attr_hash.h"
#include "ember/passes/pass.h"

namespace ember::passes {
namespace {
uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull + (h >> 29); }

// Operands in a canonical order where swapping them gives the same bits: Add and Mul (IEEE addition and
// multiplication commute exactly); not Maximum/Minimum, whose signed zeros follow the order.
SmallVector<ValueRef, 4> canonical_inputs(const Node& node) {
  SmallVector<ValueRef, 4> inputs = node.inputs;
  const std::string& op = node.op->name;
  const bool swaps_exactly = op == "Add" || op == "AddV2" || op == "Mul";
  if (swaps_exactly && inputs.size() == 2 &&
      (inputs[1].node < inputs[0].node ||
       (inputs[1].node == inputs[0].node && inputs[1].output < inputs[0].output)))
    std::swap(inputs[0], inputs[1]);
  return inputs;
}

uint64_t hash_bytes(const void* data, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
}  // namespace

bool tensors_equal(const TensorImpl& a, const TensorImpl& b) {
  if (&a == &b) return true;
  if (a.is_symbolic() || b.is_symbolic()) return false;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::kString)  // compare the strings, not the std::string objects
    return std::equal(a.data<std::string>(), a.data<std::string>() + a.num_elements(), b.data<std::string>());
  return std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

uint64_t hash_attrs(const AttrList& attrs) {
  uint64_t h = attrs.size();
  for (const AttrValue& v : attrs) {
    h = mix(h, v.index());
    std::visit(
        [&]<typename T>(const T& x) {
          if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, bool>) {
            h = mix(h, static_cast<uint64_t>(x));
          } else if constexpr (std::is_same_v<T, double>) {
            h = mix(h, hash_bytes(&x, sizeof x));
          } else if constexpr (std::is_same_v<T, DType>) {
            h = mix(h, static_cast<uint64_t>(x));
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            h = mix(h, hash_bytes(x.data(), x.size() * sizeof(int64_t)));
          } else if constexpr (std::is_same_v<T, std::string>) {
            h = mix(h, std::hash<std::string>{}(x));
          } else if constexpr (std::is_same_v<T, std::vector<DType>>) {
            for (DType d : x) h = mix(h, static_cast<uint64_t>(d));
          } else if constexpr (std::is_same_v<T, std::vector<Shape>>) {
            for (const Shape& s : x) {
              h = mix(h, static_cast<uint64_t>(s.rank_known() ? s.rank() : -1));
              for (int64_t d : s.dims()) h = mix(h, static_cast<uint64_t>(d));
            }
          } else {
            const TensorImpl* t = x.get();
            if (t == nullptr || t->is_symbolic()) {
              h = mix(h, reinterpret_cast<uintptr_t>(t));
            } else {
              h = mix(h, static_cast<uint64_t>(t->dtype()));
              if (t->dtype() == DType::kString) {
                for (int64_t i = 0; i < std::min<int64_t>(t->num_elements(), 8); ++i)
                  h = mix(h, std::hash<std::string>{}(t->data<std::string>()[i]));
              } else {
                h = mix(h, hash_bytes(t->raw_data(), std::min<size_t>(t->nbytes(), 256)));
              }
            }
          }
        },
        v);
  }
  return h;
}

bool attrs_equal(const AttrList& a, const AttrList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].index() != b[i].index()) return false;
    if (const auto* ta = std::get_if<TensorRef>(&a[i])) {
      const TensorRef& tb = std::get<TensorRef>(b[i]);
      if (ta->get() == nullptr || tb.get() == nullptr) {
        if (ta->get() != tb.get()) return false;
      } else if (!tensors_equal(**ta, *tb)) {
        return false;
      }
    } else if (!std::visit(
                   [&]<typename T>(const T& x) {
                     if constexpr (std::is_same_v<T, TensorRef>)
                       return false;
                     else
                       return x == std::get<T>(b[i]);
                   },
                   a[i])) {
      return false;
    }
  }
  return true;
}

StatusOr<int> eliminate_common_subgraphs(FunctionGraph& fn) {
  GraphEditor editor(fn);
  Graph& g = fn.graph;
  std::unordered_multimap<uint64_t, int32_t> seen;
  int merged = 0;
  for (int32_t n = 0; n < g.num_nodes(); ++n) {
    Node& node = g.mutable_node(n);
    for (ValueRef& in : node.inputs) in = editor.resolve(in);
    // Reads of one variable with the same control inputs (the same last write before them) see the same
    // value, so they merge too; every other stateful op stays apart.
    const bool pure_read = node.op->has_flag(kReadsResource) && !node.op->has_flag(kWritesResource);
    if (node.op->has_flag(kStateful) && !pure_read) continue;
    const SmallVector<ValueRef, 4> key_inputs = canonical_inputs(node);
    uint64_t h = mix(static_cast<uint64_t>(node.op->index), hash_attrs(node.attrs));
    for (ValueRef in : key_inputs) h = mix(h, (static_cast<uint64_t>(in.node) << 16) ^ in.output);
    for (int32_t c : node.control_inputs) h = mix(h, static_cast<uint64_t>(c) * 31);
    int32_t match = -1;
    auto [begin, end] = seen.equal_range(h);
    for (auto it = begin; it != end && match < 0; ++it) {
      const Node& other = g.node(it->second);
      const SmallVector<ValueRef, 4> other_inputs = canonical_inputs(other);
      if (other.op == node.op && other_inputs.size() == key_inputs.size() &&
          std::equal(other_inputs.begin(), other_inputs.end(), key_inputs.begin()) &&
          other.control_inputs == node.control_inputs && other.outputs.size() == node.outputs.size() &&
          attrs_equal(other.attrs, node.attrs))
        match = it->second;
    }
    if (match < 0) {
      seen.emplace(h, n);
      continue;
    }
    editor.replace_node(n, match);
    ++merged;
  }
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return merged;
}

}  // namespace ember::passes
