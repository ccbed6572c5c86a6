// DatasetIteratorCreate / Next / Delete (ops/dataset.h).
#include "ember/ops/dataset.h"

#include <cstring>

#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

DatasetHooks& hooks() {
  static DatasetHooks h;
  return h;
}

Status no_runtime(const char* op) {
  return make_error(Code::kFailedPrecondition, op, ": no dataset runtime (import ember.data)");
}

StatusOr<int64_t> scalar_handle(const char* op, const TensorImpl& t) {
  if (t.rank() != 0)
    return invalid_argument(op, ": the handle must be an int64 scalar, got shape ", t.shape().to_string());
  return t.data<int64_t>()[0];
}

Status scalar_int64_shape(InferContext& ctx) {
  const TensorSpec& in = ctx.inputs[0];
  if (in.shape.rank_known() && in.shape.rank() != 0)
    return invalid_argument(ctx.op->name, ": expected an int64 scalar, got shape ", in.shape.to_string());
  return Status::OK();
}

Status create_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(scalar_int64_shape(ctx));
  ctx.outputs.push_back({DType::kInt64, Shape()});
  return Status::OK();
}

Status create_kernel(KernelContext& ctx) {
  if (hooks().create == nullptr) return no_runtime("DatasetIteratorCreate");
  auto id = scalar_handle("DatasetIteratorCreate", ctx.input(0));
  if (!id.ok()) return id.status();
  auto handle = hooks().create(*id);
  if (!handle.ok()) return handle.status();
  ctx.output(0).mutable_data<int64_t>()[0] = *handle;
  return Status::OK();
}

// output_shapes holds, per component, its rank (-1: unknown) followed by its dims (-1: unknown).
StatusOr<std::vector<TensorSpec>> component_specs(const AttrReader& attrs, const std::string& op) {
  const std::vector<int64_t>& types = attrs.attr_ints(0);
  const std::vector<int64_t>& shapes = attrs.attr_ints(1);
  std::vector<TensorSpec> specs;
  size_t at = 0;
  for (int64_t type : types) {
    if (type < 0 || type >= kNumDTypes)
      return invalid_argument(op, ": output_types holds ", type, ", not a dtype");
    if (at >= shapes.size())
      return invalid_argument(op, ": output_shapes is shorter than output_types needs");
    int64_t rank = shapes[at++];
    TensorSpec spec{static_cast<DType>(type), Shape::unknown_rank()};
    if (rank >= 0) {
      if (rank > 64 || at + static_cast<size_t>(rank) > shapes.size())
        return invalid_argument(op, ": output_shapes names a rank of ", rank, " that it does not hold");
      std::vector<int64_t> dims(shapes.begin() + static_cast<std::ptrdiff_t>(at),
                                shapes.begin() + static_cast<std::ptrdiff_t>(at + rank));
      at += static_cast<size_t>(rank);
      for (int64_t& d : dims)
        if (d < 0) d = kUnknownDim;
      auto shape = Shape::from_dims(dims, /*allow_unknown=*/true);
      if (!shape.ok()) return shape.status().with_prefix(op + ": ");
      spec.shape = *shape;
    }
    specs.push_back(spec);
  }
  if (at != shapes.size()) return invalid_argument(op, ": output_shapes is longer than output_types needs");
  return specs;
}

Status next_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(scalar_int64_shape(ctx));
  auto specs = component_specs(ctx, ctx.op->name);
  if (!specs.ok()) return specs.status();
  ctx.outputs.push_back({DType::kBool, Shape()});
  for (const TensorSpec& s : *specs) ctx.outputs.push_back(s);
  return Status::OK();
}

// At the end the components are zeros of the spec's shape (unknown dims 0): a While that carries them as
// loop variables needs values, and its condition stops the loop before anything reads them.
StatusOr<TensorRef> placeholder_value(const TensorSpec& spec) {
  std::vector<int64_t> dims = spec.shape.rank_known() ? spec.shape.dim_vector() : std::vector<int64_t>{0};
  for (int64_t& d : dims)
    if (d < 0) d = 0;
  auto t = TensorImpl::allocate(spec.dtype, Shape(std::span<const int64_t>(dims)));
  if (!t.ok()) return t.status();
  if ((*t)->nbytes() > 0) std::memset((*t)->mutable_raw_data(), 0, (*t)->nbytes());
  return t;
}

