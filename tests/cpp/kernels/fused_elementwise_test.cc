// Fused programs against running their ops one by one (kernels::run_unary / run_binary, broadcasting
// included), over tile boundaries, broadcast layouts, dtypes and thread-splitting sizes.
#include "ember/kernels/fused_elementwise.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <type_traits>

#include "ember/core/parallel.h"
#include "ember/ember.h"

namespace ember::kernels {
namespace {

using U = UnaryOp;
using B = BinaryOp;

template <typename T>
Tensor random_tensor(const Shape& shape, uint32_t seed, double lo = -2, double hi = 2) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> values(shape.num_elements());
  for (T& v : values) v = static_cast<T>(dist(gen));
  return Tensor::from_vector<T>(values, shape);
}

// The program's meaning, one op at a time on whole tensors.
std::vector<Tensor> run_unfused(const FusedProgram& program, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> values(inputs);
  for (const FusedInstruction& instr : program.instructions()) {
    const Tensor& a = values[instr.a];
    if (instr.opcode == FusedOpcode::kUnary) {
      Tensor out(TensorImpl::allocate(a.dtype(), a.shape()).value());
      EXPECT_TRUE(run_unary(static_cast<UnaryOp>(instr.op), *a.impl(), *out.impl()).ok());
      values.push_back(out);
    } else {
      const Tensor& b = values[instr.b];
      Shape shape = broadcast_shapes(a.shape(), b.shape()).value();
      Tensor out(TensorImpl::allocate(a.dtype(), shape).value());
      EXPECT_TRUE(run_binary(static_cast<BinaryOp>(instr.op), *a.impl(), *b.impl(), *out.impl()).ok());
      values.push_back(out);
    }
  }
  std::vector<Tensor> results;
  for (int32_t id : program.results()) results.push_back(values[id]);
  return results;
}

std::vector<Tensor> run_fused(const FusedProgram& program, const std::vector<Tensor>& inputs,
                              const Shape& domain) {
  std::vector<Tensor> outputs;
  std::vector<const TensorImpl*> in;
  std::vector<TensorImpl*> out;
  for (const Tensor& t : inputs) in.push_back(t.impl());
  for (int j = 0; j < program.num_results(); ++j) {
    outputs.emplace_back(TensorImpl::allocate(program.dtype(), domain).value());
    out.push_back(outputs.back().impl());
  }
  Status s = program.run(in, out);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return outputs;
}

template <typename T>
void expect_fused_matches_unfused(const std::vector<int64_t>& code, const std::vector<int64_t>& results,
                                  const std::vector<Tensor>& inputs, const Shape& domain) {
  auto program = FusedProgram::decode(code, static_cast<int>(inputs.size()), results, inputs[0].dtype());
  ASSERT_TRUE(program.ok()) << program.status().to_string();
  std::vector<Tensor> expected = run_unfused(*program, inputs);
  std::vector<Tensor> got = run_fused(*program, inputs, domain);
  ASSERT_EQ(expected.size(), got.size());
  for (size_t j = 0; j < got.size(); ++j) {
    ASSERT_EQ(expected[j].shape(), domain) << "test programs keep every result on the domain";
    std::vector<T> e = expected[j].to_vector<T>(), g = got[j].to_vector<T>();
    ASSERT_EQ(e.size(), g.size());
    for (size_t i = 0; i < e.size(); ++i) {
      // The same loops run in both, so results agree bit for bit (NaN included).
      if (e[i] != g[i] && !(e[i] != e[i] && g[i] != g[i])) {
        ADD_FAILURE() << "result " << j << " element " << i << ": expected " << e[i] << ", got " << g[i];
        return;
      }
    }
  }
}

// x * y + sin(x), also returning x * y: a DAG with an intermediate result.
std::vector<int64_t> mul_add_sin(std::vector<int64_t>& results) {
  std::vector<int64_t> code;
  int64_t xy = append_binary(code, 2, B::kMul, 0, 1);
  int64_t s = append_unary(code, 2, U::kSin, 0);
  int64_t sum = append_binary(code, 2, B::kAdd, xy, s);
  results = {sum, xy};
  return code;
}

TEST(FusedElementwise, DagOverTilesNotAMultipleOfTheTileSize) {
  for (int64_t n : {1, 5, 1024, 1025, 3000}) {
    SCOPED_TRACE(n);
    std::vector<int64_t> results;
    auto code = mul_add_sin(results);
    expect_fused_matches_unfused<float>(
        code, results, {random_tensor<float>({n}, 1), random_tensor<float>({n}, 2)}, Shape({n}));
    expect_fused_matches_unfused<double>(
        code, results, {random_tensor<double>({n}, 3), random_tensor<double>({n}, 4)}, Shape({n}));
  }
}

TEST(FusedElementwise, ScalarInputsUseTheScalarLoops) {
  std::vector<int64_t> code;
  // (x * 2) - 1, then 3 / that, and tanh(s) + x (a scalar through a unary op), and s * t + x (two scalars).
  int64_t scaled = append_binary(code, 4, B::kMul, 0, 1);
  int64_t shifted = append_binary(code, 4, B::kSub, scaled, 2);
  int64_t divided = append_binary(code, 4, B::kDiv, 2, shifted);
  int64_t t = append_unary(code, 4, U::kTanh, 3);
  int64_t plus = append_binary(code, 4, B::kAdd, t, 0);
  int64_t both = append_binary(code, 4, B::kMul, 3, 1);
  int64_t last = append_binary(code, 4, B::kAdd, both, plus);
  Shape domain({3, 700});
  expect_fused_matches_unfused<float>(code, {divided, last},
                                      {random_tensor<float>(domain, 5), Tensor(2.0f),
                                       Tensor::from_vector<float>({1.0f}, Shape({1, 1})), Tensor(0.5f)},
                                      domain);
}

TEST(FusedElementwise, RowVectorBias) {
  // A short bias repeats within a tile (expanded once); a long one is gathered per tile.
  for (int64_t cols : {1, 3, 64, 1000, 1500, 5000}) {
    SCOPED_TRACE(cols);
    std::vector<int64_t> code;
    int64_t biased = append_binary(code, 2, B::kAdd, 0, 1);
    int64_t relu = append_unary(code, 2, U::kRelu, biased);
    Shape domain({7, cols});
    expect_fused_matches_unfused<float>(
        code, {relu}, {random_tensor<float>(domain, 6), random_tensor<float>({cols}, 7)}, domain);
    // The bias first: the sv-style operand order must work as well.
    std::vector<int64_t> swapped;
    int64_t b2 = append_binary(swapped, 2, B::kSub, 1, 0);
    int64_t e2 = append_unary(swapped, 2, U::kExp, b2);
    expect_fused_matches_unfused<double>(
        swapped, {e2}, {random_tensor<double>(domain, 8), random_tensor<double>({1, cols}, 9)}, domain);
  }
}

TEST(FusedElementwise, ColumnAndMiddleBroadcasts) {
  for (int64_t cols : {1, 2, 5, 1024, 3000}) {
    SCOPED_TRACE(cols);
    std::vector<int64_t> code;
    int64_t scaled = append_binary(code, 2, B::kMul, 0, 1);
    int64_t squared = append_unary(code, 2, U::kSquare, scaled);
    Shape domain({9, cols});
    expect_fused_matches_unfused<float>(
        code, {squared}, {random_tensor<float>(domain, 10), random_tensor<float>({9, 1}, 11)}, domain);
  }
  std::vector<int64_t> code;
  int64_t a = append_binary(code, 3, B::kMax, 0, 1);
  int64_t b = append_binary(code, 3, B::kMul, a, 2);
  Shape domain({4, 300, 5});
  expect_fused_matches_unfused<float>(code, {b},
                                      {random_tensor<float>(domain, 12), random_tensor<float>({4, 1, 5}, 13),
                                       random_tensor<float>({300, 1}, 14)},
                                      domain);
}

TEST(FusedElementwise, OuterProductOfTwoBroadcastInputs) {
  std::vector<int64_t> code;
  int64_t outer = append_binary(code, 2, B::kMul, 0, 1);
  int64_t c = append_unary(code, 2, U::kCos, outer);
  Shape domain({600, 700});
  expect_fused_matches_unfused<float>(
      code, {c}, {random_tensor<float>({600, 1}, 15), random_tensor<float>({700}, 16)}, domain);
}

TEST(FusedElementwise, LargeDomainsSplitAcrossThreads) {
  std::vector<int64_t> results;
  auto code = mul_add_sin(results);
  int64_t n = (int64_t{1} << 20) * 3 + 77;
  expect_fused_matches_unfused<float>(
      code, results, {random_tensor<float>({n}, 17), random_tensor<float>({n}, 18)}, Shape({n}));
  Shape domain({1500, 1001});
  std::vector<int64_t> bias_code;
  int64_t sum = append_binary(bias_code, 2, B::kAdd, 0, 1);
  int64_t sig = append_unary(bias_code, 2, U::kSigmoid, sum);
  expect_fused_matches_unfused<double>(
      bias_code, {sig}, {random_tensor<double>(domain, 19), random_tensor<double>({1001}, 20)}, domain);
}

TEST(FusedElementwise, LongChainReusesRegisters) {
  std::vector<int64_t> code;
  int64_t v = 0;
  const U unary[] = {U::kSin, U::kTanh, U::kNeg, U::kSquare};
  const B binary[] = {B::kAdd, B::kMul, B::kSub, B::kMax};
  for (int i = 0; i < 100; ++i)
    v = i % 2 == 0 ? append_unary(code, 2, unary[(i / 2) % 4], v)
                   : append_binary(code, 2, binary[(i / 2) % 4], v, 1);
  Shape domain({5000});
  expect_fused_matches_unfused<float>(
      code, {v}, {random_tensor<float>(domain, 21), random_tensor<float>(domain, 22)}, domain);
}

TEST(FusedElementwise, IntegerAndBoolPrograms) {
  std::vector<int64_t> code;
  int64_t sum = append_binary(code, 2, B::kAdd, 0, 1);
  int64_t prod = append_binary(code, 2, B::kMul, sum, 0);
  int64_t neg = append_unary(code, 2, U::kNeg, prod);
  Shape domain({3, 2000});
  expect_fused_matches_unfused<int32_t>(
      code, {neg},
      {random_tensor<int32_t>(domain, 23, -100, 100), random_tensor<int32_t>({2000}, 24, -100, 100)}, domain);

  std::vector<int64_t> logic;
  int64_t both = append_binary(logic, 2, B::kLogicalAnd, 0, 1);
  int64_t none = append_unary(logic, 2, U::kLogicalNot, both);
  std::vector<bool> a(3000), b(3000);
  for (int i = 0; i < 3000; ++i) a[i] = i % 3 == 0, b[i] = i % 2 == 0;
  auto to_tensor = [](const std::vector<bool>& v) {
    Tensor t(TensorImpl::allocate(DType::kBool, Shape({static_cast<int64_t>(v.size())})).value());
    for (size_t i = 0; i < v.size(); ++i) t.impl()->mutable_data<bool>()[i] = v[i];
    return t;
  };
  auto program = FusedProgram::decode(logic, 2, std::vector<int64_t>{none}, DType::kBool);
  ASSERT_TRUE(program.ok()) << program.status().to_string();
  std::vector<Tensor> got = run_fused(*program, {to_tensor(a), to_tensor(b)}, Shape({3000}));
  const bool* out = got[0].impl()->data<bool>();
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(out[i], !(a[i] && b[i])) << i;
}

TEST(FusedElementwise, DecodeRejectsMalformedPrograms) {
  const std::vector<int64_t> one{2};
  auto fails = [](std::vector<int64_t> code, std::vector<int64_t> results, DType dtype,
                  const std::string& what) {
    auto p = FusedProgram::decode(code, 1, results, dtype);
    ASSERT_FALSE(p.ok()) << what;
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
    EXPECT_NE(p.status().message().find(what), std::string::npos) << p.status().message();
  };
  fails({1, 11, 0}, one, DType::kFloat32, "records of 4");
  fails({7, 11, 0, -1}, {1}, DType::kFloat32, "opcode 7");
  fails({1, 11, 1, -1}, {1}, DType::kFloat32, "reads value 1");
  fails({2, 0, 0, 5}, {1}, DType::kFloat32, "reads value 5");
  fails({1, 99, 0, -1}, {1}, DType::kFloat32, "unary op 99");
  fails({1, 11, 0, -1}, {0}, DType::kFloat32, "result 0");
  fails({1, 11, 0, -1}, {1, 1}, DType::kFloat32, "listed twice");
  fails({1, 11, 0, -1}, {}, DType::kFloat32, "at least one result");
  // Sin has no int32 loop; integer FloorDiv would have to report division by zero; comparisons make bool.
  fails({1, static_cast<int64_t>(U::kSin), 0, -1}, {1}, DType::kInt32, "cannot run in a int32");
  fails({2, static_cast<int64_t>(B::kFloorDiv), 0, 0}, {1}, DType::kInt32, "binary op");
  fails({2, static_cast<int64_t>(B::kLess), 0, 0}, {1}, DType::kFloat32, "binary op");
}

TEST(FusedElementwise, RunRejectsInputsThatDoNotBroadcast) {
  std::vector<int64_t> code;
  int64_t sum = append_binary(code, 2, B::kAdd, 0, 1);
  auto program = FusedProgram::decode(code, 2, std::vector<int64_t>{sum}, DType::kFloat32);
  ASSERT_TRUE(program.ok());
  Tensor x = random_tensor<float>({4, 3}, 25), bad = random_tensor<float>({4}, 26);
  Tensor out(TensorImpl::allocate(DType::kFloat32, Shape({4, 3})).value());
  const TensorImpl* in[] = {x.impl(), bad.impl()};
  TensorImpl* outs[] = {out.impl()};
  Status s = program->run(in, outs);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("input #1 has shape [4]"), std::string::npos) << s.message();
}

