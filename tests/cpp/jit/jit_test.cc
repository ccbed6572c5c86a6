// Native fused kernels (jit/) against the tile interpreter: every op of the fusion table in every dtype it
// fuses, broadcasting layouts (scalars, patterns, gathers), several outputs, DAGs, float sin/cos blocks on
// both sides of the reduction bound, and random programs. The JIT runs in its synchronous mode, so the
// native kernel is in place when the prepared program first runs; the run counters prove it ran.
#include "ember/jit/jit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ember/core/half.h"
#include "ember/core/tensor_impl.h"
#include "ember/ember.h"
#include "ember/jit/native_loop.h"
#include "ember/kernels/fused_elementwise.h"

namespace ember::jit {
namespace {

using kernels::BinaryOp;
using kernels::FusedProgram;
using kernels::UnaryOp;

class JitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    install();
    previous_ = mode();
    set_mode(Mode::kSync);
  }
  void TearDown() override { set_mode(previous_); }
  Mode previous_ = Mode::kAsync;
};

TensorRef random_tensor(DType dtype, const Shape& shape, std::mt19937& gen, double lo = -3, double hi = 3) {
  TensorRef t = TensorImpl::allocate(dtype, shape).value();
  const int64_t n = shape.num_elements();
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int> byte(0, 255);
  char* data = static_cast<char*>(t->mutable_raw_data());
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kFloat32:
        reinterpret_cast<float*>(data)[i] = static_cast<float>(real(gen));
        break;
      case DType::kFloat64:
        reinterpret_cast<double*>(data)[i] = real(gen);
        break;
      case DType::kFloat16:
        reinterpret_cast<float16*>(data)[i] = float16(static_cast<float>(real(gen)));
        break;
      case DType::kBFloat16:
        reinterpret_cast<bfloat16*>(data)[i] = bfloat16(static_cast<float>(real(gen)));
        break;
      case DType::kBool:
        reinterpret_cast<bool*>(data)[i] = byte(gen) & 1;
        break;
      default:
        for (size_t b = 0; b < dtype_size(dtype); ++b)
          data[i * dtype_size(dtype) + b] = static_cast<char>(byte(gen));
    }
  }
  return t;
}

// Distance in units in the last place between two floats of the dtype; 0 for equal bits or two NaNs.
int64_t ulp_distance(DType dtype, const char* a, const char* b) {
  auto order = [](int64_t bits, int width) {  // maps floats' bits to a monotonic integer line
    const int64_t sign = int64_t{1} << (width - 1);
    return (bits & sign) ? -(bits & (sign - 1)) : bits;
  };
  switch (dtype) {
    case DType::kFloat32: {
      float x, y;
      std::memcpy(&x, a, 4);
      std::memcpy(&y, b, 4);
      if (std::isnan(x) && std::isnan(y)) return 0;
      if (std::isnan(x) != std::isnan(y)) return INT64_MAX;
      uint32_t bx, by;
      std::memcpy(&bx, a, 4);
      std::memcpy(&by, b, 4);
      return std::llabs(order(bx, 32) - order(by, 32));
    }
    case DType::kFloat64: {
      double x, y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      if (std::isnan(x) && std::isnan(y)) return 0;
      if (std::isnan(x) != std::isnan(y)) return INT64_MAX;
      uint64_t bx, by;
      std::memcpy(&bx, a, 8);
      std::memcpy(&by, b, 8);
      const int64_t ox =
          (bx >> 63) ? -static_cast<int64_t>(bx & ~(uint64_t{1} << 63)) : static_cast<int64_t>(bx);
      const int64_t oy =
          (by >> 63) ? -static_cast<int64_t>(by & ~(uint64_t{1} << 63)) : static_cast<int64_t>(by);
      return ox > oy ? ox - oy : oy - ox;
    }
    case DType::kFloat16:
    case DType::kBFloat16: {
      uint16_t bx, by;
      std::memcpy(&bx, a, 2);
      std::memcpy(&by, b, 2);
      auto is_nan = [&](uint16_t bits) {
        return dtype == DType::kFloat16 ? (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff)
                                        : (bits & 0x7f80) == 0x7f80 && (bits & 0x7f);
      };
      if (is_nan(bx) && is_nan(by)) return 0;
      if (is_nan(bx) != is_nan(by)) return INT64_MAX;
      return std::llabs(order(bx, 16) - order(by, 16));
    }
    default:
      return std::memcmp(a, b, dtype_size(dtype)) == 0 ? 0 : INT64_MAX;
  }
}

