// Element-wise kernels: inner loops compiled once per ISA (kernels/isa/elementwise_isa.cc, chosen at run
// time by CPU features) and a broadcasting driver that collapses dimensions and splits rows over the
// intra-op pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "ember/core/dtype.h"
#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"
#include "ember/kernels/elementwise_ops.h"

namespace ember::kernels {

// The enums and per-op properties below are expansions of the rows in elementwise_ops.h.
enum class UnaryOp : uint8_t {
#define EMBER_ENUM(Enum, ...) Enum,
  EMBER_UNARY_OPS(EMBER_ENUM) kCount
};
enum class BinaryOp : uint8_t { EMBER_BINARY_OPS(EMBER_ENUM) kCount };
#undef EMBER_ENUM

enum class ElementwiseResult : uint8_t { kSame, kBool };

/// What one row of elementwise_ops.h says about the kernel.
struct ElementwiseInfo {
  const char* op_name;   // TensorFlow's op type
  const char* api_name;  // the façade / Python name
  DTypeSet types;        // dtypes the loops are instantiated for
  bool returns_bool;     // a predicate: the output is bool whatever the input
  int64_t cost;          // rough cycles per element
};

#define EMBER_INFO(Enum, Op, api, Math, Types, Result, Cost, ...) \
  ElementwiseInfo{#Op, #api, Types, ElementwiseResult::k##Result == ElementwiseResult::kBool, Cost},
inline constexpr ElementwiseInfo kUnaryInfo[] = {EMBER_UNARY_OPS(EMBER_INFO)};
inline constexpr ElementwiseInfo kBinaryInfo[] = {EMBER_BINARY_OPS(EMBER_INFO)};
#undef EMBER_INFO
static_assert(std::size(kUnaryInfo) == static_cast<size_t>(UnaryOp::kCount));
static_assert(std::size(kBinaryInfo) == static_cast<size_t>(BinaryOp::kCount));

constexpr const ElementwiseInfo& info(UnaryOp op) { return kUnaryInfo[static_cast<int>(op)]; }
constexpr const ElementwiseInfo& info(BinaryOp op) { return kBinaryInfo[static_cast<int>(op)]; }
constexpr bool returns_bool(UnaryOp op) { return info(op).returns_bool; }
constexpr bool returns_bool(BinaryOp op) { return info(op).returns_bool; }
/// Rough cycles per element (transcendentals cost more), for deciding when to go parallel.
constexpr int64_t unary_cost(UnaryOp op) { return info(op).cost; }
constexpr int64_t binary_cost(BinaryOp op) { return info(op).cost; }

/// out[i] = f(in[i]) for n contiguous elements.
using UnaryLoop = void (*)(const void* in, void* out, int64_t n);
/// out[i] = f(a[i*sa], b[i*sb]) where sa, sb are 0 or 1; the three variants avoid the multiply.
using BinaryLoop = void (*)(const void* a, const void* b, void* out, int64_t n);
struct BinaryLoops {
  BinaryLoop vv = nullptr;  // both contiguous
  BinaryLoop sv = nullptr;  // a is a scalar
  BinaryLoop vs = nullptr;  // b is a scalar
};

struct ElementwiseTables {
  UnaryLoop unary[static_cast<int>(UnaryOp::kCount)][kNumDTypes] = {};
  BinaryLoops binary[static_cast<int>(BinaryOp::kCount)][kNumDTypes] = {};
};

/// The tables for the best ISA this CPU supports.
const ElementwiseTables& elementwise_tables();
/// "avx512", "avx2" or "baseline".
const char* elementwise_isa();

/// Runs a unary op over a whole tensor (out has in's shape, out dtype per op).
Status run_unary(UnaryOp op, const TensorImpl& in, TensorImpl& out);
/// Runs a binary op with NumPy broadcasting; out already has the broadcast shape.
Status run_binary(BinaryOp op, const TensorImpl& a, const TensorImpl& b, TensorImpl& out);

}  // namespace ember::kernels
