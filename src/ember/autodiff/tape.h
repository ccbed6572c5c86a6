// GradientTape (architecture.md §7). While a tape records on a thread, every op whose inputs it watches
// becomes a TapeNode: the op, its attributes, its saved inputs and outputs, and an edge per input to the
// node that produced it. Each recorded output points back at its node (TensorImpl's grad link) and carries
// the tape's bit in its tape mask, so an op whose inputs carry no recording tape's bit costs one OR per
// input. Nodes are owned by the tensors they produced, as in PyTorch: a tape owns nothing and several tapes
// share one node graph (each node has a mask of the tapes that recorded it, and a serial number). Backprop
// walks from the targets along valid edges with use counts, running each op's gradient rule
// (ops/gradient.h); the rules' ops are themselves recorded by outer tapes, which gives higher-order
// gradients.
//
// Note [Tape slots and generations]
// A tape mask has 32 bits (slots), and a tape holds one only while it records (between push and pop), so
// a tape kept after its `with` block (a persistent one, a py_function's kept tape) holds none and any
// number of tapes may exist; at most 32 record at once. A slot's holders follow one another, and each
// holding is a generation of the slot: the serials recorded from push to pop, the tape's span. Bits on
// tensors and nodes outlive their holder, so a bit alone says nothing: a tape owns a node only when the
// node has the bit of one of its spans and a serial inside that span, and records an op on a tensor only
// when it claims the tensor (its node has such a bit and serial, or the tape watched it). So a tape never
// sees another holder's records of its slot, before or after it, and a persistent tape entered again (on
// whatever slot is free) still sees its own.
#pragma once

#include <memory>
#include <span>
#include <unordered_set>
#include <vector>

#include "ember/ops/gradient.h"

namespace ember::autodiff {

class TapeNode;

/// An owning reference to a tape node and one of its outputs.
class Edge {
 public:
  Edge() = default;
  Edge(GradNodeBase* node, int32_t output) : node_(node), output_(output) {
    if (node_) node_->ref();
  }
  Edge(const Edge& o) : Edge(o.node_, o.output_) {}
  Edge(Edge&& o) noexcept : node_(std::exchange(o.node_, nullptr)), output_(o.output_) {}
  Edge& operator=(Edge o) noexcept {
    std::swap(node_, o.node_);
    std::swap(output_, o.output_);
    return *this;
  }
  ~Edge();
  TapeNode* node() const;
  int32_t output() const { return output_; }
  GradNodeBase* release() { return std::exchange(node_, nullptr); }

 private:
  GradNodeBase* node_ = nullptr;
  int32_t output_ = 0;
};

/// How a node that is not a plain op computes its input gradients: a graph function's call (its backward
/// function) or ember.custom_gradient. Throws StatusError.
class Backward {
 public:
  virtual ~Backward() = default;
  /// `output_grads` has one entry per node output (null where none arrived); fills one gradient per edge.
  virtual void backward(const TapeNode& node, std::span<TensorImpl* const> output_grads,
                        SmallVector<TensorRef, 4>& edge_grads) = 0;
  /// What computes the gradients, for errors: "the gradient function of 'f'".
  virtual std::string describe() const = 0;
  /// A user's gradient (ember.custom_gradient): checked only while a graph function's gradient is built.
  virtual bool user_defined() const { return false; }
};

class TapeNode final : public GradNodeBase {
 public:
  TapeNode() = default;
  ~TapeNode() override;

  const OpDef* op = nullptr;  // null for a watched leaf or a node with a custom Backward
  AttrList attrs;
  SmallVector<TensorRef, 4> inputs;   // what the gradient rule (or Backward) reads
  SmallVector<TensorRef, 2> outputs;  // aliases without tape membership (no reference cycle)
  SmallVector<Edge, 4> edges;         // gradients flow along these; an empty edge receives none
  std::shared_ptr<Backward> backward;
  // For a node with a Backward: the spec of each input edge's tensor, against which backprop checks its
  // gradient (Note [Checking gradient shapes] in tape.cc). An op node's inputs are its saved inputs.
  std::vector<TensorSpec> edge_specs;
  int64_t variable_id = 0;  // a ReadVariableOp of this variable: gradients here belong to the variable
  uint32_t mask = 0;        // tapes that recorded this node
  uint64_t serial = 0;      // when it was recorded
};

/// A source of a gradient: a tensor, or a variable (every read of it while recording).
struct GradSource {
  TensorImpl* tensor = nullptr;
  int64_t variable_id = 0;
};

class Tape {
 public:
  /// `watch_accessed_variables`: trainable variables read while recording are watched automatically.
  static StatusOr<std::unique_ptr<Tape>> create(bool persistent, bool watch_accessed_variables);
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  /// Starts recording on this thread (entering `with tape:`), taking a slot (Note [Tape slots and
  /// generations]): ResourceExhausted when 32 tapes already record. pop() stops and frees the slot.
  Status push();
  void pop();
  bool recording() const { return pushed_ && paused_ == 0; }
  /// stop_recording(): suspends recording until resume(); nests.
  void pause();
  void resume();
  /// Forgets everything recorded so far.
  void reset();

