#include "ember/autodiff/tape.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <unordered_map>

#include "ember/autodiff/tape_internal.h"
#include "ember/core/resource.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"
#include "ember/trace/trace_context.h"

namespace ember::autodiff {
namespace {

// Note [Tape slots and generations] in tape.h.
constexpr int kSlots = 32;
std::atomic<uint32_t> g_used_bits{0};
std::atomic<uint64_t> g_slot_generation[kSlots];  // bumped each time the slot is taken
std::atomic<int> g_next_slot{0};  // slots are handed out in turn, so a freed one stays free for a while
std::atomic<uint64_t> g_serial{1};

int slot_of(uint32_t bit) { return std::countr_zero(bit); }

const OpDef& read_variable_op() {
  static const OpDef& op = op_def("ReadVariableOp");
  return op;
}
const OpDef& call_op() {
  static const OpDef& op = op_def("PartitionedCall");
  return op;
}

// Deleting a long chain of nodes recursively (node -> saved input -> its node -> ...) would overflow the
// stack; nested deletions park what they release here and the outermost one drains it.
struct DeferredRelease {
  int depth = 0;
  std::vector<GradNodeBase*> nodes;
  std::vector<TensorImpl*> tensors;
};
thread_local DeferredRelease t_deferred;

/// The tapes recording on this thread; installed as the op recorder while any is.
class TapeState final : public OpRecorder {
 public:
  std::vector<Tape*> recording;
  uint32_t mask = 0;

  void update() {
    mask = 0;
    for (Tape* t : recording) mask |= t->bit();
    set_current_recorder(mask != 0 ? this : nullptr);
  }

  Status execute(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
                 OutputList& outputs) override;
};
thread_local TapeState t_state;

bool has_differentiable_output(const OutputList& outputs) {
  for (const TensorRef& r : outputs)
    if (is_differentiable_dtype(r->dtype())) return true;
  return false;
}

Status TapeState::execute(const OpDef& op, std::span<TensorImpl* const> inputs,
                          std::span<const AttrValue> attrs, OutputList& outputs) {
  if (&op == &call_op()) return internal::execute_function_call(op, inputs, attrs, outputs);
  if (calls_functions(op)) return internal::execute_control_flow(op, inputs, attrs, outputs);
  EMBER_RETURN_IF_ERROR(execute_op_unrecorded(op, inputs, attrs, outputs));
  internal::record_op(op, inputs, attrs, outputs);
  return Status::OK();
}

}  // namespace

namespace internal {

uint32_t active_mask() { return t_state.mask; }

uint32_t recording_mask(const TensorImpl* t) {
  if (t->tape_mask() == 0) return 0;  // no tape ever watched or recorded it: the common case
  uint32_t m = 0;
  for (const Tape* tape : t_state.recording)
    if (tape->claims(t)) m |= tape->bit();
  return m;
}

void record_op(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
               OutputList& outputs) {
  if (t_state.mask == 0) return;
  SmallVector<uint32_t, 4> input_masks;
  uint32_t in_mask = 0;
  for (TensorImpl* t : inputs) {
    input_masks.push_back(recording_mask(t));
    in_mask |= input_masks.back();
  }
  int64_t variable = 0;
  if (&op == &read_variable_op()) {
    variable = std::get<int64_t>(attrs[0]);
    in_mask |= variable_mask(variable);
  }
  if (in_mask == 0 || op.has_flag(kNotDifferentiable) || (op.grad == nullptr && variable == 0) ||
      !has_differentiable_output(outputs))
    return;
  auto* node = new TapeNode();
  node->op = &op;
  for (const AttrValue& a : attrs) node->attrs.push_back(a);
  node->variable_id = variable;
  node->mask = in_mask;
  node->serial = next_serial();
  for (size_t i = 0; i < inputs.size(); ++i) {
    node->inputs.push_back(TensorRef(inputs[i]));
    node->edges.push_back(
        Edge(input_masks[i] != 0 ? inputs[i]->grad_node() : nullptr, inputs[i]->grad_output()));
  }
  link_outputs(node, {outputs.data(), outputs.size()});
}

uint64_t next_serial() { return g_serial.fetch_add(1, std::memory_order_relaxed); }

uint32_t variable_mask(int64_t id) {
  uint32_t m = 0;
  int trainable = -1;  // looked up once, only if a tape needs it
  for (Tape* t : t_state.recording) {
    if (t->watches_variable(id)) {
      m |= t->bit();
      continue;
    }
    if (t->watches_all_variables()) {
      t->watch_variable(id);
      m |= t->bit();
      continue;
    }
    if (!t->watch_accessed_variables()) continue;
    if (trainable < 0) {
      auto resource = ResourceManager::global().find(id, "ReadVariableOp");
      trainable = resource.ok() && (*resource)->trainable() ? 1 : 0;
    }
    if (trainable) {
      t->watch_variable(id);
      m |= t->bit();
    }
  }
  return m;
}

void link_outputs(TapeNode* node, std::span<TensorRef> outputs, bool link_held_tensors) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    // Only a tensor nobody else holds is linked in place. A function may return a tensor it was given (or
    // the same one twice), an op may hand out its input, and a plan returns its constants: linking those
    // would move another tensor's link, or make a cached plan hold this node (and the node its function,
    // a cycle that never frees). A fresh alias is linked instead.
    bool held = !link_held_tensors && outputs[i]->refcount() > 1;
    if (outputs[i]->grad_node() != nullptr || held) {
      TensorRef original = std::move(outputs[i]);
      outputs[i] = TensorImpl::alias(*original);
      // A value folded while tracing stays one of the trace under its new name.
      if (TraceContext* trace = TraceContext::current(); trace != nullptr && !original->is_symbolic())
        trace->note_alias(original.get(), outputs[i].get());
    }
    TensorImpl* out = outputs[i].get();
    node->outputs.push_back(TensorImpl::alias(*out));
    if (!is_differentiable_dtype(out->dtype())) continue;
    out->set_grad_link(node, static_cast<int32_t>(i));
    out->set_tape_mask(node->mask);
  }
  node->unref();  // the outputs hold it now (or nothing does, and it goes)
}