struct Outcome {
  int64_t max_ulp = 0;
  int64_t mismatches = 0;
  std::string first;
};

// Runs `program` on the interpreter (FusedProgram::run never asks for native code) and prepared (which
// compiles it, synchronously here), and compares every result element.
Outcome compare(const FusedProgram& program, const std::vector<TensorRef>& inputs, const Shape& domain,
                bool expect_native = true) {
  std::vector<const TensorImpl*> in;
  std::vector<Shape> shapes;
  for (const TensorRef& t : inputs) {
    in.push_back(t.get());
    shapes.push_back(t->shape());
  }
  std::vector<TensorRef> interpreted, native;
  std::vector<TensorImpl*> out_i, out_n;
  for (int j = 0; j < program.num_results(); ++j) {
    interpreted.push_back(TensorImpl::allocate(program.dtype(), domain).value());
    native.push_back(TensorImpl::allocate(program.dtype(), domain).value());
    out_i.push_back(interpreted.back().get());
    out_n.push_back(native.back().get());
  }
  Outcome outcome;
  Status s = program.run(in, out_i);
  EXPECT_TRUE(s.ok()) << s.to_string();
  auto prepared = program.prepare(shapes, domain);
  EXPECT_TRUE(prepared.ok()) << prepared.status().to_string();
  if (!prepared.ok()) return outcome;
  const int64_t before = stats().native_runs;
  s = FusedProgram::run_prepared(**prepared, in, out_n);
  EXPECT_TRUE(s.ok()) << s.to_string();
  if (expect_native && domain.num_elements() > 0) {
    EXPECT_EQ(stats().native_runs, before + 1) << "the native kernel did not run";
  }
  const size_t size = dtype_size(program.dtype());
  for (int j = 0; j < program.num_results(); ++j) {
    const char* a = static_cast<const char*>(interpreted[j]->raw_data());
    const char* b = static_cast<const char*>(native[j]->raw_data());
    for (int64_t i = 0; i < domain.num_elements(); ++i) {
      int64_t d = ulp_distance(program.dtype(), a + i * size, b + i * size);
      if (d > 0) {
        ++outcome.mismatches;
        if (outcome.first.empty())
          outcome.first = "result " + std::to_string(j) + " element " + std::to_string(i);
      }
      outcome.max_ulp = std::max(outcome.max_ulp, d);
    }
  }
  return outcome;
}

constexpr DType kAllDTypes[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64,
                                DType::kInt8,    DType::kInt16,    DType::kInt32,   DType::kInt64,
                                DType::kUInt8,   DType::kBool};

// The same functors, compiled by clang with the contractions GCC makes in the interpreter's loops: with a
// GCC-built interpreter, bit-identical results. A clang-built interpreter (the ASan job) contracts a few
// double polynomials differently (log, softplus, digamma: 1 ulp in rare elements), so there one ulp is
// allowed per op, and a few where random programs chain such ops.
#if defined(__GNUC__) && !defined(__clang__)
constexpr bool kExact = true;
#else
constexpr bool kExact = false;
#endif
void expect_close(const Outcome& o, const std::string& what, int64_t ulps = 1) {
  if (kExact) {
    EXPECT_EQ(o.mismatches, 0) << what << ": up to " << o.max_ulp << " ulp apart, the first at " << o.first;
  } else {
    EXPECT_LE(o.max_ulp, ulps) << what << ": " << o.mismatches << " elements differ, the first at "
                               << o.first;
  }
}

