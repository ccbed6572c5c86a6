#include "ember/runtime/parallel_loop.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <unordered_set>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/passes/pass.h"

namespace ember {

// Note [Parallel iterations]
// TensorFlow lowers a While inside a tf.function to v1 frames, where up to `parallel_iterations`
// iterations are in flight: an iteration's nodes run as soon as their inputs exist, so the bodies of a
// map_fn, which need only the counter and the loop invariants, overlap. ember runs a loop step as one plan
// per iteration (Note [Loop steps] in executor.cc); this file gives the common independent shape the same
// overlap without frames. The step's loop variables are sorted into
//   - invariants: the step returns its argument (captures, the elems a map_fn reads);
//   - control: the new value needs only control variables and invariants (the counter i -> i + 1, and
//     whatever else moves with it);
//   - carried: everything else, allowed only as a per-iteration write: the new value is one
//     InplaceUpdate(var, index, value) (a TensorArray write) or Add(var, value) (a gradient summed over the
//     iterations), the variable read by nothing else (but GatherV2(var, index, axis 0), a read of the rows
//     the write replaces, as the gradient of a TensorArray write reads and zeroes row t), and index and
//     value computed from control variables and invariants only (the "fed" values);
// the condition and an accumulating While's stacked values must need only control variables and
// invariants too. A step that fits is cut (prune_function) into three functions of its optimized graph,
// run with the optimizer's rewrites off so each node computes what it computes in the step:
//   control (control, invariants) -> (next control, condition), run ahead one iteration at a time (cheap);
//   work (control, invariants) -> (fed values, accumulated values), the heavy part, run for a wave of up to
//     parallel_iterations iterations at once on the pool (parallel_for: each thread claims iterations);
//   writer (carried, fed values) -> next carried, applied in iteration order after the wave, in place
//     (run_owned: a TensorArray write stays O(row)), with the stacks filled in the same order.
// Each write sees the values the sequential loop gives it, in the same order, so the results are the
// sequential run's bits (a sum over the iterations adds in iteration order too). Only StatelessWhile
// overlaps (ember picks it when no traced function holds a stateful op), and a stateful or resource node
// in the step keeps it sequential anyway: variable updates, prints, stateful random ops and py_function
// keep program order, as automatic control dependencies order them. An iteration whose control or work
// part fails is not applied: the While kernel reruns it on the normal path, which reports the error in its
// own words (the fast loops' hand-back); a failing write is reported here, at its iteration. A wave ends
// at the last iteration of the loop, so no body runs that the sequential loop would not run, and
// parallel_iterations = 1 never gets here. Row reads see the variable as the wave found it, which is the
// sequential value while no earlier iteration of the wave wrote those rows: the rows written are checked
// after the work, and the wave ends before the first iteration that read too early. Waves wait for their
// slowest body before the next starts (a simplification of TensorFlow's sliding window).

namespace {

std::atomic<int64_t> g_iterations{0}, g_max_in_flight{0}, g_running{0}, g_max_running{0};

void raise_to(std::atomic<int64_t>& max, int64_t value) {
  int64_t seen = max.load(std::memory_order_relaxed);
  while (value > seen && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

// Placeholders are flagged stateful (never folded); the step's are its loop variables.
bool orders_effects(const OpDef& op) {
  if (op.name == "Placeholder") return false;
  return op.has_flag(kStateful) || op.has_flag(kReadsResource) || op.has_flag(kWritesResource);
}

// Work cost of one iteration for parallel_for: enough that even two iterations go to two threads (an
// iteration is a plan run, microseconds at least; the waves of cheap bodies cost a little more than the
// sequential loop, which is the user's parallel_iterations to choose).
constexpr int64_t kIterationCost = kParallelMinCycles;

passes::OptimizerOptions as_is() {
  passes::OptimizerOptions options = passes::optimizer_options();
  options.common_subgraph_elimination = false;
  options.constant_folding = false;
  options.arithmetic_optimization = false;
  options.function_inlining = false;
  options.elementwise_fusion = false;
  options.sibling_matmul_merging = false;
  options.loop_optimization = false;
  options.remapping = false;
  return options;
}

std::unique_ptr<CompiledFunction> carve(const FunctionGraph& fn, const std::vector<ValueRef>& inputs,
                                        const std::vector<ValueRef>& outputs) {
  std::vector<std::string> in, out;
  for (ValueRef v : inputs) in.push_back(fn.graph.tensor_name(v));
  for (ValueRef v : outputs) out.push_back(fn.graph.tensor_name(v));
  auto carved = prune_function(fn, in, out);
  if (!carved.ok()) return nullptr;
  (*carved)->name = fn.name + "_parallel";
  return std::make_unique<CompiledFunction>(std::move(carved).value(), as_is(), false);
}

// The nodes `outputs` need.
std::vector<bool> closure(const Graph& g, const std::vector<ValueRef>& outputs) {
  std::vector<bool> needed(g.num_nodes(), false);
  std::vector<int32_t> stack;
  for (ValueRef v : outputs) stack.push_back(v.node);
  while (!stack.empty()) {
    const int32_t i = stack.back();
    stack.pop_back();
    if (needed[i]) continue;
    needed[i] = true;
    for (ValueRef in : g.node(i).inputs) stack.push_back(in.node);
    for (int32_t c : g.node(i).control_inputs) stack.push_back(c);
  }
  return needed;
}

// A node that reads and makes small values only: outputs of static shapes of at most 64 elements, and
// such inputs (a shape op only reads its input's shape).
bool small(const Graph& g, const Node& node) {
  auto small_spec = [](const TensorSpec& spec) {
    return spec.shape.fully_defined() && spec.shape.num_elements() <= 64;
  };
  const std::string& op = node.op->name;
  if (op == "Const" || op == "Placeholder") return true;
  for (const TensorSpec& spec : node.outputs)
    if (!small_spec(spec)) return false;
  if (op == "Shape" || op == "ShapeN" || op == "Size" || op == "Rank") return true;
  for (ValueRef in : node.inputs)
    if (!small_spec(g.spec(in))) return false;
  return true;
}

// GatherV2(arg, index, axis 0): reads the rows of `arg` that InplaceUpdate(arg, index, ...) then writes (the
// gradient of a TensorArray write reads row t of the incoming gradient and zeroes it).
bool reads_rows_it_writes(const Graph& g, const Node& reader, ValueRef arg, ValueRef index) {
  if (reader.op->name != "GatherV2" || reader.inputs.size() != 3 || reader.inputs[0] != arg ||
      reader.inputs[1] != index || reader.attrs.empty() || std::get<int64_t>(reader.attrs[0]) != 0)
    return false;
  const Node& axis = g.node(reader.inputs[2].node);
  if (axis.op->name != "Const" || axis.attrs.empty()) return false;
  const TensorImpl& value = *std::get<TensorRef>(axis.attrs[0]);
  if (value.shape().rank() != 0) return false;
  if (value.dtype() == DType::kInt32) return value.data<int32_t>()[0] == 0;
  return value.dtype() == DType::kInt64 && value.data<int64_t>()[0] == 0;
}

}  // namespace

std::shared_ptr<const ParallelLoop> ParallelLoop::build(const FunctionGraph& step, size_t num_vars,
                                                        size_t accumulate) {
  const Graph& g = step.graph;
  if (step.num_call_args() != static_cast<int>(num_vars) || step.results.size() != num_vars + accumulate + 1)
    return nullptr;
  const int32_t n = g.num_nodes();
  for (int32_t i = 0; i < n; ++i)
    if (orders_effects(*g.node(i).op)) return nullptr;
  const ValueRef cond = step.results.back();
  const TensorSpec& cond_spec = g.spec(cond);
  if (cond_spec.dtype != DType::kBool || !cond_spec.shape.rank_known() || cond_spec.shape.rank() != 0)
    return nullptr;
  // Consumers of each node (data and control), to see what reads a carried variable.
  std::vector<int32_t> uses(n, 0);
  for (int32_t i = 0; i < n; ++i) {
    for (ValueRef in : g.node(i).inputs) ++uses[in.node];
    for (int32_t c : g.node(i).control_inputs) ++uses[c];
  }
  // A loop variable is carried when its new value is a per-iteration write into it (see the Note), the
  // variable read by nothing else; invariant when the step returns it; control otherwise.
  enum Kind { kInvariant, kControl, kCarried };
  std::vector<Kind> kind(num_vars, kControl);
  // Readers of the rows a carried variable's write replaces (reads_rows_it_writes): they read the variable
  // as the wave found it, valid while no earlier iteration of the wave wrote those rows (checked per wave).
  std::vector<bool> row_reader(n, false);
  std::vector<int32_t> row_readers_of(num_vars, 0);
  for (size_t i = 0; i < num_vars; ++i) {
    const ValueRef arg{step.args[i], 0}, result = step.results[i];
    if (result == arg) {
      kind[i] = kInvariant;
      continue;
    }
    const Node& writer = g.node(result.node);
    const std::string& op = writer.op->name;
    const bool write = op == "InplaceUpdate" && writer.inputs.size() == 3 && writer.inputs[0] == arg;
    const bool sum = (op == "AddV2" || op == "Add") && writer.inputs.size() == 2 &&
                     (writer.inputs[0] == arg) != (writer.inputs[1] == arg);
    // The written value only leaves the step, as this variable's new value.
    bool only_result = uses[result.node] == 0 && writer.control_inputs.empty();
    for (size_t r = 0; r < num_vars + accumulate; ++r)
      only_result = only_result && (r == i || step.results[r].node != result.node);
    int32_t readers = 0;
    for (int32_t r = 0; write && r < n; ++r)
      readers += reads_rows_it_writes(g, g.node(r), arg, writer.inputs[1]) ? 1 : 0;
    if ((write || sum) && uses[step.args[i]] == 1 + readers && only_result) {
      kind[i] = kCarried;
      row_readers_of[i] = readers;
      for (int32_t r = 0; readers > 0 && r < n; ++r)
        row_reader[r] = row_reader[r] || reads_rows_it_writes(g, g.node(r), arg, writer.inputs[1]);
    }
  }
  // tainted[node]: the node needs a carried variable; nothing run ahead or overlapped may.
  std::vector<bool> tainted(n, false);
  for (size_t i = 0; i < num_vars; ++i)
    if (kind[i] == kCarried) tainted[step.args[i]] = true;
  for (int32_t i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    for (size_t k = row_reader[i] ? 1 : 0; k < node.inputs.size(); ++k)
      tainted[i] = tainted[i] || tainted[node.inputs[k].node];
    for (int32_t c : node.control_inputs) tainted[i] = tainted[i] || tainted[c];
  }
  for (size_t i = 0; i < num_vars; ++i)
    if (kind[i] == kControl && tainted[step.results[i].node]) return nullptr;
  if (tainted[cond.node]) return nullptr;
  for (size_t j = 0; j < accumulate; ++j)
    if (tainted[step.results[num_vars + j].node]) return nullptr;
  auto loop = std::make_shared<ParallelLoop>();
  std::vector<ValueRef> fed;  // distinct, in order of first use
  std::vector<ValueRef> carried_args, carried_results;
  for (size_t i = 0; i < num_vars; ++i) {
    if (kind[i] == kInvariant) loop->invariant_.push_back(static_cast<int32_t>(i));
    if (kind[i] == kControl) loop->control_.push_back(static_cast<int32_t>(i));
    if (kind[i] != kCarried) continue;
    const ValueRef arg{step.args[i], 0}, result = step.results[i];
    for (ValueRef in : g.node(result.node).inputs) {
      if (in == arg) continue;
      if (tainted[in.node]) return nullptr;
      if (std::find(fed.begin(), fed.end(), in) == fed.end()) fed.push_back(in);
    }
    if (row_readers_of[i] > 0) {
      loop->read_carried_.push_back(static_cast<int32_t>(i));
      const ValueRef index = g.node(result.node).inputs[1];
      loop->read_index_.push_back(std::find(fed.begin(), fed.end(), index) - fed.begin());
    }
    loop->carried_.push_back(static_cast<int32_t>(i));
    carried_args.push_back(arg);
    carried_results.push_back(result);
  }
  if (loop->carried_.empty() && accumulate == 0) return nullptr;  // nothing per iteration to overlap
  std::vector<ValueRef> inputs;
  for (int32_t i : loop->control_) inputs.push_back(ValueRef{step.args[i], 0});
  for (int32_t i : loop->invariant_) inputs.push_back(ValueRef{step.args[i], 0});
  std::vector<ValueRef> work_inputs = inputs;
  for (int32_t i : loop->read_carried_) work_inputs.push_back(ValueRef{step.args[i], 0});
  std::vector<ValueRef> control_outputs;
  for (int32_t i : loop->control_) control_outputs.push_back(step.results[i]);
  control_outputs.push_back(cond);
  std::vector<ValueRef> work_outputs = fed;
  for (size_t j = 0; j < accumulate; ++j) work_outputs.push_back(step.results[num_vars + j]);
  // The control part runs one iteration at a time, and whatever the work needs of it runs again there, so
  // it must be small: a counter's arithmetic. A loop whose other variables carry real work from one
  // iteration to the next (scan's accumulator, an RNN's state) stays sequential.
  const std::vector<bool> in_control = closure(g, control_outputs);
  for (int32_t i = 0; i < n; ++i)
    if (in_control[i] && !small(g, g.node(i))) return nullptr;
  // And the work must hold something of its own to overlap: a loop whose writes only store what the control
  // part computes (scan over small values, a loop stacking its own small state) gains nothing.
  const std::vector<bool> in_work = closure(g, work_outputs);
  bool own_work = false;
  for (int32_t i = 0; i < n && !own_work; ++i) {
    const std::string& op = g.node(i).op->name;
    own_work = in_work[i] && !in_control[i] && op != "Const" && op != "Placeholder";
  }
  if (!own_work) return nullptr;
  std::vector<ValueRef> writer_inputs = carried_args;
  writer_inputs.insert(writer_inputs.end(), fed.begin(), fed.end());
  loop->num_fed_ = fed.size();
  loop->accumulate_ = accumulate;
  loop->control_fn_ = carve(step, inputs, control_outputs);
  loop->work_fn_ = carve(step, work_inputs, work_outputs);
  if (!loop->carried_.empty()) {
    loop->writer_fn_ = carve(step, writer_inputs, carried_results);
    if (loop->writer_fn_ == nullptr) return nullptr;
  }
  if (loop->control_fn_ == nullptr || loop->work_fn_ == nullptr) return nullptr;
  return loop;
}

Status ParallelLoop::run(std::span<TensorRef> vars, int64_t parallel_iterations, int64_t max_iterations,
                         const StackIteration& stack, FastLoopProgress& progress) const {
  progress = FastLoopProgress();
  std::vector<TensorRef> invariants;
  for (int32_t i : invariant_) invariants.push_back(vars[i]);
  // wave[w]: the control variables iteration w of the wave starts from.
  std::vector<std::vector<TensorRef>> wave;
  std::vector<TensorImpl*> args;
  std::vector<TensorRef> read;  // the row-read carried variables as the wave found them (work only)
  auto args_for = [&](const std::vector<TensorRef>& control, std::vector<TensorImpl*>& to) {
    to.clear();
    for (const TensorRef& t : control) to.push_back(t.get());
    for (const TensorRef& t : invariants) to.push_back(t.get());
  };
  std::vector<TensorRef> control;
  for (int32_t i : control_) control.push_back(vars[i]);
  for (;;) {
    const int64_t width = std::min(parallel_iterations, max_iterations - progress.iterations);
    if (width <= 0) return Status::OK();  // the iteration budget: the normal path reports it
    wave.assign(1, control);
    bool last = false, control_failed = false;
    for (int64_t w = 0; w < width && !last; ++w) {
      OutputList out;
      args_for(wave[w], args);
      if (!control_fn_->run({args.data(), args.size()}, out).ok()) {
        control_failed = true;  // iteration w fails: the normal path reruns it and reports
        break;
      }
      last = !out[control_.size()]->data<bool>()[0];
      wave.emplace_back(out.begin(), out.begin() + control_.size());
    }
    const int64_t count = static_cast<int64_t>(wave.size()) - 1;
    std::vector<OutputList> results(count);
    std::vector<Status> statuses(count);
    raise_to(g_max_in_flight, count);
    read.clear();
    for (int32_t i : read_carried_) read.push_back(vars[i]);
    parallel_for(count, kIterationCost, [&](int64_t begin, int64_t end) {
      std::vector<TensorImpl*> own_args;
      for (int64_t w = begin; w < end; ++w) {
        raise_to(g_max_running, g_running.fetch_add(1, std::memory_order_relaxed) + 1);
        args_for(wave[w], own_args);
        for (const TensorRef& t : read) own_args.push_back(t.get());
        statuses[w] = work_fn_->run({own_args.data(), own_args.size()}, results[w]);
        g_running.fetch_sub(1, std::memory_order_relaxed);
      }
    });
    read.clear();  // the writes below may then go in place
    int64_t done = 0;
    while (done < count && statuses[done].ok()) ++done;
    // An iteration that reads rows an earlier iteration of this wave wrote read them too early: the wave
    // ends before it, and the next wave starts there (its first iteration reads what the writes left).
    const int64_t computed = done;
    for (size_t r = 0; r < read_carried_.size(); ++r) {
      std::unordered_set<int64_t> written;
      for (int64_t w = 0; w < done; ++w) {
        const TensorImpl& rows = *results[w][read_index_[r]];
        const int64_t count_rows = rows.shape().num_elements();
        bool clash = false;
        for (int64_t k = 0; k < count_rows && !clash; ++k) clash = written.count(rows.data<int32_t>()[k]) > 0;
        if (clash) {
          done = w;
          break;
        }
        for (int64_t k = 0; k < count_rows; ++k) written.insert(rows.data<int32_t>()[k]);
      }
    }
    std::vector<TensorRef> carried;
    for (int32_t i : carried_) carried.push_back(std::move(vars[i]));
    for (int64_t w = 0; w < done; ++w) {
      if (writer_fn_ != nullptr) {
        std::vector<TensorRef> owned = std::move(carried);
        for (size_t f = 0; f < num_fed_; ++f) owned.push_back(results[w][f]);
        OutputList written;
        Status s = writer_fn_->run_owned({owned.data(), owned.size()}, written);
        if (!s.ok()) return s;
        carried.assign(written.begin(), written.end());
      }
      if (accumulate_ > 0) {
        Status s = stack(progress.iterations, {results[w].data() + num_fed_, accumulate_});
        if (!s.ok()) return s;
      }
      results[w].clear();
      ++progress.iterations;
    }
    for (size_t k = 0; k < carried_.size(); ++k) vars[carried_[k]] = std::move(carried[k]);
    control = wave[done];
    for (size_t k = 0; k < control_.size(); ++k) vars[control_[k]] = control[k];
    g_iterations.fetch_add(done, std::memory_order_relaxed);
    if (done < computed) continue;  // rows read too early: the next wave redoes those iterations
    if (done < count || control_failed) return Status::OK();
    if (last) {
      progress.finished = true;
      return Status::OK();
    }
  }
}

int64_t ParallelLoop::iterations_run() { return g_iterations.load(); }
int64_t ParallelLoop::max_in_flight() { return g_max_in_flight.load(); }
int64_t ParallelLoop::max_running() { return g_max_running.load(); }
void ParallelLoop::reset_counters() {
  g_iterations = 0;
  g_max_in_flight = 0;
  g_max_running = 0;
}

}  // namespace ember