// A fresh alias of a node's output that points back at the node, so that a rule reading the output is
// recorded by outer tapes as depending on it (second derivatives through tanh's y, exp's y, ...).
TensorRef relinked_output(const TapeNode& node, int32_t i) {
  TensorRef alias = TensorImpl::alias(*node.outputs[i]);
  if (is_differentiable_dtype(alias->dtype())) {
    alias->set_grad_link(const_cast<TapeNode*>(&node), i);
    alias->set_tape_mask(node.mask);
  }
  return alias;
}

Edge input_edge(TensorImpl* t, uint32_t mask) {
  return Edge((recording_mask(t) & mask) ? t->grad_node() : nullptr, t->grad_output());
}

Edge variable_edge(int64_t id, uint32_t mask) {
  if (mask == 0) return Edge();
  auto* read = new TapeNode();
  read->op = &read_variable_op();
  read->variable_id = id;
  read->mask = mask;
  read->serial = next_serial();
  Edge edge(read, 0);
  read->unref();  // the edge holds it
  return edge;
}

}  // namespace internal

Edge::~Edge() {
  if (node_ == nullptr) return;
  if (t_deferred.depth > 0) {
    t_deferred.nodes.push_back(node_);
  } else {
    node_->unref();
  }
}

TapeNode* Edge::node() const { return static_cast<TapeNode*>(node_); }

TapeNode::~TapeNode() {
  ++t_deferred.depth;
  for (TensorRef& t : inputs)
    if (t) t_deferred.tensors.push_back(t.release());
  edges.clear();  // parks the nodes (depth > 0)
  --t_deferred.depth;
  if (t_deferred.depth > 0) return;
  ++t_deferred.depth;
  while (!t_deferred.nodes.empty() || !t_deferred.tensors.empty()) {
    if (!t_deferred.tensors.empty()) {
      TensorImpl* t = t_deferred.tensors.back();
      t_deferred.tensors.pop_back();
      t->unref();
    } else {
      GradNodeBase* n = t_deferred.nodes.back();
      t_deferred.nodes.pop_back();
      n->unref();
    }
  }
  --t_deferred.depth;
}