// Runs a program prepared for unknown dims the way the executor does: result_shapes, then run_prepared.
std::vector<Tensor> run_dynamic(const PreparedFusedProgram& prepared, const FusedProgram& program,
                                const std::vector<Tensor>& inputs) {
  std::vector<const TensorImpl*> in;
  for (const Tensor& t : inputs) in.push_back(t.impl());
  SmallVector<Shape, 2> shapes;
  Status s = FusedProgram::result_shapes(prepared, in, shapes);
  EXPECT_TRUE(s.ok()) << s.to_string();
  std::vector<Tensor> outputs;
  std::vector<TensorImpl*> out;
  for (int j = 0; j < program.num_results() && s.ok(); ++j) {
    outputs.emplace_back(TensorImpl::allocate(program.dtype(), shapes[j]).value());
    out.push_back(outputs.back().impl());
  }
  if (s.ok()) s = FusedProgram::run_prepared(prepared, in, out);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return outputs;
}

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t j = 0; j < got.size(); ++j) {
    ASSERT_EQ(got[j].shape(), expected[j].shape()) << "result " << j;
    EXPECT_EQ(got[j].to_vector<float>(), expected[j].to_vector<float>()) << "result " << j;
  }
}

TEST(FusedElementwise, PreparedForUnknownDimsBindsEachCallsShapes) {
  // relu(x + bias) * 2 and x + bias, over a domain [?, 5]: more distinct batch sizes than bindings kept,
  // then the first ones again (rebound after eviction).
  std::vector<int64_t> code;
  int64_t sum = append_binary(code, 3, B::kAdd, 0, 1);
  int64_t r = append_unary(code, 3, U::kRelu, sum);
  int64_t out = append_binary(code, 3, B::kMul, r, 2);
  auto program = FusedProgram::decode(code, 3, std::vector<int64_t>{out, sum}, DType::kFloat32);
  ASSERT_TRUE(program.ok());
  std::vector<Shape> specs{Shape({-1, 5}), Shape({5}), Shape()};
  auto prepared = program->prepare(specs, Shape({-1, 5}));
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_TRUE(FusedProgram::is_dynamic(**prepared));
  Tensor bias = random_tensor<float>({5}, 31), two = Tensor::from_vector<float>({2.0f}, Shape());
  for (int64_t batch : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1000, 0, 1, 2}) {
    std::vector<Tensor> inputs{random_tensor<float>({batch, 5}, 32 + static_cast<uint32_t>(batch)), bias,
                               two};
    expect_same(run_dynamic(**prepared, *program, inputs), run_unfused(*program, inputs));
  }
  // Static shapes still bind once, at preparation.
  auto fixed = program->prepare(std::vector<Shape>{Shape({3, 5}), Shape({5}), Shape()}, Shape({3, 5}));
  ASSERT_TRUE(fixed.ok());
  EXPECT_FALSE(FusedProgram::is_dynamic(**fixed));
}