TEST_F(JitTest, EveryUnaryOpInEveryDType) {
  ASSERT_TRUE(available());
  std::mt19937 gen(1);
  int programs = 0;
  for (int op = 0; op < static_cast<int>(UnaryOp::kCount); ++op) {
    for (DType dtype : kAllDTypes) {
      if (!kernels::fusible_unary(static_cast<UnaryOp>(op), dtype)) continue;
      // A full input and a chain through a second op; 3000 elements cross tiles and sin/cos blocks.
      std::vector<int64_t> code;
      kernels::append_unary(code, 1, static_cast<UnaryOp>(op), 0);
      auto program = FusedProgram::decode(code, 1, std::vector<int64_t>{1}, dtype).value();
      Shape domain({3000});
      auto o = compare(program, {random_tensor(dtype, domain, gen)}, domain);
      expect_close(o, std::string(kernels::info(static_cast<UnaryOp>(op)).op_name) + " " +
                          std::string(dtype_name(dtype)));
      ++programs;
    }
  }
  EXPECT_GT(programs, 100);
}

TEST_F(JitTest, EveryBinaryOpInEveryDTypeWithBroadcasting) {
  std::mt19937 gen(2);
  for (int op = 0; op < static_cast<int>(BinaryOp::kCount); ++op) {
    for (DType dtype : kAllDTypes) {
      if (!kernels::fusible_binary(static_cast<BinaryOp>(op), dtype)) continue;
      std::vector<int64_t> code;
      kernels::append_binary(code, 2, static_cast<BinaryOp>(op), 0, 1);
      auto program = FusedProgram::decode(code, 2, std::vector<int64_t>{2}, dtype).value();
      const std::string name = std::string(kernels::info(static_cast<BinaryOp>(op)).op_name) + " " +
                               std::string(dtype_name(dtype));
      Shape domain({40, 75});
      // full x full, full x scalar, scalar x full, full x row (pattern), column x full (gathered).
      const std::vector<std::pair<Shape, Shape>> layouts = {{domain, domain},
                                                            {domain, Shape({})},
                                                            {Shape({}), domain},
                                                            {domain, Shape({75})},
                                                            {Shape({40, 1}), domain}};
      for (const auto& [sa, sb] : layouts) {
        auto o = compare(program, {random_tensor(dtype, sa, gen), random_tensor(dtype, sb, gen)}, domain);
        // x * log(y) and x * log1p(y): the clang-built interpreter's one ulp of log, times x, rounds to two.
        const bool times_a_log =
            op == static_cast<int>(BinaryOp::kXlogy) || op == static_cast<int>(BinaryOp::kXlog1py);
        expect_close(o, name + " " + sa.to_string() + " x " + sb.to_string(), times_a_log ? 2 : 1);
      }
    }
  }
}

TEST_F(JitTest, SinCosBlocksEitherSideOfTheFloatReductionBound) {
  // Blocks of 64 whose |x| are all below 2^16 take the float reduction, others the double one; a block
  // mixing both must take the double one for all its elements, as the interpreter does.
  std::mt19937 gen(3);
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (UnaryOp op : {UnaryOp::kSin, UnaryOp::kCos}) {
      std::vector<int64_t> code;
      int64_t x2 = kernels::append_binary(code, 2, BinaryOp::kMul, 0, 1);
      int64_t s = kernels::append_unary(code, 2, op, x2);
      kernels::append_binary(code, 2, BinaryOp::kAdd, s, x2);
      auto program = FusedProgram::decode(code, 2, std::vector<int64_t>{x2, s + 1}, dtype).value();
      Shape domain({1000});
      TensorRef x = random_tensor(dtype, domain, gen, -100, 100);
      if (dtype == DType::kFloat32) {
        float* v = static_cast<float*>(x->mutable_raw_data());
        v[70] = 1e6f;  // the second block is far
        v[500] = std::numeric_limits<float>::infinity();
      }
      auto o = compare(program, {x, random_tensor(dtype, Shape({}), gen, 0.5, 2)}, domain);
      expect_close(o, std::string("sin/cos ") + std::string(dtype_name(dtype)));
      EXPECT_EQ(o.mismatches, 0) << "the same reductions should give the same bits";
    }
  }
}

