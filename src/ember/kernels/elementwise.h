// Element-wise kernels: inner loops compiled once per ISA (kernels/isa/elementwise_isa.cc, chosen at run
// time by CPU features) and a broadcasting driver that collapses dimensions and splits rows over the
// intra-op pool.
#pragma once

#include <cstdint>

#include "ember/core/dtype.h"
#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::kernels {

enum class UnaryOp : uint8_t {
  kNeg,
  kAbs,
  kSign,
  kExp,
  kLog,
  kLog1p,
  kExpm1,
  kSqrt,
  kRsqrt,
  kSquare,
  kReciprocal,
  kSin,
  kCos,
  kTanh,
  kSigmoid,
  kRelu,
  kRelu6,
  kElu,
  kSoftplus,
  kErf,
  kFloor,
  kCeil,
  kRound,
  kLogicalNot,
  kIsNan,
  kIsFinite,
  kCount
};

enum class BinaryOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kFloorMod,
  kPow,
  kMax,
  kMin,
  kSquaredDiff,
  kEqual,
  kNotEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kLogicalAnd,
  kLogicalOr,
  kCount
};

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

/// Rough cycles per element of a unary op (transcendentals cost more), for deciding when to go parallel.
int64_t unary_cost(UnaryOp op);

/// Runs a unary op over a whole tensor (out has in's shape, out dtype per op).
Status run_unary(UnaryOp op, const TensorImpl& in, TensorImpl& out);
/// Runs a binary op with NumPy broadcasting; out already has the broadcast shape.
Status run_binary(BinaryOp op, const TensorImpl& a, const TensorImpl& b, TensorImpl& out);

}  // namespace ember::kernels