TEST(FusedElementwise, DynamicResultsReadingFewerInputsKeepTheirShape) {
  // t = exp(x) reads only x; u = t + y. With x [1, 3] and y [4, 3], t is [1, 3] and u [4, 3].
  std::vector<int64_t> code;
  int64_t t = append_unary(code, 2, U::kExp, 0);
  int64_t u = append_binary(code, 2, B::kAdd, t, 1);
  auto program = FusedProgram::decode(code, 2, std::vector<int64_t>{t, u}, DType::kFloat32);
  ASSERT_TRUE(program.ok());
  std::vector<Shape> specs{Shape({-1, 3}), Shape({-1, 3})};
  auto prepared = program->prepare(specs, Shape({-1, 3}));
  ASSERT_TRUE(prepared.ok());
  for (auto [nx, ny] : {std::pair<int64_t, int64_t>{1, 4}, {4, 1}, {4, 4}, {0, 1}, {1, 0}}) {
    std::vector<Tensor> inputs{random_tensor<float>({nx, 3}, 41), random_tensor<float>({ny, 3}, 42)};
    expect_same(run_dynamic(**prepared, *program, inputs), run_unfused(*program, inputs));
    // The unprepared path takes outputs of different shapes too.
    std::vector<Tensor> expected = run_unfused(*program, inputs);
    std::vector<Tensor> outputs;
    std::vector<TensorImpl*> out;
    for (const Tensor& e : expected) {
      outputs.emplace_back(TensorImpl::allocate(DType::kFloat32, e.shape()).value());
      out.push_back(outputs.back().impl());
    }
    std::vector<const TensorImpl*> in{inputs[0].impl(), inputs[1].impl()};
    ASSERT_TRUE(program->run(in, out).ok());
    expect_same(outputs, expected);
  }
  // Inputs that do not broadcast, or that contradict the domain's known dims, are refused.
  Tensor a = random_tensor<float>({3, 3}, 43), b = random_tensor<float>({4, 3}, 44),
         c = random_tensor<float>({4, 2}, 45);
  SmallVector<Shape, 2> shapes;
  std::vector<const TensorImpl*> bad{a.impl(), b.impl()};
  Status s = FusedProgram::result_shapes(**prepared, bad, shapes);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("does not broadcast"), std::string::npos) << s.message();
  std::vector<const TensorImpl*> wrong{c.impl(), c.impl()};
  s = FusedProgram::result_shapes(**prepared, wrong, shapes);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("built for [?,3]"), std::string::npos) << s.message();
  EXPECT_FALSE(program->prepare(specs, Shape::unknown_rank()).ok());
}