// Random DAGs over several inputs with broadcasting and several results.
TEST_F(JitTest, RandomPrograms) {
  std::mt19937 gen(4);
  const std::vector<UnaryOp> unary = {UnaryOp::kNeg,     UnaryOp::kAbs,   UnaryOp::kExp,    UnaryOp::kTanh,
                                      UnaryOp::kSigmoid, UnaryOp::kSin,   UnaryOp::kSquare, UnaryOp::kRelu,
                                      UnaryOp::kSqrt,    UnaryOp::kLog1p, UnaryOp::kErf,    UnaryOp::kCos};
  const std::vector<BinaryOp> binary = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul,        BinaryOp::kDiv,
                                        BinaryOp::kMax, BinaryOp::kMin, BinaryOp::kSquaredDiff};
  int64_t worst = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const DType dtype = trial % 4 == 0 ? DType::kFloat64 : DType::kFloat32;
    const int num_inputs = 1 + trial % 4;
    std::vector<int64_t> code;
    int64_t values = num_inputs;
    const int length = 3 + trial * 2;
    for (int i = 0; i < length; ++i) {
      std::uniform_int_distribution<int64_t> pick(0, values - 1);
      if (gen() % 3 == 0)
        kernels::append_unary(code, num_inputs, unary[gen() % unary.size()], pick(gen));
      else
        kernels::append_binary(code, num_inputs, binary[gen() % binary.size()], pick(gen), pick(gen));
      ++values;
    }
    std::vector<int64_t> results = {values - 1};
    if (values - 2 >= num_inputs) results.push_back(values - 2);
    auto program = FusedProgram::decode(code, num_inputs, results, dtype).value();
    Shape domain({17, 129});
    std::vector<TensorRef> inputs;
    const Shape shapes[] = {domain, Shape({129}), Shape({}), Shape({17, 1})};
    for (int k = 0; k < num_inputs; ++k) inputs.push_back(random_tensor(dtype, shapes[k], gen, 0.1, 2));
    auto o = compare(program, inputs, domain);
    worst = std::max(worst, o.max_ulp);
    expect_close(o, "random program " + std::to_string(trial), /*ulps=*/4);
  }
}

TEST_F(JitTest, EmptyAndTinyDomains) {
  std::mt19937 gen(5);
  std::vector<int64_t> code;
  kernels::append_binary(code, 2, BinaryOp::kMul, 0, 1);
  auto program = FusedProgram::decode(code, 2, std::vector<int64_t>{2}, DType::kFloat32).value();
  for (int64_t n : {1, 2, 15, 16, 17, 63, 64, 65, 1023, 1024, 1025}) {
    Shape domain({n});
    expect_close(
        compare(program,
                {random_tensor(DType::kFloat32, domain, gen), random_tensor(DType::kFloat32, domain, gen)},
                domain),
        "n=" + std::to_string(n));
  }
}

