// Einsum: TensorFlow's op of tf.einsum, one or two operands contracted by an equation such as
// "bij,bjk->bik" (tf.einsum contracts more operands pairwise, python/ember/ops/special_math_ops.py).
// The kernel takes each operand's diagonals (repeated labels), sums the labels only it has, and contracts
// the two as one batched MatMul (kernels/matmul.h); the result is permuted into the output's order, and
// repeated output labels ("i->ii") write it onto a diagonal of zeros. The gradient is TensorFlow's: more
// Einsums (Note [Einsum gradient]). Registered from register_linalg_ops (linalg.cc).
#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/kernels/complex.h"
#include "ember/kernels/matmul.h"
#include "ember/kernels/reduce.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

constexpr DTypeSet kEinsumTypes =
    kFloatTypes | dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64) | kComplexTypes;

// Note [Einsum labels]
// Each dim of an operand gets a label id: letters are 0..51, and the dims an ellipsis stands for take ids
// from kFirstBroadcastLabel, aligned from the right across the operands (NumPy broadcasting), so that equal
// ids name dims that must agree: a letter's dims have one size, a broadcast label's dims are 1 or one size.
// The output must name the broadcast dims with "..." when there are any (as TensorFlow requires).
constexpr int kFirstBroadcastLabel = 52;

int letter_label(char c) { return c >= 'a' && c <= 'z' ? c - 'a' : c - 'A' + 26; }
char letter_of(int label) { return label < 26 ? char('a' + label) : char('A' + label - 26); }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

struct Term {
  std::vector<int> before;  // letter labels before the ellipsis (all of them when there is none)
  std::vector<int> after;   // letter labels after it
  bool ellipsis = false;
  int letters() const { return static_cast<int>(before.size() + after.size()); }
};

struct Equation {
  std::vector<Term> inputs;
  Term output;
};

Status parse_term(const std::string& equation, const std::string& text, Term& term) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0 || term.ellipsis)
        return invalid_argument(
            "Einsum: expected at most one ellipsis ('...') per term and no lone '.', got '", text,
            "' in equation '", equation, "'");
      term.ellipsis = true;
      i += 2;
      continue;
    }
    if (!is_letter(c))
      return invalid_argument("Einsum: subscripts must be letters, got '", std::string(1, c),
                              "' in equation '", equation, "'");
    (term.ellipsis ? term.after : term.before).push_back(letter_label(c));
  }
  return Status::OK();
}

StatusOr<Equation> parse_equation(const std::string& equation, int num_inputs) {
  const size_t arrow = equation.find("->");
  if (arrow == std::string::npos || equation.find("->", arrow + 2) != std::string::npos)
    return invalid_argument("Einsum: expecting exactly one '->' in einsum equation: ", equation);
  Equation eq;
  const std::string lhs = equation.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    eq.inputs.emplace_back();
    EMBER_RETURN_IF_ERROR(parse_term(equation, lhs.substr(start, comma - start), eq.inputs.back()));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (eq.inputs.size() > 2)
    return invalid_argument("Einsum: expecting 1 or 2 input subscripts in equation '", equation,
                            "' but got: ", eq.inputs.size());
  if (static_cast<int>(eq.inputs.size()) != num_inputs)
    return invalid_argument("Einsum: equation '", equation, "' names ", eq.inputs.size(), " inputs but got ",
                            num_inputs);
  EMBER_RETURN_IF_ERROR(parse_term(equation, equation.substr(arrow + 2), eq.output));
  for (const std::vector<int>* part : {&eq.output.before, &eq.output.after})
    for (int label : *part) {
      const bool found = std::any_of(eq.inputs.begin(), eq.inputs.end(), [&](const Term& t) {
        return std::count(t.before.begin(), t.before.end(), label) +
               std::count(t.after.begin(), t.after.end(), label);
      });
      if (!found)
        return invalid_argument("Einsum: output subscript '", std::string(1, letter_of(label)),
                                "' of equation '", equation, "' appears in no input");
    }
  return eq;
}