bool recording_active() { return t_state.mask != 0; }

RecordingPause::RecordingPause() : saved_(std::move(t_state.recording)) {
  t_state.recording.clear();
  t_state.update();
}
RecordingPause::~RecordingPause() {
  t_state.recording = std::move(saved_);
  t_state.update();
}

StatusOr<std::unique_ptr<Tape>> Tape::create(bool persistent, bool watch_accessed_variables) {
  return std::unique_ptr<Tape>(new Tape(persistent, watch_accessed_variables));
}

Tape::Tape(bool persistent, bool watch_accessed) : persistent_(persistent), watch_accessed_(watch_accessed) {}

Tape::~Tape() {
  if (pushed_) pop();
}

Status Tape::push() {
  if (pushed_) return Status::OK();
  // The slot of the last span again when nobody held it since: that span goes on (one span, not two).
  if (!spans_.empty()) {
    Span& last = spans_.back();
    const int slot = slot_of(last.bit);
    uint32_t used = g_used_bits.load();
    if ((used & last.bit) == 0 && g_slot_generation[slot].load() == last.generation &&
        g_used_bits.compare_exchange_strong(used, used | last.bit)) {
      bit_ = last.bit;
      if (g_slot_generation[slot].load() == last.generation)
        last.end = UINT64_MAX;
      else
        open_span();  // another tape took it and freed it between the two looks
    }
  }
  if (bit_ == 0) {
    uint32_t used = g_used_bits.load();
    while (true) {
      if (used == ~0u)
        return make_error(Code::kResourceExhausted,
                          "GradientTape: at most 32 tapes can record at once (on all threads together); "
                          "this one would be the 33rd. Leave an enclosing tape's `with` block first, or "
                          "record with fewer tapes");
      int slot = g_next_slot.load(std::memory_order_relaxed);
      while (used & (1u << slot)) slot = (slot + 1) % kSlots;
      const uint32_t bit = 1u << slot;
      if (g_used_bits.compare_exchange_weak(used, used | bit)) {
        g_next_slot.store((slot + 1) % kSlots, std::memory_order_relaxed);
        bit_ = bit;
        break;
      }
    }
    open_span();
  }
  pushed_ = true;
  if (paused_ == 0) {
    t_state.recording.push_back(this);
    t_state.update();
  }
  std::vector<TensorRef> pending = std::move(pending_watches_);
  pending_watches_.clear();
  for (const TensorRef& t : pending) watch(t.get());
  return Status::OK();
}

// A new generation of the slot just taken begins: this tape's span of it.
void Tape::open_span() {
  const uint64_t generation = g_slot_generation[slot_of(bit_)].fetch_add(1) + 1;
  spans_.push_back(Span{bit_, generation, internal::next_serial(), UINT64_MAX});
}

void Tape::pop() {
  if (!pushed_) return;
  pushed_ = false;
  auto& r = t_state.recording;
  r.erase(std::remove(r.begin(), r.end(), this), r.end());
  t_state.update();
  spans_.back().end = internal::next_serial();
  g_used_bits.fetch_and(~bit_);
  bit_ = 0;
}

void Tape::pause() {
  if (paused_++ == 0 && pushed_) {
    auto& r = t_state.recording;
    r.erase(std::remove(r.begin(), r.end(), this), r.end());
    t_state.update();
  }
}

void Tape::resume() {
  if (paused_ > 0 && --paused_ == 0 && pushed_) {
    t_state.recording.push_back(this);
    t_state.update();
  }
}

