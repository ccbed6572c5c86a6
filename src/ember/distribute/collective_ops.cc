// TensorFlow's collective ops on the process's Communicator (communicator.h): CollectiveReduceV2,
// CollectiveGatherV2, CollectiveBcastSendV2 and CollectiveBcastRecvV2, with TensorFlow's operands
// (group_size, group_key, instance_key as int32 tensors) and attributes (merge_op, final_op,
// communication_hint, timeout_seconds). They are stateful, so a function keeps them in program order and
// every process issues its collectives in the same order, as the peers must.
//
// Note [Collective groups]
// A group here spans every process of the default communicator (one replica per process, as
// MultiWorkerMirroredStrategy on CPU places them), or is a group of one, which needs no communicator: a
// single process runs the same program unchanged. A group of any other size is refused. The group key only
// separates tags; the instance key is the Gloo tag, so collectives with different instance keys may be in
// flight at once (TensorFlow's rule: an instance key is unique among the collectives running together).
//
// Note [Overlapping collectives]
// DDP's overlap: a bucket of gradients is all-reduced while the backward pass computes the gradients of
// the layers before it. _CollectiveReduceStart copies its input and queues the all-reduce on the
// communicator's collective thread (communicator.h), returning a handle at once; _CollectiveReduceDone
// waits for that handle and returns the reduced value. Start is flagged kScheduleEarly, so the optimizer
// places it right after the nodes it needs (passes/schedule.cc) rather than where the trace created it
// (after the whole backward pass, where an optimizer's apply_gradients asks for the reduction), and
// the thread runs the reduction while the plan goes on with the rest of the backward pass. Both ops are
// stateful, so every worker queues its collectives in program order and the thread, running them one at
// a time in queue order, matches them across workers. A handle is waited for once; one never waited
// for (its function failed between the two) keeps its entry and buffer for the life of the process.
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "ember/distribute/communicator.h"
#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

using distribute::Communicator;

constexpr DTypeSet kReduceTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64) |
                                  dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);
constexpr DTypeSet kInt32Only = dtype_bit(DType::kInt32);

struct GroupCall {
  int64_t group_size = 1;
  std::shared_ptr<Communicator> communicator;  // null for a group of one
  uint32_t tag = 0;
  double timeout = 0;
};

int64_t scalar_of(const TensorImpl& t) { return t.num_elements() == 1 ? t.data<int32_t>()[0] : -1; }

// The group operands start at input `first` (group_size, group_key, instance_key).
StatusOr<GroupCall> group_call(const KernelContext& ctx, int first, double timeout) {
  GroupCall call;
  for (int i = 0; i < 3; ++i)
    if (ctx.input(first + i).num_elements() != 1)
      return invalid_argument(ctx.op->name, ": ", ctx.op->inputs[first + i].name,
                              " must be a scalar, got shape ", ctx.input(first + i).shape().to_string());
  call.group_size = scalar_of(ctx.input(first));
  const int64_t group_key = scalar_of(ctx.input(first + 1));
  const int64_t instance_key = scalar_of(ctx.input(first + 2));
  call.timeout = timeout;
  if (call.group_size < 1)
    return invalid_argument(ctx.op->name, ": group_size must be at least 1, got ", call.group_size);
  if (call.group_size == 1) return call;
  call.communicator = distribute::default_communicator();
  if (call.communicator == nullptr)
    return make_error(
        Code::kFailedPrecondition, ctx.op->name, ": group_size is ", call.group_size,
        " but this process has joined no group of workers: create a MultiWorkerMirroredStrategy "
        "or call ember.distribute.experimental.collective.initialize() first");
  if (call.group_size != call.communicator->size())
    return make_error(Code::kUnimplemented, ctx.op->name, ": group_size must be 1 or the number of workers (",
                      call.communicator->size(), "), got ", call.group_size,
                      " (a group spans every worker process; Note [Collective groups])");
  call.tag = static_cast<uint32_t>(instance_key) ^ (static_cast<uint32_t>(group_key) * 2654435761u);
  return call;
}

double timeout_attr(const KernelContext& ctx, int index) { return ctx.attr_float(index); }

