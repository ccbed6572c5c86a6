// The registry checks itself: every op is complete (style.md rule 2).
#include "ember/ops/registry.h"

#include <gtest/gtest.h>

#include <string>

#include "ember/kernels/elementwise.h"
#include "ember/ops/graph_ops.h"

namespace ember {
namespace {

TEST(Registry, EveryOpIsComplete) {
  const auto& ops = OpRegistry::global().ops();
  ASSERT_FALSE(ops.empty());
  for (const auto& op : ops) {
    SCOPED_TRACE(op->name);
    EXPECT_FALSE(op->doc.empty()) << "missing doc";
    EXPECT_NE(op->shape_fn, nullptr) << "missing shape function";
    // Only ops that exist for their effects (writes, printing) may have no outputs.
    if (!op->has_flag(kStateful)) {
      EXPECT_FALSE(op->outputs.empty()) << "no outputs declared";
    }
    // Every dtype the signature admits has a kernel: the union of type-variable sets and fixed sets
    // of the dispatch input (or of type var 0 for ops that dispatch on their output).
    DTypeSet dispatch_set = op->type_vars[0];
    if (op->dispatch_input >= 0 && op->dispatch_input < static_cast<int>(op->inputs.size())) {
      const TypeRule& rule = op->inputs[op->dispatch_input].type;
      dispatch_set = rule.type_var >= 0 ? op->type_vars[rule.type_var] : rule.allowed;
    }
    EXPECT_NE(dispatch_set, 0u) << "no dtypes declared";
    for (int d = 0; d < kNumDTypes; ++d) {
      if (dispatch_set & (1u << d)) {
        EXPECT_NE(op->kernels[d], nullptr) << "no kernel for " << dtype_name(static_cast<DType>(d));
      }
    }
    for (const ArgDef& in : op->inputs) {
      if (in.type.type_var >= 0) {
        EXPECT_NE(op->type_vars[in.type.type_var], 0u) << in.name;
      }
    }
  }
}

// Every op either has a gradient rule or says it is not differentiable. Variable reads and function calls
// are differentiated by the tape itself (the read is a source; a call gets its callee's gradient function).
TEST(Registry, EveryOpHasAGradientOrIsNotDifferentiable) {
  for (const auto& op : OpRegistry::global().ops()) {
    bool handled_by_tape = op->has_flag(kReadsResource) || calls_functions(*op);
    EXPECT_TRUE(op->grad != nullptr || op->has_flag(kNotDifferentiable) || handled_by_tape)
        << op->name << " has no gradient rule and is not marked kNotDifferentiable";
    EXPECT_FALSE(op->grad != nullptr && op->has_flag(kNotDifferentiable)) << op->name;
  }
}

// Every op says how pfor batches it: a shared kind, a custom rule (pfor.py checks it has one) or an
// explicit fallback to the jacobian's loop.
TEST(Registry, EveryOpDeclaresHowItBatches) {
  for (const auto& op : OpRegistry::global().ops()) {
    EXPECT_NE(op->batching, BatchingRule::kUndeclared) << op->name << " declares no batching rule";
    // The shared kinds call the op with its inputs alone: an op with attributes needs its own rule.
    if (op->batching == BatchingRule::kElementwise || op->batching == BatchingRule::kBroadcasting) {
      EXPECT_TRUE(op->attrs.empty()) << op->name;
    }
  }
}

// Each row of kernels/elementwise_ops.h became an op with the row's properties.
TEST(Registry, ElementwiseRowsMatchTheirOps) {
  auto check = [](const kernels::ElementwiseInfo& info, int index, bool unary) {
    SCOPED_TRACE(info.op_name);
    const OpDef* op = OpRegistry::global().find(info.op_name);
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->api_name, info.api_name);
    EXPECT_EQ(unary ? op->tile_unary : op->tile_binary, index);
    // ops/strings_array.cc adds string kernels to some rows' ops (Equal, NotEqual, Add), outside the loops.
    EXPECT_EQ(op->type_vars[0] & ~kStringType, info.types);
    EXPECT_EQ(op->batching, unary ? BatchingRule::kElementwise : BatchingRule::kBroadcasting);
    // A predicate's output is bool: nothing flows back through it.
    if (info.returns_bool) {
      EXPECT_TRUE(op->has_flag(kNotDifferentiable));
    }
    for (int d = 0; d < kNumDTypes; ++d) {
      if (static_cast<DType>(d) == DType::kString) continue;
      bool declared = (info.types >> d) & 1;
      bool has_loop = unary ? kernels::elementwise_tables().unary[index][d] != nullptr
                            : kernels::elementwise_tables().binary[index][d].vv != nullptr;
      EXPECT_EQ(declared, has_loop) << dtype_name(static_cast<DType>(d));
    }
  };
  for (int i = 0; i < static_cast<int>(kernels::UnaryOp::kCount); ++i) check(kernels::kUnaryInfo[i], i, true);
  for (int i = 0; i < static_cast<int>(kernels::BinaryOp::kCount); ++i)
    check(kernels::kBinaryInfo[i], i, false);
}

// The global registry cannot hold a duplicate (registering one aborts before any test runs), so the check
// itself is tested on a private registry.
TEST(RegistryDeathTest, RegisteringANameTwiceAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  OpRegistry registry;
  OpDef def;
  def.name = "Twice";
  const OpDef& first = registry.add(def);
  EXPECT_EQ(registry.find("Twice"), &first);
  EXPECT_DEATH(registry.add(def), "op Twice registered twice");
}

TEST(Registry, EveryOpIsFoundUnderItsName) {
  // A second op of the same name would shadow the first in the lookup table (or the other way round).
  for (const auto& op : OpRegistry::global().ops()) EXPECT_EQ(OpRegistry::global().find(op->name), op.get());
}

}  // namespace
}  // namespace ember