// A fast loop (runtime/fast_loop.cc) calls a prepared program's native kernel itself, once over the whole
// domain, where that is exactly what a run does: one tile, every input whole or a single element.
TEST_F(JitTest, NativeWholeKernelIsWhatARunDoes) {
  std::mt19937 gen(8);
  std::vector<int64_t> code;
  const int64_t product = kernels::append_binary(code, 2, BinaryOp::kMul, 0, 1);
  kernels::append_binary(code, 2, BinaryOp::kAdd, product, 0);
  auto program = FusedProgram::decode(code, 2, std::vector<int64_t>{3}, DType::kFloat32).value();
  auto whole = [&](const Shape& a, const Shape& b, const Shape& domain) {
    auto prepared = program.prepare(std::vector<Shape>{a, b}, domain).value();
    return FusedProgram::native_whole_kernel(*prepared);
  };
  const Shape domain({4});
  auto prepared = program.prepare(std::vector<Shape>{domain, Shape()}, domain).value();
  kernels::NativeFusedFn kernel = FusedProgram::native_whole_kernel(*prepared);
  ASSERT_NE(kernel, nullptr);
  TensorRef x = random_tensor(DType::kFloat32, domain, gen), y = random_tensor(DType::kFloat32, Shape(), gen);
  TensorRef by_run = TensorImpl::allocate(DType::kFloat32, domain).value();
  TensorRef by_call = TensorImpl::allocate(DType::kFloat32, domain).value();
  std::vector<const TensorImpl*> inputs = {x.get(), y.get()};
  std::vector<TensorImpl*> run_outputs = {by_run.get()};
  ASSERT_TRUE(FusedProgram::run_prepared(*prepared, inputs, run_outputs).ok());
  const void* in[] = {x->raw_data(), y->raw_data()};
  void* out[] = {by_call->mutable_raw_data()};
  kernel(in, out, 4);
  EXPECT_EQ(std::memcmp(by_run->raw_data(), by_call->raw_data(), by_run->nbytes()), 0);

  EXPECT_NE(whole(Shape(), Shape(), Shape()), nullptr);                 // scalars
  EXPECT_EQ(whole(Shape({3, 4}), Shape({4}), Shape({3, 4})), nullptr);  // a row broadcast: a pattern
  EXPECT_EQ(whole(Shape({2048}), Shape(), Shape({2048})), nullptr);     // more than one tile
  set_mode(Mode::kOff);
  EXPECT_EQ(whole(Shape({4}), Shape({4}), Shape({4})), nullptr);  // no kernel asked for
}

// The C++ API's functions run on the same executor as Python's, so their fused groups go native too.
TEST_F(JitTest, CppFunctionsGetNativeKernels) {
  auto f = function([](const Tensor& x, const Tensor& y) { return (x * y + 1.0f) * x - y; });
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}), y = Tensor::from_vector<float>({0.5f, 2}, {2});
  const int64_t before = stats().native_runs;
  Tensor out = f(x, y);
  EXPECT_GT(stats().native_runs, before);
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{1, 8, 7, 34}));
}

TEST_F(JitTest, OffRunsTheInterpreter) {
  set_mode(Mode::kOff);
  std::mt19937 gen(6);
  std::vector<int64_t> code;
  kernels::append_unary(code, 1, UnaryOp::kExp, 0);
  auto program = FusedProgram::decode(code, 1, std::vector<int64_t>{1}, DType::kFloat32).value();
  Shape domain({100});
  const int64_t requested = stats().requested;
  const int64_t native = stats().native_runs;
  compare(program, {random_tensor(DType::kFloat32, domain, gen)}, domain, /*expect_native=*/false);
  EXPECT_EQ(stats().requested, requested);
  EXPECT_EQ(stats().native_runs, native);
}