template <typename T>
void divide_by(TensorImpl& t, int64_t n) {
  T* p = t.mutable_data<T>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(n));
}

// ---- CollectiveReduceV2(input, group_size, group_key, instance_key); attrs merge_op, final_op,
//      communication_hint, timeout_seconds.

Status reduce_shape(InferContext& ctx) {
  auto merge = distribute::parse_merge_op(ctx.attr_string(0));
  if (!merge.ok()) return invalid_argument(ctx.op->name, ": ", merge.status().message());
  const std::string& final_op = ctx.attr_string(1);
  if (final_op != "Id" && final_op != "Div")
    return invalid_argument(ctx.op->name, ": final_op must be \"Id\" or \"Div\", got \"", final_op, "\"");
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status reduce_kernel(KernelContext& ctx) {
  auto call = group_call(ctx, 1, timeout_attr(ctx, 3));
  EMBER_RETURN_IF_ERROR(call.status());
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  if (call->communicator) {
    auto merge = distribute::parse_merge_op(ctx.attr_string(0));
    EMBER_RETURN_IF_ERROR(merge.status());
    Status s = call->communicator->all_reduce(in.raw_data(), out.mutable_raw_data(), out.num_elements(),
                                              out.dtype(), *merge, call->tag, call->timeout);
    if (!s.ok()) return make_error(s.code(), ctx.op->name, ": ", s.message());
  } else if (in.nbytes() != 0) {
    std::memcpy(out.mutable_raw_data(), in.raw_data(), in.nbytes());
  }
  if (ctx.attr_string(1) == "Div" && call->group_size > 1)
    visit_dtype<kReduceTypes>(out.dtype(), [&]<typename T>() { divide_by<T>(out, call->group_size); });
  return Status::OK();
}

// ---- _CollectiveReduceStart(input, group_size, group_key, instance_key) -> handle; attrs merge_op,
//      final_op, communication_hint, timeout_seconds. _CollectiveReduceDone(handle, input) -> data.
//      Note [Overlapping collectives].

struct InFlight {
  std::shared_ptr<distribute::PendingCollective> pending;
  int64_t group_size = 1;
  bool divide = false;
  DType dtype = DType::kFloat32;
  int64_t count = 0;
};

class InFlightTable {
 public:
  int64_t add(InFlight entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t handle = next_++;
    entries_.emplace(handle, std::move(entry));
    return handle;
  }
  bool take(int64_t handle, InFlight& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(handle);
    if (it == entries_.end()) return false;
    out = std::move(it->second);
    entries_.erase(it);
    return true;
  }

 private:
  std::mutex mutex_;
  int64_t next_ = 1;  // 0: a group of one, nothing in flight
  std::unordered_map<int64_t, InFlight> entries_;
};

InFlightTable& in_flight() {
  static auto* table = new InFlightTable();
  return *table;
}

Status start_shape(InferContext& ctx) {
  auto merge = distribute::parse_merge_op(ctx.attr_string(0));
  if (!merge.ok()) return invalid_argument(ctx.op->name, ": ", merge.status().message());
  const std::string& final_op = ctx.attr_string(1);
  if (final_op != "Id" && final_op != "Div")
    return invalid_argument(ctx.op->name, ": final_op must be \"Id\" or \"Div\", got \"", final_op, "\"");
  ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape()});  // a scalar handle
  return Status::OK();
}

Status start_kernel(KernelContext& ctx) {
  auto call = group_call(ctx, 1, timeout_attr(ctx, 3));
  EMBER_RETURN_IF_ERROR(call.status());
  int64_t handle = 0;
  if (call->communicator) {
    auto merge = distribute::parse_merge_op(ctx.attr_string(0));
    EMBER_RETURN_IF_ERROR(merge.status());
    const TensorImpl& in = ctx.input(0);
    InFlight entry;
    entry.group_size = call->group_size;
    entry.divide = ctx.attr_string(1) == "Div";
    entry.dtype = in.dtype();
    entry.count = in.num_elements();
    entry.pending = call->communicator->start_all_reduce(in.raw_data(), in.num_elements(), in.dtype(), *merge,
                                                         call->tag, call->timeout);
    handle = in_flight().add(std::move(entry));
  }
  ctx.output(0).mutable_data<int64_t>()[0] = handle;
  return Status::OK();
}