// Label ids per dim of each operand and of the output, for operands of the given ranks (-1: unknown).
// `broadcast_rank` is the number of broadcast labels, or -1 when an unknown rank hides it.
struct Labels {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  int broadcast_rank = 0;
};

StatusOr<Labels> assign_labels(const Equation& eq, std::span<const int> ranks, const std::string& text) {
  Labels out;
  std::vector<int> widths;
  for (size_t i = 0; i < eq.inputs.size(); ++i) {
    const Term& t = eq.inputs[i];
    const int rank = ranks[i];
    if (rank >= 0 && (t.ellipsis ? rank < t.letters() : rank != t.letters()))
      return invalid_argument("Einsum: expected input ", i, " to have rank ", t.ellipsis ? "at least " : "",
                              t.letters(), " but got: ", rank, " (equation '", text, "')");
    widths.push_back(!t.ellipsis ? 0 : rank < 0 ? -1 : rank - t.letters());
  }
  const bool unknown = std::count(widths.begin(), widths.end(), -1) > 0;
  out.broadcast_rank = unknown ? -1 : *std::max_element(widths.begin(), widths.end());
  if (out.broadcast_rank > 0 && !eq.output.ellipsis)
    return invalid_argument("Einsum: output contains ", out.broadcast_rank,
                            " broadcasting dimension(s) but no ellipsis (...) was found in the output "
                            "subscripts of '",
                            text, "'");
  auto expand = [&](const Term& t, int width) {
    std::vector<int> labels = t.before;
    for (int k = 0; k < width; ++k) labels.push_back(kFirstBroadcastLabel + out.broadcast_rank - width + k);
    labels.insert(labels.end(), t.after.begin(), t.after.end());
    return labels;
  };
  for (size_t i = 0; i < eq.inputs.size(); ++i)
    out.inputs.push_back(widths[i] < 0 ? std::vector<int>{} : expand(eq.inputs[i], widths[i]));
  if (!unknown) out.output = expand(eq.output, eq.output.ellipsis ? out.broadcast_rank : 0);
  return out;
}

constexpr int kNumLabels = kFirstBroadcastLabel + kMaxRank;

// The size of every label (kUnknownDim where nothing says): letters must agree, broadcast labels
// broadcast. `operands` holds the operands' shapes; those of unknown rank are skipped.
StatusOr<std::array<int64_t, kNumLabels>> label_sizes(const Labels& labels, std::span<const Shape> operands) {
  std::array<int64_t, kNumLabels> size;
  size.fill(-2);  // -2: not seen
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i].rank_known()) continue;
    for (int d = 0; d < operands[i].rank(); ++d) {
      const int label = labels.inputs[i][d];
      const int64_t dim = operands[i].dim(d);
      int64_t& s = size[label];
      if (label < kFirstBroadcastLabel) {
        if (s == -2 || s == kUnknownDim) {
          s = dim;
        } else if (dim >= 0 && dim != s) {
          return invalid_argument("Einsum: expected dimension ", s, " at axis ", d, " of the input shaped ",
                                  operands[i].to_string(), " but got dimension ", dim);
        }
      } else if (s == -2) {
        s = dim;
      } else if (dim >= 0 && s >= 0 && dim != s && dim != 1 && s != 1) {
        return invalid_argument(
            "Einsum: the broadcast dimensions (...) of the inputs are not compatible: ", s, " and ", dim,
            " at axis ", d, " of the input shaped ", operands[i].to_string());
      } else if (s == 1 || (dim > 1)) {
        s = dim;  // 1 gives way to anything; an unknown dim against 1 stays unknown
      }
    }
  }
  for (int64_t& s : size)
    if (s == -2) s = kUnknownDim;
  return size;
}

struct Resolved {
  Equation eq;
  Labels labels;
  std::array<int64_t, kNumLabels> size;
};