// A starved compile thread (Note [Queued programs] in jit.cc): while one job waits, a hundred thousand
// bindings of its program are made and dropped. The job must not keep a slot for each (it once held 25 MB
// after this), and the one binding still alive gets its kernel when the thread runs again.
TEST_F(JitTest, AStarvedQueueKeepsOnlyItsLiveBindings) {
  if (!available()) GTEST_SKIP() << "built without LLVM";
  set_mode(Mode::kAsync);
  std::vector<int64_t> code;
  int64_t v = kernels::append_unary(code, 2, UnaryOp::kTanh, 0);
  v = kernels::append_binary(code, 2, BinaryOp::kAtan2, v, 1);
  auto program = FusedProgram::decode(code, 2, std::vector<int64_t>{v}, DType::kFloat32).value();
  std::vector<Shape> shapes{Shape({64}), Shape({64})};
  std::shared_ptr<const kernels::PreparedFusedProgram> kept;
  {
    HoldCompiles hold;
    const int64_t queued_before = stats().queued_bindings;
    kept = program.prepare(shapes, Shape({64})).value();
    for (int i = 0; i < 100000; ++i) (void)program.prepare(shapes, Shape({64})).value();
    EXPECT_LE(stats().queued_bindings - queued_before, 32);
  }
  wait_for_pending();
  std::mt19937 gen(9);
  TensorRef x = random_tensor(DType::kFloat32, Shape({64}), gen),
            y = random_tensor(DType::kFloat32, Shape({64}), gen);
  TensorRef out = TensorImpl::allocate(DType::kFloat32, Shape({64})).value();
  const TensorImpl* inputs[] = {x.get(), y.get()};
  TensorImpl* outputs[] = {out.get()};
  const int64_t native = stats().native_runs;
  ASSERT_TRUE(FusedProgram::run_prepared(*kept, inputs, outputs).ok());
  EXPECT_EQ(stats().native_runs, native + 1);
}

// Programs ending in a reduction (Note [Fused reductions] in fused_elementwise.h): the native kernel writes
// the reduced value of the same chunks as the interpreter and the same loop reduces them, so every output
// and the reduction agree bit for bit (a float sin's blocks included: chunks start where tiles would).
TEST_F(JitTest, ReductionsMatchTheInterpreterBitForBit) {
  ASSERT_TRUE(available());
  std::mt19937 gen(7);
  const std::vector<std::pair<Shape, int>> cases = {{Shape({3000}), 1},    {Shape({7, 5000}), 1},
                                                    {Shape({300, 37}), 1}, {Shape({4, 6, 50}), 2},
                                                    {Shape({2, 1025}), 2}, {Shape({5, 0}), 1}};
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt32}) {
    for (kernels::ReduceOp op : {kernels::ReduceOp::kSum, kernels::ReduceOp::kMean, kernels::ReduceOp::kMax,
                                 kernels::ReduceOp::kMin}) {
      for (const auto& [domain, dims] : cases) {
        for (bool also_result : {false, true}) {
          const std::string what = std::string(dtype_name(dtype)) + " op " +
                                   std::to_string(static_cast<int>(op)) + " " + domain.to_string() +
                                   (also_result ? " (also a result)" : "");
          // sin(x) * y + z (x * y + z for integers), the sum also returned when also_result.
          std::vector<int64_t> code;
          int64_t a = is_integer(dtype) ? 0 : kernels::append_unary(code, 3, UnaryOp::kSin, 0);
          int64_t b = kernels::append_binary(code, 3, BinaryOp::kMul, a, 1);
          int64_t c = kernels::append_binary(code, 3, BinaryOp::kAdd, b, 2);
          std::vector<int64_t> results = {b};
          if (also_result) results.push_back(c);
          auto program = FusedProgram::decode(code, 3, results, dtype);
          ASSERT_TRUE(program.ok()) << program.status().to_string();
          ASSERT_TRUE(program->add_reduction(op, c, dims).ok()) << what;
          Shape reduced;
          for (int i = 0; i < domain.rank() - dims; ++i) reduced.push_back(domain.dim(i));
          std::vector<TensorRef> inputs;
          std::vector<const TensorImpl*> in;
          std::vector<Shape> shapes;
          for (int k = 0; k < 3; ++k) {
            inputs.push_back(random_tensor(dtype, domain, gen, -2, 2));
            in.push_back(inputs.back().get());
            shapes.push_back(domain);
          }
          std::vector<TensorRef> interpreted, native;
          std::vector<TensorImpl*> out_i, out_n;
          for (int j = 0; j < program->num_outputs(); ++j) {
            const Shape& shape = j + 1 == program->num_outputs() ? reduced : domain;
            interpreted.push_back(TensorImpl::allocate(dtype, shape).value());
            native.push_back(TensorImpl::allocate(dtype, shape).value());
            out_i.push_back(interpreted.back().get());
            out_n.push_back(native.back().get());
          }
          ASSERT_TRUE(program->run(in, out_i).ok()) << what;
          auto prepared = program->prepare(shapes, domain);
          ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
          const int64_t before = stats().native_runs;
          Status s = FusedProgram::run_prepared(**prepared, in, out_n);
          ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
          if (domain.num_elements() > 0) EXPECT_EQ(stats().native_runs, before + 1) << what;
          for (int j = 0; j < program->num_outputs(); ++j) {
            const size_t bytes = out_i[j]->num_elements() * dtype_size(dtype);
            EXPECT_EQ(std::memcmp(out_i[j]->raw_data(), out_n[j]->raw_data(), bytes), 0)
                << what << ": output " << j << " differs";
          }
        }
      }
    }
  }
}