// ---- Programs ending in a reduction (Note [Fused reductions])

// x * y + z over `domain`, reduced by `op` over its last `dims` dims; `also_result` returns x * y + z too.
StatusOr<FusedProgram> mul_add_reduce(DType dtype, ReduceOp op, int dims, bool also_result = false) {
  std::vector<int64_t> code;
  int64_t xy = append_binary(code, 3, B::kMul, 0, 1);
  int64_t sum = append_binary(code, 3, B::kAdd, xy, 2);
  std::vector<int64_t> results = {xy};
  if (also_result) results.push_back(sum);
  auto program = FusedProgram::decode(code, 3, results, dtype);
  if (!program.ok()) return program;
  Status s = program->add_reduction(op, sum, dims);
  if (!s.ok()) return s;
  return program;
}

Shape reduced_shape(const Shape& domain, int dims) {
  Shape out;
  for (int i = 0; i < domain.rank() - dims; ++i) out.push_back(domain.dim(i));
  return out;
}

// Runs a reducing program: its domain-shaped outputs, then the reduction.
std::vector<Tensor> run_reducing(const FusedProgram& program, const std::vector<Tensor>& inputs,
                                 const Shape& domain, bool prepared = false) {
  std::vector<Tensor> outputs;
  std::vector<const TensorImpl*> in;
  std::vector<TensorImpl*> out;
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) {
    in.push_back(t.impl());
    shapes.push_back(t.shape());
  }
  for (int j = 0; j < program.num_outputs(); ++j) {
    const bool last = j + 1 == program.num_outputs();
    outputs.emplace_back(
        TensorImpl::allocate(program.dtype(),
                             last ? reduced_shape(domain, program.reduction()->reduced_dims) : domain)
            .value());
    out.push_back(outputs.back().impl());
  }
  Status s;
  if (prepared) {
    auto p = program.prepare(shapes, domain);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    if (p.ok()) s = FusedProgram::run_prepared(**p, in, out);
  } else {
    s = program.run(in, out);
  }
  EXPECT_TRUE(s.ok()) << s.to_string();
  return outputs;
}