void Tape::reset() {
  used_ = false;
  watched_variables_.clear();
  watched_set_.clear();
  watched_tensors_.clear();
  watched_refs_.clear();
  pending_watches_.clear();
  // Nothing recorded so far is this tape's any more; recording goes on on the same slot.
  std::vector<Span> old = std::move(spans_);
  spans_.clear();
  if (pushed_) spans_.push_back(Span{bit_, old.back().generation, internal::next_serial(), UINT64_MAX});
}

void Tape::watch(TensorImpl* t) {
  if (!is_differentiable_dtype(t->dtype())) return;
  if (!pushed_) {
    pending_watches_.push_back(TensorRef(t));
    return;
  }
  if (t->grad_node() == nullptr) {
    auto* leaf = new TapeNode();  // a source with no producer, in this tape's span
    leaf->serial = internal::next_serial();
    t->set_grad_link(leaf, 0);
    leaf->unref();
  } else if (!claims(t) && watched_tensors_.insert(t).second) {
    watched_refs_.push_back(TensorRef(t));
  }
  t->set_tape_mask(t->tape_mask() | bit_);
}

bool Tape::claims(const TensorImpl* t) const {
  const auto* node = static_cast<const TapeNode*>(t->grad_node());
  if (node == nullptr) return false;
  const uint32_t mask = t->tape_mask();
  for (const Span& s : spans_)
    if ((mask & s.bit) != 0 && node->serial >= s.start && node->serial < s.end) return true;
  return !watched_tensors_.empty() && watched_tensors_.count(t) != 0;
}

void Tape::watch_variable(int64_t id) {
  if (watched_set_.insert(id).second) watched_variables_.push_back(id);
}

StatusOr<std::vector<TensorRef>> Tape::gradient(std::span<TensorImpl* const> targets,
                                                std::span<TensorImpl* const> output_grads,
                                                std::span<const GradSource> sources) {
  if (used_ && !persistent_)
    return make_error(
        Code::kFailedPrecondition,
        "GradientTape.gradient can only be called once on non-persistent tapes; create the tape "
        "with persistent=True to compute several gradients");
  used_ = true;
  std::vector<TensorRef> result(sources.size());
  // Outer tapes record the backward pass (higher-order gradients). The tape itself records it only when
  // it is persistent and its `with` block is still open, as TensorFlow's: then a gradient taken inside the
  // block can be differentiated again by the same tape.
  bool record_own = persistent_ && recording();
  if (!record_own) pause();
  Status s;
  try {
    s = backprop(targets, output_grads, sources, result);
  } catch (const StatusError& e) {
    s = e.status();
  }
  if (!record_own) resume();
  if (!s.ok()) return s;
  return result;
}