// ---- Native loops (jit/native_loop.h): whole loops in one function

// The native code of `program`, compiled now (the synchronous mode); `slot` keeps it loaded.
NativeLoopFn compile_now(const LoopProgram& program, std::shared_ptr<NativeLoopSlot>& slot) {
  slot = std::make_shared<NativeLoopSlot>();
  request_native_loop(program, slot);
  return slot->get();
}

TEST_F(JitTest, NativeLoopsCountStopAndRespectTheirBudget) {
  // i = 0; while True: i = i + 1; if not i < 10: stop.
  LoopProgram loop;
  loop.num_vars = 1;
  loop.num_fixed = 2;
  loop.values = {
      {DType::kInt32, 1}, {DType::kInt32, 1}, {DType::kInt32, 1}, {DType::kInt32, 1}, {DType::kBool, 1}};
  loop.ops = {{kernels::FusedOpcode::kBinary, static_cast<int>(BinaryOp::kAdd), DType::kInt32, 0, 1},
              {kernels::FusedOpcode::kBinary, static_cast<int>(BinaryOp::kLess), DType::kInt32, 3, 2}};
  loop.next = {3};
  loop.condition = 4;
  std::shared_ptr<NativeLoopSlot> slot;
  NativeLoopFn fn = compile_now(loop, slot);
  ASSERT_NE(fn, nullptr);
  const int32_t one = 1, ten = 10;
  const void* fixed[] = {&one, &ten};
  for (int64_t budget : {0, 4, 10, 100}) {
    int32_t i = 0;
    void* vars[] = {&i};
    uint8_t finished = 7;
    const int64_t ran = fn(vars, fixed, budget, &finished);
    EXPECT_EQ(ran, std::min<int64_t>(budget, 10)) << budget;
    EXPECT_EQ(i, ran) << budget;  // the variables after the completed iterations
    EXPECT_EQ(finished, budget >= 10 ? 1 : 0) << budget;
  }
  // The same loop again is the loaded code (memory cache), not a second compile.
  const Stats before = stats();
  std::shared_ptr<NativeLoopSlot> again;
  EXPECT_EQ(compile_now(loop, again), fn);
  EXPECT_EQ(stats().memory_hits, before.memory_hits + 1);
  EXPECT_EQ(stats().compiled, before.compiled);
}

void put_nan_or_infinity(DType dtype, char* at, bool nan) {
  const float f = nan ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  const double d = f;
  const uint16_t half = nan ? 0x7e00 : 0x7c00, brain = nan ? 0x7fc0 : 0x7f80;
  switch (dtype) {
    case DType::kFloat32:
      std::memcpy(at, &f, 4);
      return;
    case DType::kFloat64:
      std::memcpy(at, &d, 8);
      return;
    case DType::kFloat16:
      std::memcpy(at, &half, 2);
      return;
    default:
      std::memcpy(at, &brain, 2);
  }
}

