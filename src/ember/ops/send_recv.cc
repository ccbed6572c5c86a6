// _Send / _Recv (ops/send_recv.h). Their attributes follow TensorFlow's (tensor_name, send_device,
// recv_device) so an exported partition reads as TensorFlow's would, plus `key`, the rendezvous slot.
#include "ember/ops/send_recv.h"

#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

thread_local Rendezvous* t_rendezvous = nullptr;

// Attribute positions.
constexpr int kKey = 0;
constexpr int kRecvDType = 4, kRecvShape = 5;

Status send_shape(InferContext&) { return Status::OK(); }

Status recv_shape(InferContext& ctx) {
  auto shape = Shape::from_dims(ctx.attr_ints(kRecvShape), /*allow_unknown=*/true);
  if (!shape.ok()) return shape.status().with_prefix("_Recv: shape: ");
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(kRecvDType), *shape});
  return Status::OK();
}

Status no_rendezvous(const char* op) {
  return make_error(
      Code::kFailedPrecondition, op,
      ": runs only inside a partition of a multi-device function (no rendezvous on this thread)");
}

Status send_kernel(KernelContext& ctx) {
  Rendezvous* r = current_rendezvous();
  if (r == nullptr) return no_rendezvous("_Send");
  return r->send(ctx.attr_int(kKey), TensorRef(const_cast<TensorImpl*>(&ctx.input(0))));
}

Status recv_kernel(KernelContext& ctx) {
  Rendezvous* r = current_rendezvous();
  if (r == nullptr) return no_rendezvous("_Recv");
  auto value = r->recv(ctx.attr_int(kKey));
  if (!value.ok()) return value.status();
  // Logical CPUs share the host's memory: the receiver reads the sender's buffer (the executor writes
  // in place only over a buffer nobody else holds, so sharing it is safe).
  ctx.outputs[0] = std::move(value).value();
  return Status::OK();
}

}  // namespace

Status Rendezvous::send(int64_t key, TensorRef value) {
  if (key < 0 || key >= static_cast<int64_t>(slots_.size()))
    return make_error(Code::kInternal, "_Send: key ", key, " outside the rendezvous' ", slots_.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[key] = std::move(value);
    ready_[key] = true;
  }
  cv_.notify_all();
  return Status::OK();
}

StatusOr<TensorRef> Rendezvous::recv(int64_t key) {
  if (key < 0 || key >= static_cast<int64_t>(slots_.size()))
    return make_error(Code::kInternal, "_Recv: key ", key, " outside the rendezvous' ", slots_.size());
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ready_[key] || !aborted_.ok(); });
  if (!ready_[key]) return aborted_;
  return std::move(slots_[key]);
}

void Rendezvous::abort(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_.ok()) aborted_ = why;
  }
  cv_.notify_all();
}

void Rendezvous::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : slots_) s = TensorRef();
  std::fill(ready_.begin(), ready_.end(), false);
  aborted_ = Status::OK();
}

Rendezvous* current_rendezvous() { return t_rendezvous; }
RendezvousScope::RendezvousScope(Rendezvous* r) : previous_(t_rendezvous) { t_rendezvous = r; }
RendezvousScope::~RendezvousScope() { t_rendezvous = previous_; }

void register_send_recv_ops(OpRegistry& r) {
  OpBuilder("_Send")
      .doc(
          "Hands a tensor to the _Recv of the same key in another partition of a multi-device function "
          "(created by the partitioner). _Send(x, key=0)")
      .input("tensor")
      .type_var(kAllTypesAndComplex)
      .attr("key", AttrType::kInt)
      .attr("tensor_name", AttrType::kString)
      .attr("send_device", AttrType::kString)
      .attr("recv_device", AttrType::kString)
      .dispatch_on_input(0)
      .flags(kStateful | kNotDifferentiable)
      .shape(&send_shape)
      .kernel(kAllTypesAndComplex, &send_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("_Recv")
      .doc(
          "The tensor the _Send of the same key handed over, waiting for it (created by the partitioner). "
          "_Recv(key=0, tensor_type=float32, shape=[2]) -> the sent [2] tensor")
      .output("tensor")
      .type_var(kAllTypesAndComplex)
      .attr("key", AttrType::kInt)
      .attr("tensor_name", AttrType::kString)
      .attr("send_device", AttrType::kString)
      .attr("recv_device", AttrType::kString)
      .attr("tensor_type", AttrType::kDType)
      .attr("shape", AttrType::kInts, std::vector<int64_t>{})
      .dispatch_on_output()
      .flags(kStateful | kKernelAllocates | kNotDifferentiable)
      .shape(&recv_shape)
      .kernel(kAllTypesAndComplex, &recv_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