// The unfused meaning: the program's values, then kernels::reduce over the trailing dims.
std::vector<Tensor> run_reducing_unfused(const FusedProgram& program, const std::vector<Tensor>& inputs,
                                         const Shape& domain) {
  std::vector<Tensor> values = run_unfused(program, inputs);
  const FusedReductionSpec& spec = *program.reduction();
  Tensor reduced(TensorImpl::allocate(program.dtype(), reduced_shape(domain, spec.reduced_dims)).value());
  uint32_t mask = 0;
  for (int i = domain.rank() - spec.reduced_dims; i < domain.rank(); ++i) mask |= 1u << i;
  EXPECT_TRUE(reduce(spec.op, *values[spec.result].impl(), mask, *reduced.impl()).ok());
  if (spec.internal) values.pop_back();
  values.push_back(reduced);
  return values;
}

template <typename T>
void expect_close(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<T> g = got.to_vector<T>(), w = want.to_vector<T>();
  for (size_t i = 0; i < g.size(); ++i) {
    const double a = static_cast<double>(g[i]), b = static_cast<double>(w[i]);
    if (a == b || (a != a && b != b)) continue;
    ASSERT_LE(std::abs(a - b), rtol * std::abs(b)) << what << " element " << i << ": " << a << " vs " << b;
  }
}