namespace {

struct EdgeKey {
  const TapeNode* node;
  int32_t output;
  bool operator==(const EdgeKey&) const = default;
};
struct EdgeKeyHash {
  size_t operator()(const EdgeKey& k) const {
    return std::hash<const void*>()(k.node) * 31 + static_cast<size_t>(k.output);
  }
};

// Note [Checking gradient shapes]
// A gradient has its input's dtype and shape. A rule that gets one wrong (two results swapped, a broadcast
// dim not summed away) would otherwise be silently broadcast by the ops that add it to other gradients,
// and training would go on with wrong numbers. So backprop checks every gradient an op's rule returns,
// and every one a graph function's or control-flow op's backward returns, against the tensor it belongs
// to. This one loop serves every path: eager tapes, a tape inside a trace, and the backward functions of
// graph functions, If/Case branches and While bodies, which are traces of it. Dims known on both sides
// must agree: eagerly all are known and the check compares two small arrays per input; while tracing an
// unknown dim passes, and the backward of a function or control-flow op is checked again when it runs,
// against the concrete inputs of its call (TapeNode::edge_specs). A wrong rule is ember's bug
// (InternalError). A user's custom_gradient is checked as TensorFlow checks it: while a graph function's
// gradient is built (InvalidArgumentError; TensorFlow's graph gradients raise ValueError), not on a tape
// in eager code or inside a function, which hand its results on as they are. A rule that received such a
// gradient is not blamed for what it makes of it.
bool fits(const TensorImpl& grad, DType dtype, const Shape& shape) {
  return grad.dtype() == dtype && grad.shape().is_compatible_with(shape);
}

std::string spec_text(DType dtype, const Shape& shape) {
  return std::string(dtype_name(dtype)) + shape.to_string();
}

// Whether each output gradient an op node received fits its output.
bool received_fitting_gradients(std::span<TensorImpl* const> outputs, std::span<TensorImpl* const> grads) {
  for (size_t j = 0; j < outputs.size(); ++j)
    if (grads[j] != nullptr && !fits(*grads[j], outputs[j]->dtype(), outputs[j]->shape())) return false;
  return true;
}

Status check_rule_gradients(const TapeNode& n, std::span<const TensorRef> grads) {
  const size_t num_inputs = n.inputs.size();
  for (size_t i = 0; i < num_inputs; ++i) {
    const TensorImpl* g = grads[i].get();
    if (g == nullptr || n.edges[i].node() == nullptr) continue;
    const TensorImpl& x = *n.inputs[i];
    if (fits(*g, x.dtype(), x.shape())) continue;
    return make_error(Code::kInternal, n.op->name, "'s gradient rule returned a gradient of ",
                      spec_text(g->dtype(), g->shape()), " for input ", i, " ('",
                      n.op->arg_of(i, num_inputs).name, "'), which is ", spec_text(x.dtype(), x.shape()),
                      "; the rule (OpDef::grad of ", n.op->name, ") is wrong");
  }
  return Status::OK();
}

Status check_backward_gradients(const TapeNode& n, std::span<const TensorRef> grads) {
  for (size_t i = 0; i < n.edge_specs.size() && i < grads.size(); ++i) {
    const TensorImpl* g = grads[i].get();
    if (g == nullptr || n.edges[i].node() == nullptr) continue;
    const TensorSpec& x = n.edge_specs[i];
    if (fits(*g, x.dtype, x.shape)) continue;
    // A user's mistake (TensorFlow's words, which it raises as a ValueError), or ember's.
    return make_error(n.backward->user_defined() ? Code::kInvalidArgument : Code::kInternal,
                      n.backward->user_defined()
                          ? "Incompatible shapes between op input and calculated input "
                            "gradient: "
                          : "",
                      n.backward->describe(), " returned a gradient of ", spec_text(g->dtype(), g->shape()),
                      " for input ", i, ", which is ", spec_text(x.dtype, x.shape));
  }
  return Status::OK();
}

GradTensor sum_grads(std::vector<TensorRef>& grads) {
  if (grads.size() == 1) return GradTensor(grads[0]);
  std::vector<GradTensor> g(grads.begin(), grads.end());
  return gradient::add_n({g.data(), g.size()});
}

}  // namespace