Status next_kernel(KernelContext& ctx) {
  const char* op = "DatasetIteratorNext";
  if (hooks().next == nullptr) return no_runtime(op);
  auto specs = component_specs(ctx, op);
  if (!specs.ok()) return specs.status();
  auto handle = scalar_handle(op, ctx.input(0));
  if (!handle.ok()) return handle.status();
  std::vector<TensorRef> components;
  auto more = hooks().next(*handle, components);
  if (!more.ok()) return more.status();
  if (!*more && ctx.attr_bool(2)) return make_error(Code::kOutOfRange, "End of sequence");
  auto flag = TensorImpl::allocate(DType::kBool, Shape());
  if (!flag.ok()) return flag.status();
  (*flag)->mutable_data<bool>()[0] = *more;
  ctx.outputs[0] = std::move(flag).value();
  if (*more && components.size() != specs->size())
    return invalid_argument(op, ": the dataset gave ", components.size(), " components, expected ",
                            specs->size());
  for (size_t i = 0; i < specs->size(); ++i) {
    const TensorSpec& spec = (*specs)[i];
    if (!*more) {
      auto zeros = placeholder_value(spec);
      if (!zeros.ok()) return zeros.status();
      ctx.outputs[1 + i] = std::move(zeros).value();
      continue;
    }
    const TensorImpl& t = *components[i];
    if (t.dtype() != spec.dtype || !spec.shape.is_compatible_with(t.shape()))
      return invalid_argument(op, ": component ", i, " should be ", dtype_name(spec.dtype), " ",
                              spec.shape.to_string(), ", got ", dtype_name(t.dtype()), " ",
                              t.shape().to_string());
    ctx.outputs[1 + i] = std::move(components[i]);
  }
  return Status::OK();
}

Status delete_shape(InferContext& ctx) { return scalar_int64_shape(ctx); }

Status delete_kernel(KernelContext& ctx) {
  if (hooks().release == nullptr) return no_runtime("DatasetIteratorDelete");
  auto handle = scalar_handle("DatasetIteratorDelete", ctx.input(0));
  if (!handle.ok()) return handle.status();
  return hooks().release(*handle);
}

}  // namespace

void set_dataset_hooks(DatasetHooks h) { hooks() = h; }

void register_dataset_ops(OpRegistry& r) {
  const DTypeSet kInt64 = dtype_bit(DType::kInt64);
  OpBuilder("DatasetIteratorCreate")
      .doc(
          "A new iterator over the tf.data dataset registered as `dataset` (a function's `for x in ds`). "
          "DatasetIteratorCreate(7) -> 1")
      .input_fixed("dataset", kInt64)
      .output("handle")
      .dispatch_on_input(0)
      .flags(kStateful | kNotDifferentiable)
      .shape(&create_shape)
      .kernel(kInt64, &create_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("DatasetIteratorNext")
      .doc(
          "(has_value, components...) of the iterator's next element; zeros after the end (or "
          "OutOfRangeError "
          "with end_is_error). "
          "DatasetIteratorNext(h, output_types=[9], output_shapes=[0]) -> (True, 0)")
      .input_fixed("handle", kInt64)
      .output("outputs")
      .attr("output_types", AttrType::kInts)
      .attr("output_shapes", AttrType::kInts)
      .attr("end_is_error", AttrType::kBool, false)  // next(it): the end is OutOfRangeError, as TensorFlow's
      .dispatch_on_input(0)
      .flags(kStateful | kNotDifferentiable | kKernelAllocates)
      .shape(&next_shape)
      .kernel(kInt64, &next_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("DatasetIteratorDelete")
      .doc("Drops the iterator (stopping its threads). DatasetIteratorDelete(h)")
      .input_fixed("handle", kInt64)
      .dispatch_on_input(0)
      .flags(kStateful | kNotDifferentiable)
      .shape(&delete_shape)
      .kernel(kInt64, &delete_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