Status done_shape(InferContext& ctx) {
  const Shape& handle = ctx.inputs[0].shape;
  if (handle.rank_known() && handle.rank() != 0)
    return invalid_argument(ctx.op->name,
                            ": handle must be a scalar (a _CollectiveReduceStart's result), got ",
                            handle.to_string());
  ctx.outputs.push_back(ctx.inputs[1]);
  return Status::OK();
}

Status done_kernel(KernelContext& ctx) {
  const TensorImpl& handle_tensor = ctx.input(0);
  if (handle_tensor.num_elements() != 1)
    return invalid_argument(ctx.op->name, ": handle must be a scalar, got shape ",
                            handle_tensor.shape().to_string());
  const int64_t handle = handle_tensor.data<int64_t>()[0];
  const TensorImpl& in = ctx.input(1);
  TensorImpl& out = ctx.output(0);
  if (handle == 0) {  // a group of one: the value is its own reduction
    if (in.nbytes() != 0) std::memcpy(out.mutable_raw_data(), in.raw_data(), in.nbytes());
    return Status::OK();
  }
  InFlight entry;
  if (!in_flight().take(handle, entry))
    return invalid_argument(ctx.op->name, ": no all-reduce in flight has handle ", handle,
                            " (each _CollectiveReduceStart's handle is waited for once)");
  if (entry.dtype != in.dtype() || entry.count != in.num_elements())
    return invalid_argument(ctx.op->name, ": handle ", handle, " reduces ", entry.count, " elements of ",
                            dtype_name(entry.dtype), ", but input has ", in.num_elements(), " of ",
                            dtype_name(in.dtype()));
  Status s = entry.pending->wait(out.mutable_raw_data(), out.nbytes());
  if (!s.ok()) return make_error(s.code(), ctx.op->name, ": ", s.message());
  if (entry.divide)
    visit_dtype<kReduceTypes>(out.dtype(), [&]<typename T>() { divide_by<T>(out, entry.group_size); });
  return Status::OK();
}

// ---- CollectiveGatherV2(input, group_size, group_key, instance_key): every rank's input concatenated
//      along dimension 0, in rank order; attrs communication_hint, timeout_seconds.