Status Tape::backprop(std::span<TensorImpl* const> targets, std::span<TensorImpl* const> output_grads,
                      std::span<const GradSource> sources, std::vector<TensorRef>& result) {
  std::unordered_map<EdgeKey, int, EdgeKeyHash> source_keys;
  std::unordered_map<int64_t, int> variable_sources;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].tensor != nullptr) {
      TensorImpl* t = sources[i].tensor;
      // A tensor this tape neither watched nor recorded gets None, as in TensorFlow, even where another
      // tape's node links it to the targets (t1 watched c, t2 watched d: t2's gradient of c * d for c).
      if (t->grad_node() != nullptr && claims(t))
        source_keys.emplace(EdgeKey{static_cast<TapeNode*>(t->grad_node()), t->grad_output()}, 0);
    } else {
      variable_sources.emplace(sources[i].variable_id, 0);
    }
  }
  // Which nodes lead to a source (post-order DFS from the targets, iterative: chains can be long).
  std::unordered_map<const TapeNode*, bool> useful;
  std::vector<std::pair<const TapeNode*, size_t>> stack;
  auto visit = [&](const TapeNode* root) {
    if (!owns(root) || useful.count(root)) return;
    useful[root] = false;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->edges.size()) {
        const TapeNode* child = n->edges[next++].node();
        if (owns(child) && !useful.count(child)) {
          useful[child] = false;
          stack.push_back({child, 0});
        }
        continue;
      }
      bool u = n->variable_id != 0 && variable_sources.count(n->variable_id);
      for (const Edge& e : n->edges) {
        if (e.node() == nullptr) continue;
        if (source_keys.count(EdgeKey{e.node(), e.output()})) u = true;
        auto it = useful.find(e.node());
        if (it != useful.end() && it->second && owns(e.node())) u = true;
      }
      useful[n] = u;
      stack.pop_back();
    }
  };
  std::unordered_map<EdgeKey, std::vector<TensorRef>, EdgeKeyHash> pending;
  std::unordered_map<int64_t, std::vector<TensorRef>> variable_grads;
  for (size_t i = 0; i < targets.size(); ++i) {
    TensorImpl* t = targets[i];
    if (t->grad_node() == nullptr || !is_differentiable_dtype(t->dtype())) continue;
    auto* node = static_cast<TapeNode*>(t->grad_node());
    EdgeKey key{node, t->grad_output()};
    if (!owns(node) && !source_keys.count(key)) continue;
    TensorImpl* given = i < output_grads.size() ? output_grads[i] : nullptr;
    if (given != nullptr &&
        (given->dtype() != t->dtype() ||
         (given->shape().fully_defined() && t->shape().fully_defined() && !(given->shape() == t->shape()))))
      return invalid_argument("GradientTape.gradient: output_gradients[", i, "] has dtype ",
                              dtype_name(given->dtype()), " and shape ", given->shape().to_string(),
                              "; the target has dtype ", dtype_name(t->dtype()), " and shape ",
                              t->shape().to_string());
    pending[key].push_back(given != nullptr ? TensorRef(given)
                                            : gradient::ones_like(GradTensor(t)).release());
    visit(node);
  }
  // Use counts: how many edges from useful nodes reach each useful node.
  std::unordered_map<const TapeNode*, int> uses;
  for (auto& [n, u] : useful) {
    if (!u) continue;
    for (const Edge& e : n->edges) {
      auto it = useful.find(e.node());
      if (it != useful.end() && it->second) ++uses[e.node()];
    }
  }
  std::vector<const TapeNode*> ready;
  for (auto& [n, u] : useful)
    if (u && uses[n] == 0) ready.push_back(n);
  while (!ready.empty()) {
    const TapeNode* n = ready.back();
    ready.pop_back();
    if (n->variable_id != 0) {
      // A read of a variable that is a source: the variable's gradient sums over its reads.
      auto it = pending.find(EdgeKey{n, 0});
      if (it != pending.end() && !it->second.empty())
        variable_grads[n->variable_id].push_back(sum_grads(it->second).release());
      continue;
    }
    size_t num_outputs = n->outputs.size();
    SmallVector<TensorRef, 2> out_grads;
    out_grads.resize(num_outputs);
    bool any = false;
    for (size_t j = 0; j < num_outputs; ++j) {
      auto it = pending.find(EdgeKey{n, static_cast<int32_t>(j)});
      if (it == pending.end() || it->second.empty()) continue;
      out_grads[j] = sum_grads(it->second).release();
      if (it->second.size() > 1) it->second = {out_grads[j]};
      any = true;
    }
    SmallVector<TensorRef, 4> edge_grads;
    if (any && !n->edges.empty()) {
      SmallVector<TensorRef, 2> outputs;
      SmallVector<TensorImpl*, 2> out_ptrs, grad_ptrs;
      for (size_t j = 0; j < num_outputs; ++j) {
        outputs.push_back(internal::relinked_output(*n, static_cast<int32_t>(j)));
        // Custom backwards see which outputs got no gradient (a function call picks its backward by it).
        if (!out_grads[j] && !n->backward)
          out_grads[j] = gradient::zeros_like(GradTensor(outputs[j])).release();
        out_ptrs.push_back(outputs[j].get());
        grad_ptrs.push_back(out_grads[j].get());
      }
      edge_grads.resize(n->edges.size());
      if (n->backward) {
        n->backward->backward(*n, {grad_ptrs.data(), grad_ptrs.size()}, edge_grads);
        if (!n->backward->user_defined() || check_custom_gradients_)
          EMBER_RETURN_IF_ERROR(check_backward_gradients(*n, {edge_grads.data(), edge_grads.size()}));
      } else {
        SmallVector<TensorImpl*, 4> in_ptrs;
        for (const TensorRef& t : n->inputs) in_ptrs.push_back(t.get());
        GradContext ctx;
        ctx.op = n->op;
        ctx.attrs = {n->attrs.data(), n->attrs.size()};
        ctx.inputs = {in_ptrs.data(), in_ptrs.size()};
        ctx.outputs = {out_ptrs.data(), out_ptrs.size()};
        ctx.output_grads = {grad_ptrs.data(), grad_ptrs.size()};
        ctx.input_grads.resize(n->inputs.size());
        n->op->grad(ctx);
        for (size_t i = 0; i < edge_grads.size(); ++i) edge_grads[i] = std::move(ctx.input_grads[i]);
        if (received_fitting_gradients(ctx.outputs, ctx.output_grads))
          EMBER_RETURN_IF_ERROR(check_rule_gradients(*n, {edge_grads.data(), edge_grads.size()}));
      }
    }
    for (size_t i = 0; i < n->edges.size(); ++i) {
      const Edge& e = n->edges[i];
      if (e.node() == nullptr) continue;
      EdgeKey key{e.node(), e.output()};
      if (i < edge_grads.size() && edge_grads[i] &&
          (source_keys.count(key) || (useful.count(e.node()) && useful[e.node()])))
        pending[key].push_back(std::move(edge_grads[i]));
      auto it = useful.find(e.node());
      if (it != useful.end() && it->second && --uses[e.node()] == 0) ready.push_back(e.node());
    }
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    std::vector<TensorRef>* grads = nullptr;
    if (sources[i].tensor == nullptr) {
      auto it = variable_grads.find(sources[i].variable_id);
      if (it != variable_grads.end()) grads = &it->second;
    } else if (sources[i].tensor->grad_node() != nullptr) {
      auto it = pending.find(
          EdgeKey{static_cast<TapeNode*>(sources[i].tensor->grad_node()), sources[i].tensor->grad_output()});
      if (it != pending.end()) grads = &it->second;
    }
    if (grads == nullptr || grads->empty()) continue;
    result[i] = sum_grads(*grads).release();
  }
  return Status::OK();
}