template <typename T>
void expect_reduction_matches(ReduceOp op, const Shape& domain, int dims, DType dtype, double rtol) {
  const std::string what = "op " + std::to_string(static_cast<int>(op)) + " over the last " +
                           std::to_string(dims) + " dims of " + domain.to_string();
  for (bool also_result : {false, true}) {
    auto program = mul_add_reduce(dtype, op, dims, also_result);
    ASSERT_TRUE(program.ok()) << program.status().to_string();
    // Positive values near 1: sums do not cancel, products stay finite over short rows.
    const double scale = std::is_integral_v<T> ? 40000 : 1;  // integers: big enough to wrap
    std::vector<Tensor> inputs = {random_tensor<T>(domain, 1, 0.5 * scale, scale),
                                  random_tensor<T>(domain, 2, 0.5 * scale, scale),
                                  random_tensor<T>(domain, 3, 0.0, 0.25 * scale)};
    std::vector<Tensor> want = run_reducing_unfused(*program, inputs, domain);
    for (bool prepared : {false, true}) {
      std::vector<Tensor> got = run_reducing(*program, inputs, domain, prepared);
      ASSERT_EQ(got.size(), want.size()) << what;
      for (size_t j = 0; j + 1 < got.size(); ++j) expect_close<T>(got[j], want[j], 0, what + ", result");
      expect_close<T>(got.back(), want.back(), rtol, what + ", reduction");
    }
  }
}

TEST(FusedReduction, MatchesTheUnfusedReduction) {
  // One row (every axis), long rows cut into tiles, rows shorter than a tile, the last two dims, empties.
  const std::vector<std::pair<Shape, int>> cases = {
      {Shape({3000}), 1},     {Shape({2, 3, 4}), 3}, {Shape({7, 5000}), 1}, {Shape({300, 37}), 1},
      {Shape({4, 6, 50}), 2}, {Shape({5, 1024}), 1}, {Shape({0, 5}), 1},    {Shape({5, 0}), 1}};
  for (const auto& [domain, dims] : cases) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
      expect_reduction_matches<float>(op, domain, dims, DType::kFloat32, 1e-5);
      expect_reduction_matches<double>(op, domain, dims, DType::kFloat64, 1e-12);
    }
    if (domain.num_elements() < 100)
      expect_reduction_matches<float>(ReduceOp::kProd, domain, dims, DType::kFloat32, 1e-5);
  }
  // Integers sum exactly (wrapping), whatever the order.
  expect_reduction_matches<int32_t>(ReduceOp::kSum, Shape({9, 3001}), 1, DType::kInt32, 0);
}