  /// Watches a floating-point tensor (others are ignored, as TensorFlow does with a warning). Outside the
  /// `with` block it takes effect when the tape next records.
  void watch(TensorImpl* t);
  /// Whether ops reading `t` are recorded by this tape: it recorded `t` or watched it.
  bool claims(const TensorImpl* t) const;
  void watch_variable(int64_t id);
  bool watches_variable(int64_t id) const { return watched_set_.count(id) != 0; }
  const std::vector<int64_t>& watched_variables() const { return watched_variables_; }
  bool watch_accessed_variables() const { return watch_accessed_; }
  /// Every variable read counts as watched (the private tape that differentiates a graph function).
  void set_watch_all_variables() { watch_all_variables_ = true; }
  /// The tape builds a graph function's gradient: custom gradients are checked too, as TensorFlow's graph
  /// gradients check them (its eager tapes do not).
  void set_check_custom_gradients() { check_custom_gradients_ = true; }
  bool watches_all_variables() const { return watch_all_variables_; }
  bool persistent() const { return persistent_; }

  /// d(sum of targets)/d(source) for each source; a null entry where the source is unconnected.
  /// `output_grads` is empty or one per target (null = ones).
  StatusOr<std::vector<TensorRef>> gradient(std::span<TensorImpl* const> targets,
                                            std::span<TensorImpl* const> output_grads,
                                            std::span<const GradSource> sources);

  /// Lets a non-persistent tape compute again (the jacobian loop's repeated backward passes).
  void allow_reuse() { used_ = false; }

  /// The slot's bit while recording; 0 otherwise.
  uint32_t bit() const { return bit_; }
  /// Whether this tape recorded `node` (Note [Tape slots and generations]).
  bool owns(const TapeNode* node) const {
    if (node == nullptr) return false;
    for (const Span& s : spans_)
      if ((node->mask & s.bit) != 0 && node->serial >= s.start && node->serial < s.end) return true;
    return false;
  }

 private:
  // One holding of a slot: nodes with `bit` and a serial in [start, end) are this tape's.
  struct Span {
    uint32_t bit;
    uint64_t generation;
    uint64_t start, end;
  };
  Tape(bool persistent, bool watch_accessed);
  void open_span();
  Status backprop(std::span<TensorImpl* const> targets, std::span<TensorImpl* const> output_grads,
                  std::span<const GradSource> sources, std::vector<TensorRef>& result);

  uint32_t bit_ = 0;
  bool persistent_;
  bool watch_accessed_;
  bool watch_all_variables_ = false;
  bool check_custom_gradients_ = false;
  bool pushed_ = false;
  bool used_ = false;
  int paused_ = 0;
  std::vector<Span> spans_;  // the last one is open (end = max) while recording
  // Tensors watched whose nodes its spans do not hold (recorded before, by others), kept alive so an
  // address is never another tensor's; and those watched while not recording, for the next push.
  std::unordered_set<const TensorImpl*> watched_tensors_;
  std::vector<TensorRef> watched_refs_, pending_watches_;
  std::vector<int64_t> watched_variables_;
  std::unordered_set<int64_t> watched_set_;
};

/// True while some tape records on this thread (a graph function call must then take the taped path).
bool recording_active();

/// Suspends every tape of this thread for a scope (the tape machinery's own work, ember.stop_gradient
/// style sections) and restores them after.
class RecordingPause {
 public:
  RecordingPause();
  ~RecordingPause();
  RecordingPause(const RecordingPause&) = delete;
  RecordingPause& operator=(const RecordingPause&) = delete;

 private:
  std::vector<Tape*> saved_;
};

/// Records a node with a custom Backward (ember.custom_gradient): `outputs` become its outputs, linked to
/// the node; gradients flow to `edge_inputs` and then to `variables` (ids), in that order. No-op when no
/// recording tape watches any of them.
void record_custom(std::span<TensorImpl* const> edge_inputs, std::span<const int64_t> variables,
                   std::span<TensorImpl* const> outputs, SmallVector<TensorRef, 4> saved,
                   std::shared_ptr<Backward> backward);

}  // namespace ember::autodiff