StatusOr<Resolved> resolve(const std::string& equation, std::span<const Shape> shapes) {
  auto eq = parse_equation(equation, static_cast<int>(shapes.size()));
  if (!eq.ok()) return eq.status();
  std::vector<int> ranks;
  for (const Shape& s : shapes) ranks.push_back(s.rank_known() ? s.rank() : -1);
  auto labels = assign_labels(*eq, ranks, equation);
  if (!labels.ok()) return labels.status();
  auto size = label_sizes(*labels, shapes);
  if (!size.ok()) return size.status();
  return Resolved{std::move(*eq), std::move(*labels), *size};
}

Status einsum_shape(InferContext& ctx) {
  std::vector<Shape> shapes;
  for (const TensorSpec& s : ctx.inputs) shapes.push_back(s.shape);
  auto r = resolve(ctx.attr_string(0), shapes);
  if (!r.ok()) return r.status();
  Shape out = Shape::unknown_rank();
  if (r->labels.broadcast_rank >= 0 || !r->eq.output.ellipsis) {
    std::vector<int64_t> dims;
    const std::vector<int>& labels =
        r->labels.broadcast_rank >= 0 ? r->labels.output : r->eq.output.before;  // no ellipsis: letters only
    for (int label : labels) dims.push_back(r->size[label]);
    if (static_cast<int>(dims.size()) > kMaxRank)
      return invalid_argument("Einsum: the output of '", ctx.attr_string(0), "' has rank ", dims.size(),
                              "; at most ", kMaxRank);
    out = Shape(std::span<const int64_t>(dims));
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

// ---- the kernel: an operand as a dense tensor with one label per dim.

struct Operand {
  TensorRef value;
  std::vector<int> labels;
};

StatusOr<TensorRef> allocate_dims(DType dtype, const std::vector<int64_t>& dims) {
  return TensorImpl::allocate(dtype, Shape(std::span<const int64_t>(dims)));
}

// Copies `x` into a dense tensor whose dim k is label `order[k]`, where a label x repeats contributes its
// diagonal (the strides of its dims add up). With `order` holding every label once this is a permutation.
StatusOr<Operand> gather_labels(const Operand& x, const std::vector<int>& order) {
  const TensorImpl& v = *x.value;
  std::array<int64_t, kMaxRank> in_strides = contiguous_strides(v.shape());
  kernels::StridedCopy copy;
  copy.rank = static_cast<int>(order.size());
  std::vector<int64_t> dims;
  for (size_t k = 0; k < order.size(); ++k) {
    int64_t stride = 0, dim = 0;
    for (size_t d = 0; d < x.labels.size(); ++d)
      if (x.labels[d] == order[k]) {
        stride += in_strides[d];
        dim = v.shape().dim(static_cast<int>(d));
      }
    copy.dims[k] = dim;
    copy.src_strides[k] = stride;
    dims.push_back(dim);
  }
  kernels::dense_strides(copy.rank, copy.dims, copy.dst_strides);
  auto out = allocate_dims(v.dtype(), dims);
  if (!out.ok()) return out.status();
  if ((*out)->num_elements() > 0)
    kernels::strided_copy(v.raw_data(), (*out)->mutable_raw_data(), dtype_size(v.dtype()), copy);
  return Operand{std::move(*out), order};
}

bool has(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// x with its repeated labels reduced to diagonals and the labels in neither `keep_a` nor `keep_b` summed.
StatusOr<Operand> simplify(Operand x, const std::vector<int>& keep_a, const std::vector<int>& keep_b) {
  std::vector<int> unique;
  for (int l : x.labels)
    if (!has(unique, l)) unique.push_back(l);
  if (unique.size() != x.labels.size()) {
    auto diag = gather_labels(x, unique);
    if (!diag.ok()) return diag.status();
    x = std::move(*diag);
  }
  uint32_t mask = 0;
  std::vector<int> kept;
  std::vector<int64_t> kept_dims;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    if (has(keep_a, x.labels[d]) || has(keep_b, x.labels[d])) {
      kept.push_back(x.labels[d]);
      kept_dims.push_back(x.value->shape().dim(static_cast<int>(d)));
    } else {
      mask |= 1u << d;
    }
  }
  if (mask == 0) return x;
  auto sum = allocate_dims(x.value->dtype(), kept_dims);
  if (!sum.ok()) return sum.status();
  EMBER_RETURN_IF_ERROR(kernels::reduce(kernels::ReduceOp::kSum, *x.value, mask, **sum));
  return Operand{std::move(*sum), std::move(kept)};
}

// Writes `r` (every label distinct) into `out`, whose dims are labelled `output` (labels may repeat: then
// r lands on the diagonal and the rest is zero).
void write_output(const Operand& r, const std::vector<int>& output, TensorImpl& out) {
  const size_t elem = dtype_size(out.dtype());
  if (out.num_elements() == 0) return;
  std::vector<int> unique;
  for (int l : output)
    if (!has(unique, l)) unique.push_back(l);
  if (unique.size() != output.size()) {
    const kernels::ScalarBits zero;
    kernels::fill(out.mutable_raw_data(), out.num_elements(), elem, zero.data());
  }
  const std::array<int64_t, kMaxRank> out_strides = contiguous_strides(out.shape());
  const std::array<int64_t, kMaxRank> r_strides = contiguous_strides(r.value->shape());
  kernels::StridedCopy copy;
  copy.rank = static_cast<int>(r.labels.size());
  for (size_t k = 0; k < r.labels.size(); ++k) {
    copy.dims[k] = r.value->shape().dim(static_cast<int>(k));
    copy.src_strides[k] = r_strides[k];
    for (size_t d = 0; d < output.size(); ++d)
      if (output[d] == r.labels[k]) copy.dst_strides[k] += out_strides[d];
  }
  kernels::strided_copy(r.value->raw_data(), out.mutable_raw_data(), elem, copy);
}

Status run_matmul(const TensorImpl& a, const TensorImpl& b, bool ta, bool tb, TensorImpl& out) {
  if (is_complex(a.dtype())) return kernels::complex_matmul(a, b, ta, tb, out);
  return kernels::matmul(a, b, ta, tb, out);
}

// a and b (already simplified) contracted as one batched MatMul: [batch, rows, inner] @ [batch, inner,
// cols]. Writes straight into `out` when the output is [batch, rows, cols] in that order.
Status contract(const Operand& a, const Operand& b, const Resolved& r, TensorImpl& out) {
  const std::vector<int>& output = r.labels.output;
  std::vector<int> batch, rows, inner, cols;
  for (int l : a.labels) {
    if (has(b.labels, l)) {
      (has(output, l) ? batch : inner).push_back(l);
    } else {
      rows.push_back(l);
    }
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) cols.push_back(l);
  auto dim_of = [](const Operand& x, int label) {
    return x.value->shape().dim(
        static_cast<int>(std::find(x.labels.begin(), x.labels.end(), label) - x.labels.begin()));
  };
  auto product = [&](const Operand& x, const std::vector<int>& ls) {
    int64_t n = 1;
    for (int l : ls) n *= dim_of(x, l);
    return n;
  };
  // Batch dims that agree in both operands merge into one (no broadcasting among them needed).
  bool broadcast = false;
  for (int l : batch) broadcast |= dim_of(a, l) != dim_of(b, l);
  std::vector<int64_t> a_batch, b_batch, out_batch;
  if (broadcast) {
    for (int l : batch) {
      a_batch.push_back(dim_of(a, l));
      b_batch.push_back(dim_of(b, l));
      out_batch.push_back(std::max(dim_of(a, l), dim_of(b, l)) == 1 ? 1 : r.size[l]);
    }
    if (batch.size() + 2 > static_cast<size_t>(kMaxRank))
      return make_error(Code::kUnimplemented, "Einsum: ", batch.size(),
                        " broadcast batch labels need a product of rank ", batch.size() + 2, "; at most ",
                        kMaxRank);
  } else if (!batch.empty()) {
    a_batch = b_batch = out_batch = {product(a, batch)};
  }
  std::vector<int> a_order = batch, b_order = batch;
  a_order.insert(a_order.end(), rows.begin(), rows.end());
  a_order.insert(a_order.end(), inner.begin(), inner.end());
  b_order.insert(b_order.end(), inner.begin(), inner.end());
  b_order.insert(b_order.end(), cols.begin(), cols.end());
  // An operand already laid out as [batch, inner, rows] (or [batch, cols, inner]) goes to MatMul transposed
  // rather than copied ("bhqd,bhkd->bhqk").
  auto swapped = [&](const std::vector<int>& first, const std::vector<int>& second) {
    std::vector<int> order = batch;
    order.insert(order.end(), first.begin(), first.end());
    order.insert(order.end(), second.begin(), second.end());
    return order;
  };
  const bool ta = a.labels != a_order && a.labels == swapped(inner, rows);
  const bool tb = b.labels != b_order && b.labels == swapped(cols, inner);
  Operand pa = a, pb = b;
  if (pa.labels != a_order && !ta) {
    auto t = gather_labels(a, a_order);
    if (!t.ok()) return t.status();
    pa = std::move(*t);
  }
  if (pb.labels != b_order && !tb) {
    auto t = gather_labels(b, b_order);
    if (!t.ok()) return t.status();
    pb = std::move(*t);
  }
  const int64_t m = product(a, rows), k = product(a, inner), n = product(b, cols);
  auto shaped = [](std::vector<int64_t> dims, int64_t x, int64_t y) {
    dims.push_back(x);
    dims.push_back(y);
    return Shape(std::span<const int64_t>(dims));
  };
  TensorRef a3 = TensorImpl::view(*pa.value, ta ? shaped(a_batch, k, m) : shaped(a_batch, m, k));
  TensorRef b3 = TensorImpl::view(*pb.value, tb ? shaped(b_batch, n, k) : shaped(b_batch, k, n));
  std::vector<int> result_labels = batch;
  result_labels.insert(result_labels.end(), rows.begin(), rows.end());
  result_labels.insert(result_labels.end(), cols.begin(), cols.end());
  if (result_labels == output) {
    TensorRef direct = TensorImpl::view(out, shaped(out_batch, m, n));
    return run_matmul(*a3, *b3, ta, tb, *direct);
  }
  auto product_out = TensorImpl::allocate(out.dtype(), shaped(out_batch, m, n));
  if (!product_out.ok()) return product_out.status();
  EMBER_RETURN_IF_ERROR(run_matmul(*a3, *b3, ta, tb, **product_out));
  std::vector<int64_t> result_dims;
  for (int l : batch) result_dims.push_back(broadcast ? std::max(dim_of(a, l), dim_of(b, l)) : dim_of(a, l));
  for (int l : rows) result_dims.push_back(dim_of(a, l));
  for (int l : cols) result_dims.push_back(dim_of(b, l));
  Operand result{TensorImpl::view(**product_out, Shape(std::span<const int64_t>(result_dims))),
                 std::move(result_labels)};
  write_output(result, output, out);
  return Status::OK();
}

Status einsum_kernel(KernelContext& ctx) {
  std::vector<Shape> shapes;
  for (const TensorImpl* x : ctx.inputs) shapes.push_back(x->shape());
  auto r = resolve(ctx.attr_string(0), shapes);
  if (!r.ok()) return r.status();
  const std::vector<int>& output = r->labels.output;
  std::vector<Operand> operands;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const std::vector<int>& other = ctx.inputs.size() == 2 ? r->labels.inputs[1 - i] : std::vector<int>{};
    auto x = simplify(Operand{TensorRef(ctx.inputs[i]), r->labels.inputs[i]}, output, other);
    if (!x.ok()) return x.status();
    operands.push_back(std::move(*x));
  }
  if (operands.size() == 2) return contract(operands[0], operands[1], *r, ctx.output(0));
  write_output(operands[0], output, ctx.output(0));
  return Status::OK();
}

// Note [Einsum gradient]
// TensorFlow's rule. For z = einsum("x,y->z"), dx = einsum("z,y->x'") where x' is x's subscripts without
// the labels only x has (they were summed: their gradient is dz broadcast along them), then
// einsum("sx',->x") over dz broadcast to [sizes of those labels] + shape(x'), which also puts repeated
// labels back on their diagonals. Broadcast dims (...) that x had as 1, or lacked, are summed back.
// One operand is the same with no y.

std::string subscripts(const Term& t) {
  std::string s;
  for (int l : t.before) s += letter_of(l);
  if (t.ellipsis) s += "...";
  for (int l : t.after) s += letter_of(l);
  return s;
}

GradTensor einsum(const std::string& equation, std::initializer_list<GradTensor> operands) {
  AttrList attrs;
  attrs.push_back(equation);
  return gradient::emit1("Einsum", operands, std::move(attrs));
}

std::vector<int> letters_of(const Term& t) {
  std::vector<int> all = t.before;
  all.insert(all.end(), t.after.begin(), t.after.end());
  return all;
}

// g (laid out as x's subscripts, its broadcast dims those of the output) summed down to x's shape where
// x had 1 or fewer broadcast dims.
GradTensor unbroadcast(GradTensor g, const GradTensor& x, const Term& x_term) {
  using namespace gradient;
  if (!x_term.ellipsis || g.shape() == x.shape()) return g;
  if (!g.shape().rank_known() || !x.shape().rank_known())
    check_ok(
        make_error(Code::kUnimplemented, "Einsum: the gradient of an operand with '...' needs its rank"));
  const int start = static_cast<int>(x_term.before.size());
  const int width = x.rank() - x_term.letters(), full = g.rank() - x_term.letters();
  if (g.shape().fully_defined() && x.shape().fully_defined()) {
    std::vector<int64_t> axes;
    for (int j = 0; j < full; ++j) {
      const int xj = j - (full - width);
      if (xj < 0 || (x.shape().dim(start + xj) == 1 && g.shape().dim(start + j) != 1))
        axes.push_back(start + j);
    }
    if (!axes.empty()) g = sum(g, axes, false);
    return reshape(g, x.shape().dim_vector());
  }
  // Unknown dims: move the broadcast dims first, where reduce_to's right-aligned rule applies.
  if (start == 0) return reduce_to(g, x);
  auto front = [&](int rank, int w) {
    std::vector<int64_t> perm;
    for (int j = 0; j < w; ++j) perm.push_back(start + j);
    for (int j = 0; j < rank; ++j)
      if (j < start || j >= start + w) perm.push_back(j);
    return perm;
  };
  const std::vector<int64_t> x_perm = front(x.rank(), width);
  std::vector<int64_t> inverse(x_perm.size());
  for (size_t j = 0; j < x_perm.size(); ++j) inverse[x_perm[j]] = static_cast<int64_t>(j);
  GradTensor moved = reduce_to(transpose(g, front(g.rank(), full)), transpose(x, x_perm));
  return transpose(moved, inverse);
}

// The gradient of operand x (subscripts x_term) given dz (out_term) and the other operand y, if any.
GradTensor grad_wrt(const GradTensor& dz, const GradTensor* y, const GradTensor& x, const Term& x_term,
                    const Term* y_term, const Term& out_term) {
  using namespace gradient;
  const std::vector<int> out_letters = letters_of(out_term);
  const std::vector<int> y_letters = y_term != nullptr ? letters_of(*y_term) : std::vector<int>{};
  std::vector<int> reduced;
  for (int l : letters_of(x_term))
    if (!has(out_letters, l) && !has(y_letters, l) && !has(reduced, l)) reduced.push_back(l);
  Term left = x_term;
  for (std::vector<int>* part : {&left.before, &left.after})
    std::erase_if(*part, [&](int l) { return has(reduced, l); });
  const std::string out = subscripts(out_term), lhs = subscripts(left);
  GradTensor g = y != nullptr ? einsum(out + "," + subscripts(*y_term) + "->" + lhs, {dz, *y})
                 : out == lhs ? dz
                              : einsum(out + "->" + lhs, {dz});
  if (!reduced.empty()) {
    // dz broadcast along the summed labels: [their sizes] + shape(g), then spread onto x's layout.
    std::vector<int64_t> positions;
    for (int l : reduced) {
      auto at = std::find(x_term.before.begin(), x_term.before.end(), l);
      if (at != x_term.before.end()) {
        positions.push_back(at - x_term.before.begin());
      } else {
        const auto after = std::find(x_term.after.begin(), x_term.after.end(), l) - x_term.after.begin();
        positions.push_back(x.rank() - static_cast<int64_t>(x_term.after.size()) + after);
      }
    }
    GradTensor sizes;
    if (x.shape().fully_defined()) {
      std::vector<int64_t> dims;
      for (int64_t p : positions) dims.push_back(x.shape().dim(static_cast<int>(p)));
      sizes = int_vector(dims);
    } else {
      sizes = emit1("GatherV2", {shape_of(x), int_vector(positions), scalar(0, DType::kInt32)});
    }
    GradTensor target = emit1("ConcatV2", {sizes, shape_of(g), scalar(0, DType::kInt32)});
    std::string reduced_subs;
    for (int l : reduced) reduced_subs += letter_of(l);
    g = einsum(reduced_subs + lhs + "->" + subscripts(x_term), {emit1("BroadcastTo", {g, target})});
  }
  return unbroadcast(g, x, x_term);
}

void einsum_grad(GradContext& c) {
  auto eq = parse_equation(c.attr_string(0), c.num_inputs());
  gradient::check_ok(eq.status());
  // An operand without '...' beside an output with one ("ij,...j->...i") gets an empty one at its end, so
  // that its gradient's equation may name the output's broadcast dims (summed away again by unbroadcast).
  if (eq->output.ellipsis)
    for (Term& t : eq->inputs)
      if (!t.ellipsis) {
        t.ellipsis = true;
        t.before.insert(t.before.end(), t.after.begin(), t.after.end());
        t.after.clear();
      }
  const GradTensor dz = c.grad();
  if (c.num_inputs() == 1) {
    c.set(0, grad_wrt(dz, nullptr, c.input(0), eq->inputs[0], nullptr, eq->output));
    return;
  }
  const GradTensor x = c.input(0), y = c.input(1);
  c.set(0, grad_wrt(dz, &y, x, eq->inputs[0], &eq->inputs[1], eq->output));
  c.set(1, grad_wrt(dz, &x, y, eq->inputs[1], &eq->inputs[0], eq->output));
}

}  // namespace

void register_einsum_ops(OpRegistry& r) {
  OpBuilder("Einsum")
      .doc(
          "The contraction of one or two operands an Einstein-summation equation names: repeated labels "
          "take diagonals, labels missing from the output are summed, '...' broadcasts. "
          "einsum([[1, 2], [3, 4]], [[1], [1]], 'ij,jk->ik') == [[3], [7]]")
      .input_list("inputs")
      .output("output")
      .type_var(kEinsumTypes)
      .attr("equation", AttrType::kString)
      .shape(&einsum_shape)
      .kernel(kEinsumTypes, &einsum_kernel)
      .grad(&gradient::holomorphic_grad<&einsum_grad>)
      .batching(BatchingRule::kCustom)
      .done(r);
}

}  // namespace ember