// One iteration of r_k = op_k(x[, y]) over 37 elements (element loops) for every predicate over a dtype,
// against the interpreter's table loops: the predicates the library gained for native loops, bit for bit.
TEST_F(JitTest, NativeLoopPredicatesAreTheInterpretersLoops) {
  std::mt19937 gen(5);
  const int64_t n = 37;
  const kernels::ElementwiseTables& tables = kernels::elementwise_tables();
  const bool stop = false;
  const void* fixed[] = {&stop};
  int checked = 0;
  for (DType dtype : kAllDTypes) {
    const int d = static_cast<int>(dtype);
    TensorRef x = random_tensor(dtype, Shape({n}), gen), y = random_tensor(dtype, Shape({n}), gen);
    // Equal operands in every third element, and NaNs and infinities where the dtype has them.
    const size_t size = dtype_size(dtype);
    char* xd = static_cast<char*>(x->mutable_raw_data());
    char* yd = static_cast<char*>(y->mutable_raw_data());
    for (int64_t i = 0; i < n; i += 3) std::memcpy(yd + i * size, xd + i * size, size);
    if (is_floating(dtype)) {
      put_nan_or_infinity(dtype, xd + 1 * size, /*nan=*/true);
      put_nan_or_infinity(dtype, xd + 4 * size, /*nan=*/false);
    }
    // vars: x, y, then one result per predicate; fixed: the condition (false); then each predicate's op.
    LoopProgram loop;
    loop.values = {{dtype, n}, {dtype, n}};
    std::vector<LoopProgram::Op> ops;
    std::vector<std::string> names;
    for (int unary = 0; unary < 2; ++unary) {
      const int count = unary ? static_cast<int>(UnaryOp::kCount) : static_cast<int>(BinaryOp::kCount);
      for (int op = 0; op < count; ++op) {
        const kernels::ElementwiseInfo& info = unary ? kernels::kUnaryInfo[op] : kernels::kBinaryInfo[op];
        if (!info.returns_bool ||
            (unary ? tables.unary[op][d] == nullptr : tables.binary[op][d].vv == nullptr))
          continue;
        ops.push_back({unary ? kernels::FusedOpcode::kUnary : kernels::FusedOpcode::kBinary, op, dtype, 0,
                       unary ? -1 : 1});
        names.push_back(std::string(info.op_name) + " " + std::string(dtype_name(dtype)));
        loop.values.push_back({DType::kBool, n});
      }
    }
    if (ops.empty()) continue;
    const int num_ops = static_cast<int>(ops.size());
    loop.num_vars = 2 + num_ops;
    loop.num_fixed = 1;
    loop.values.push_back({DType::kBool, 1});
    loop.next = {0, 1};
    for (int k = 0; k < num_ops; ++k) {
      loop.values.push_back({DType::kBool, n});
      loop.next.push_back(loop.num_vars + 1 + k);
    }
    loop.ops = ops;
    loop.condition = loop.num_vars;
    std::shared_ptr<NativeLoopSlot> slot;
    NativeLoopFn fn = compile_now(loop, slot);
    ASSERT_NE(fn, nullptr) << dtype_name(dtype);
    std::vector<std::vector<uint8_t>> native(num_ops, std::vector<uint8_t>(n, 2));
    std::vector<void*> vars = {xd, yd};
    for (auto& r : native) vars.push_back(r.data());
    uint8_t finished = 0;
    EXPECT_EQ(fn(vars.data(), fixed, 5, &finished), 1);
    EXPECT_EQ(finished, 1);
    for (int k = 0; k < num_ops; ++k) {
      std::vector<uint8_t> interpreted(n, 3);
      if (ops[k].opcode == kernels::FusedOpcode::kUnary)
        tables.unary[ops[k].op][d](x->raw_data(), interpreted.data(), n);
      else
        tables.binary[ops[k].op][d].vv(x->raw_data(), y->raw_data(), interpreted.data(), n);
      EXPECT_EQ(native[k], interpreted) << names[k];
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

}  // namespace
}  // namespace ember::jit
