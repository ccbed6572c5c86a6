// The global op registry and a fluent builder used by the declarations in ops/<family>.cc.
#pragma once

#include <memory>
#include <string_view>
#include <unordered_map>

#include "ember/ops/op_def.h"

namespace ember {

class OpRegistry {
 public:
  /// The registry with every built-in op, populated on first use.
  static OpRegistry& global();

  /// Adds a declaration; a duplicate name is an ember bug and aborts.
  const OpDef& add(OpDef def);
  const OpDef* find(std::string_view name) const;
  std::span<const std::unique_ptr<OpDef>> ops() const { return ops_; }

 private:
  std::vector<std::unique_ptr<OpDef>> ops_;
  std::unordered_map<std::string, OpDef*> by_name_;
};

/// Looks an op up by name; aborts if absent (for ember's own code, where the name is a literal).
const OpDef& op_def(std::string_view name);

class OpBuilder {
 public:
  explicit OpBuilder(std::string name) { def_.name = std::move(name); }

  OpBuilder& doc(std::string text) { return def_.doc = std::move(text), *this; }
  /// An input of type variable `var` (0 = T, 1 = U).
  OpBuilder& input(std::string name, int var = 0) {
    def_.inputs.push_back({std::move(name), TypeRule{static_cast<int8_t>(var), 0}});
    return *this;
  }
  /// A list of inputs of type variable `var` (TensorFlow's `values: N * T`), with the attribute "N"
  /// implied; fixed inputs may follow it (Note [Variadic inputs]). An op without this declaration that is
  /// flagged kVariadicInput repeats its last input.
  OpBuilder& input_list(std::string name, int var = 0) {
    def_.variadic_input = static_cast<int>(def_.inputs.size());
    def_.flags |= kVariadicInput;
    return input(std::move(name), var);
  }
  /// Two lists of one length N (kPairedLists): `first` of the fixed dtypes `allowed`, then `second` of type
  /// variable `var` (TensorFlow's DynamicStitch(indices: N * int32, data: N * T)).
  OpBuilder& input_list_pair(std::string first, DTypeSet allowed, std::string second, int var = 0) {
    def_.variadic_input = static_cast<int>(def_.inputs.size());
    def_.flags |= kVariadicInput | kPairedLists;
    input_fixed(std::move(first), allowed);
    return input(std::move(second), var);
  }
  OpBuilder& input_fixed(std::string name, DTypeSet allowed) {
    def_.inputs.push_back({std::move(name), TypeRule{-1, allowed}});
    return *this;
  }
  /// A shape-like int32/int64 operand whose value the shape function reads (ArgDef::shape_like).
  OpBuilder& input_shape_like(std::string name) {
    def_.inputs.push_back({std::move(name), TypeRule{-1, kIndexTypes}, /*shape_like=*/true});
    return *this;
  }
  OpBuilder& output(std::string name) { return def_.outputs.push_back(std::move(name)), *this; }
  OpBuilder& type_var(DTypeSet allowed, int var = 0) { return def_.type_vars[var] = allowed, *this; }
  OpBuilder& attr(std::string name, AttrType type) {
    def_.attrs.push_back({std::move(name), type, false, {}});
    return *this;
  }
  OpBuilder& attr(std::string name, AttrType type, AttrValue default_value) {
    def_.attrs.push_back({std::move(name), type, true, std::move(default_value)});
    return *this;
  }
  OpBuilder& flags(uint32_t f) { return def_.flags |= f, *this; }
  OpBuilder& grad(GradFn fn) { return def_.grad = fn, *this; }
  OpBuilder& shape(ShapeFn fn) { return def_.shape_fn = fn, *this; }
  OpBuilder& prepare(PrepareFn fn) { return def_.prepare = fn, *this; }
  OpBuilder& dispatch_on_output() { return def_.dispatch_input = -1, *this; }
  OpBuilder& dispatch_on_input(int i) { return def_.dispatch_input = i, *this; }
  /// The kernels::UnaryOp / kernels::BinaryOp (as an int) that computes this op tile by tile.
  OpBuilder& tile_unary(int op) { return def_.tile_unary = static_cast<int16_t>(op), *this; }
  OpBuilder& tile_binary(int op) { return def_.tile_binary = static_cast<int16_t>(op), *this; }
  OpBuilder& batching(BatchingRule rule) { return def_.batching = rule, *this; }
  OpBuilder& api_name(std::string name) { return def_.api_name = std::move(name), *this; }
  OpBuilder& kernel(DType d, KernelFn fn) { return def_.kernels[static_cast<int>(d)] = fn, *this; }
  /// The same kernel function for every dtype in `set` (it switches on dtype itself).
  OpBuilder& kernel(DTypeSet set, KernelFn fn) {
    for (int i = 0; i < kNumDTypes; ++i)
      if (set & (1u << i)) def_.kernels[i] = fn;
    return *this;
  }
  const OpDef& done(OpRegistry& registry) { return registry.add(std::move(def_)); }

 private:
  OpDef def_;
};

}  // namespace ember