Status gather_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  if (in.rank_known() && in.rank() == 0)
    return invalid_argument(ctx.op->name, ": input must have rank at least 1, got a scalar");
  Shape out = in;
  if (in.rank_known()) {
    const TensorImpl* size = ctx.constant(1);
    const int64_t n = size != nullptr && size->num_elements() == 1 ? size->data<int32_t>()[0] : -1;
    out.set_dim(0, n > 0 && in.dim(0) >= 0 ? in.dim(0) * n : -1);
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status gather_kernel(KernelContext& ctx) {
  auto call = group_call(ctx, 1, timeout_attr(ctx, 1));
  EMBER_RETURN_IF_ERROR(call.status());
  const TensorImpl& in = ctx.input(0);
  if (in.rank() == 0)
    return invalid_argument(ctx.op->name, ": input must have rank at least 1, got a scalar");
  Shape shape = in.shape();
  shape.set_dim(0, in.shape().dim(0) * call->group_size);
  auto allocated = TensorImpl::allocate(in.dtype(), shape);
  EMBER_RETURN_IF_ERROR(allocated.status());
  TensorRef out = std::move(allocated).value();
  if (!call->communicator) {
    if (in.nbytes() != 0) std::memcpy(out->mutable_raw_data(), in.raw_data(), in.nbytes());
  } else {
    // Every rank must send as many bytes: agree on the size first, so a mismatch is an error, not a hang.
    int64_t sizes[2] = {static_cast<int64_t>(in.nbytes()), -static_cast<int64_t>(in.nbytes())};
    Status s = call->communicator->all_reduce(sizes, sizes, 2, DType::kInt64, distribute::ReduceOp::kMax,
                                              call->tag, call->timeout);
    if (s.ok() && sizes[0] != -sizes[1])
      s = invalid_argument("every worker must gather a tensor of the same shape; this worker's is ",
                           in.shape().to_string(), " and the sizes differ between ", -sizes[1], " and ",
                           sizes[0], " bytes");
    if (s.ok())
      s = call->communicator->all_gather(in.raw_data(), out->mutable_raw_data(), in.nbytes(), call->tag,
                                         call->timeout);
    if (!s.ok()) return make_error(s.code(), ctx.op->name, ": ", s.message());
  }
  ctx.outputs[0] = std::move(out);
  return Status::OK();
}

// ---- CollectiveBcastSendV2(input, group_size, group_key, instance_key) and
//      CollectiveBcastRecvV2(group_size, group_key, instance_key, shape; T). The receivers do not name the
//      sender, so the group first agrees on who sends and how many bytes (one small all-reduce).

Status bcast(const KernelContext& ctx, const GroupCall& call, void* data, int64_t bytes, bool sending) {
  Communicator& comm = *call.communicator;
  int64_t header[3] = {sending ? 1 : 0, sending ? comm.rank() : 0, sending ? bytes : 0};
  Status s =
      comm.all_reduce(header, header, 3, DType::kInt64, distribute::ReduceOp::kSum, call.tag, call.timeout);
  if (s.ok() && header[0] != 1)
    s = invalid_argument("a broadcast needs exactly one sender in the group, got ", header[0]);
  if (s.ok() && header[2] != bytes)
    s = invalid_argument("the receiver expects ", bytes, " bytes but the sender (rank ", header[1],
                         ") sends ", header[2]);
  if (s.ok()) s = comm.broadcast(data, bytes, static_cast<int>(header[1]), call.tag, call.timeout);
  if (!s.ok()) return make_error(s.code(), ctx.op->name, ": ", s.message());
  return Status::OK();
}

Status send_shape(InferContext& ctx) {
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status send_kernel(KernelContext& ctx) {
  auto call = group_call(ctx, 1, timeout_attr(ctx, 1));
  EMBER_RETURN_IF_ERROR(call.status());
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  if (in.nbytes() != 0) std::memcpy(out.mutable_raw_data(), in.raw_data(), in.nbytes());
  if (!call->communicator) return Status::OK();
  return bcast(ctx, *call, out.mutable_raw_data(), static_cast<int64_t>(out.nbytes()), true);
}

Status recv_shape(InferContext& ctx) {
  const DType dtype = ctx.attr_dtype(0);
  if (!(kAllTypes & dtype_bit(dtype)))
    return invalid_argument(ctx.op->name, ": T must be a numeric or bool dtype, got ", dtype_name(dtype));
  auto shape = ctx.shape_operand(3);
  EMBER_RETURN_IF_ERROR(shape.status());
  ctx.outputs.push_back(TensorSpec{dtype, *shape});
  return Status::OK();
}

Status recv_kernel(KernelContext& ctx) {
  auto call = group_call(ctx, 0, timeout_attr(ctx, 2));
  EMBER_RETURN_IF_ERROR(call.status());
  if (!call->communicator)
    return invalid_argument(ctx.op->name, ": a group of one has no sender to receive from");
  TensorImpl& out = ctx.output(0);
  return bcast(ctx, *call, out.mutable_raw_data(), static_cast<int64_t>(out.nbytes()), false);
}

}  // namespace

void register_collective_ops(OpRegistry& r) {
  OpBuilder("CollectiveReduceV2")
      .doc(
          "Reduces input across the workers' group (merge_op Add|Mul|Min|Max, then final_op Id|Div by the "
          "group size). CollectiveReduceV2([1., 2.], group_size=1, group_key=1, instance_key=1) -> [1. 2.]")
      .input("input")
      .input_fixed("group_size", kInt32Only)
      .input_fixed("group_key", kInt32Only)
      .input_fixed("instance_key", kInt32Only)
      .output("data")
      .type_var(kReduceTypes)
      .attr("merge_op", AttrType::kString, std::string("Add"))
      .attr("final_op", AttrType::kString, std::string("Id"))
      .attr("communication_hint", AttrType::kString, std::string("auto"))
      .attr("timeout_seconds", AttrType::kFloat, 0.0)
      .flags(kStateful | kNotDifferentiable)
      .shape(&reduce_shape)
      .kernel(kReduceTypes, &reduce_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("_CollectiveReduceStart")
      .doc(
          "Starts reducing input across the workers' group on the collective thread and returns a handle for "
          "_CollectiveReduceDone (Note [Overlapping collectives]); a group of one gives 0. "
          "_CollectiveReduceStart([1., 2.], group_size=1, group_key=1, instance_key=1) -> 0")
      .input("input")
      .input_fixed("group_size", kInt32Only)
      .input_fixed("group_key", kInt32Only)
      .input_fixed("instance_key", kInt32Only)
      .output("handle")
      .type_var(kReduceTypes)
      .attr("merge_op", AttrType::kString, std::string("Add"))
      .attr("final_op", AttrType::kString, std::string("Id"))
      .attr("communication_hint", AttrType::kString, std::string("auto"))
      .attr("timeout_seconds", AttrType::kFloat, 0.0)
      .flags(kStateful | kNotDifferentiable | kScheduleEarly)
      .shape(&start_shape)
      .kernel(kReduceTypes, &start_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("_CollectiveReduceDone")
      .doc(
          "Waits for the all-reduce a _CollectiveReduceStart began and returns its result (input gives the "
          "shape and dtype; handle 0 returns input). _CollectiveReduceDone(0, [1., 2.]) -> [1. 2.]")
      .input_fixed("handle", dtype_bit(DType::kInt64))
      .input("input")
      .output("data")
      .type_var(kReduceTypes)
      .flags(kStateful | kNotDifferentiable)
      .dispatch_on_input(1)
      .shape(&done_shape)
      .kernel(kReduceTypes, &done_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("CollectiveGatherV2")
      .doc(
          "Concatenates every worker's input along dimension 0, in worker order. "
          "CollectiveGatherV2([[1., 2.]], group_size=1, group_key=1, instance_key=1) -> [[1. 2.]]")
      .input("input")
      .input_fixed("group_size", kInt32Only)
      .input_fixed("group_key", kInt32Only)
      .input_fixed("instance_key", kInt32Only)
      .output("data")
      .type_var(kAllTypes)
      .attr("communication_hint", AttrType::kString, std::string("auto"))
      .attr("timeout_seconds", AttrType::kFloat, 0.0)
      .flags(kStateful | kNotDifferentiable | kKernelAllocates)
      .shape(&gather_shape)
      .kernel(kAllTypes, &gather_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("CollectiveBcastSendV2")
      .doc(
          "Sends input to every worker of the group (each receives it with CollectiveBcastRecvV2) and "
          "returns "
          "it. CollectiveBcastSendV2([1., 2.], group_size=1, group_key=1, instance_key=1) -> [1. 2.]")
      .input("input")
      .input_fixed("group_size", kInt32Only)
      .input_fixed("group_key", kInt32Only)
      .input_fixed("instance_key", kInt32Only)
      .output("data")
      .type_var(kAllTypes)
      .attr("communication_hint", AttrType::kString, std::string("auto"))
      .attr("timeout_seconds", AttrType::kFloat, 0.0)
      .flags(kStateful | kNotDifferentiable)
      .shape(&send_shape)
      .kernel(kAllTypes, &send_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("CollectiveBcastRecvV2")
      .doc(
          "Receives the tensor of dtype T and the given shape that one worker of the group sends with "
          "CollectiveBcastSendV2. CollectiveBcastRecvV2(group_size=2, group_key=1, instance_key=1, "
          "shape=[2], "
          "T=float32) -> the sender's [2] tensor")
      .input_fixed("group_size", kInt32Only)
      .input_fixed("group_key", kInt32Only)
      .input_fixed("instance_key", kInt32Only)
      .input_shape_like("shape")
      .output("data")
      .type_var(kAllTypes)
      .attr("T", AttrType::kDType, DType::kFloat32)
      .attr("communication_hint", AttrType::kString, std::string("auto"))
      .attr("timeout_seconds", AttrType::kFloat, 0.0)
      .flags(kStateful | kNotDifferentiable)
      .dispatch_on_output()
      .shape(&recv_shape)
      .kernel(kAllTypes, &recv_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