void record_custom(std::span<TensorImpl* const> edge_inputs, std::span<const int64_t> variables,
                   std::span<TensorImpl* const> outputs, SmallVector<TensorRef, 4> saved,
                   std::shared_ptr<Backward> backward) {
  uint32_t mask = 0;
  for (TensorImpl* t : edge_inputs) mask |= internal::recording_mask(t);
  SmallVector<uint32_t, 4> variable_masks;
  for (int64_t id : variables) {
    variable_masks.push_back(internal::variable_mask(id));
    mask |= variable_masks.back();
  }
  if (mask == 0) return;
  auto* node = new TapeNode();
  node->backward = std::move(backward);
  node->inputs = std::move(saved);
  node->mask = mask;
  node->serial = internal::next_serial();
  for (TensorImpl* t : edge_inputs) {
    node->edges.push_back(internal::input_edge(t, mask));
    node->edge_specs.push_back(TensorSpec{t->dtype(), t->shape()});
  }
  for (size_t i = 0; i < variables.size(); ++i)
    node->edges.push_back(internal::variable_edge(variables[i], variable_masks[i]));
  SmallVector<TensorRef, 2> outs;
  for (TensorImpl* t : outputs) outs.push_back(TensorRef(t));
  // The caller's own tensors (ember.custom_gradient returns them) are the ones to link.
  internal::link_outputs(node, {outs.data(), outs.size()}, /*link_held_tensors=*/true);
}

}  // namespace ember::autodiff