TEST(FusedReduction, SameBitsWhateverTheThreadCount) {
  const int threads = intra_op_threads();
  for (const auto& [domain, dims] : std::vector<std::pair<Shape, int>>{
           {Shape({1 << 21}), 1}, {Shape({300, 4099}), 1}, {Shape({20000, 33}), 1}}) {
    auto program = mul_add_reduce(DType::kFloat32, ReduceOp::kSum, dims);
    ASSERT_TRUE(program.ok());
    std::vector<Tensor> inputs = {random_tensor<float>(domain, 4), random_tensor<float>(domain, 5),
                                  random_tensor<float>(domain, 6)};
    std::vector<std::vector<float>> sums;
    for (int t : {1, 2, 3}) {
      set_intra_op_threads(t);
      sums.push_back(run_reducing(*program, inputs, domain, true).back().to_vector<float>());
    }
    set_intra_op_threads(threads);
    for (size_t k = 1; k < sums.size(); ++k)
      EXPECT_EQ(std::memcmp(sums[0].data(), sums[k].data(), sums[0].size() * sizeof(float)), 0)
          << domain.to_string() << ": " << k + 1 << " threads differ from one";
  }
}

TEST(FusedReduction, RejectsBadReductions) {
  std::vector<int64_t> code;
  int64_t xy = append_binary(code, 2, B::kMul, 0, 1);
  auto program = FusedProgram::decode(code, 2, std::vector<int64_t>{xy}, DType::kFloat32);
  ASSERT_TRUE(program.ok());
  EXPECT_FALSE(FusedProgram(*program).add_reduction(ReduceOp::kAny, xy, 1).ok());
  EXPECT_FALSE(FusedProgram(*program).add_reduction(ReduceOp::kLogSumExp, xy, 1).ok());
  Status s = FusedProgram(*program).add_reduction(ReduceOp::kSum, 0, 1);  // an input
  EXPECT_NE(s.message().find("not a value an instruction defines"), std::string::npos) << s.message();
  EXPECT_FALSE(FusedProgram(*program).add_reduction(ReduceOp::kSum, xy, 0).ok());
  ASSERT_TRUE(program->add_reduction(ReduceOp::kSum, xy, 2).ok());
  EXPECT_EQ(program->num_outputs(), 2);  // x * y, then its sum
  EXPECT_FALSE(program->add_reduction(ReduceOp::kSum, xy, 1).ok());
  Tensor x = random_tensor<float>({4, 3}, 7), y = random_tensor<float>({4, 3}, 8);
  Tensor full(TensorImpl::allocate(DType::kFloat32, Shape({4, 3})).value());
  Tensor wrong(TensorImpl::allocate(DType::kFloat32, Shape({4})).value());
  std::vector<const TensorImpl*> in{x.impl(), y.impl()};
  std::vector<TensorImpl*> out{full.impl(), wrong.impl()};
  s = program->run(in, out);  // the sum over both dims has one element
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("has 4 elements"), std::string::npos) << s.message();
  std::vector<TensorImpl*> too_few{full.impl()};
  EXPECT_FALSE(program->run(in, too_few).ok());
  Tensor v = random_tensor<float>({3}, 9);
  std::vector<const TensorImpl*> rank1{v.impl(), v.impl()};
  Tensor out1(TensorImpl::allocate(DType::kFloat32, Shape({3})).value());
  Tensor scalar(TensorImpl::allocate(DType::kFloat32, Shape()).value());
  std::vector<TensorImpl*> outs1{out1.impl(), scalar.impl()};
  s = program->run(rank1, outs1);  // two trailing dims of a rank-1 domain
  EXPECT_NE(s.message().find("domain of rank 1"), std::string::npos) << s.message();
  EXPECT_EQ(
      program->prepare(std::vector<Shape>{Shape({-1, 3}), Shape({-1, 3})}, Shape({-1, 3})).status().code(),
      Code::kUnimplemented);
}

}  // namespace
}  // namespace ember::kernels
