// CTC loss and decoders (kernels/ctc.h).
#include "ember/kernels/ctc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <unordered_map>

namespace ember::kernels {
namespace {

// Note [Float rounding in CTC]: TensorFlow's CTCLoss and beam search add log probabilities with
// a + log1pf(expf(b - a)) and its CTCLoss gradient takes expf(log_sum - log_p): float functions, also in
// the float64 kernels, so a float64 result carries float rounding in those terms. The helpers round the
// same way; float64 results then match TensorFlow's to double precision rather than to float precision.
template <typename T>
T log_sum_exp(T a, T b) {
  constexpr T kLogZero = -std::numeric_limits<T>::infinity();
  if (a == kLogZero) return b;
  if (b == kLogZero) return a;
  return a > b ? a + static_cast<T>(log1pf(expf(static_cast<float>(b - a))))
               : b + static_cast<T>(log1pf(expf(static_cast<float>(a - b))));
}

std::string join(const std::vector<int>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  return os.str();
}

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// ---- CTCLoss (Graves' thesis, ch. 7; blank = classes - 1)

// The label sequence with a blank before each label and one at the end (l' in the thesis).
Status label_with_blanks(const std::vector<int>& label, int64_t b, int classes, bool collapse,
                         std::vector<int>* out) {
  const int blank = classes - 1;
  std::vector<int> l;
  bool finished = false;
  for (size_t i = 0; i < label.size(); ++i) {
    if (i != 0 && collapse && label[i] == label[i - 1]) continue;
    if (label[i] >= blank) {
      finished = true;  // labels at or above the blank end the sequence
    } else if (finished) {
      return invalid_argument(
          "CTCLoss: saw a non-null label (index >= num_classes - 1) following a null label, batch: ", b,
          " num_classes: ", classes, " labels: ", join(label), " labels seen so far: ", join(l));
    } else {
      l.push_back(label[i]);
    }
  }
  for (int v : l)
    if (v < 0)
      return invalid_argument("CTCLoss: all labels must be nonnegative integers, batch: ", b,
                              " labels: ", join(l));
  out->clear();
  for (int v : l) out->push_back(blank), out->push_back(v);
  out->push_back(blank);
  return Status::OK();
}

template <typename T>
struct Lattice {
  int64_t u = 0, t = 0;
  std::vector<T> v;
  Lattice(int64_t u_, int64_t t_) : u(u_), t(t_), v(static_cast<size_t>(u_ * t_), kNegInf<T>) {}
  T& operator()(int64_t i, int64_t j) { return v[static_cast<size_t>(i * t + j)]; }
};

// log y(class, t) for the frames of one row; y is the softmax of the logits.
template <typename T>
std::vector<T> softmax_rows(const T* logits, CtcDims d, int64_t b, int64_t frames) {
  std::vector<T> y(static_cast<size_t>(frames * d.classes));
  for (int64_t t = 0; t < frames; ++t) {
    const T* x = logits + (t * d.batch + b) * d.classes;
    T* out = y.data() + t * d.classes;
    const T mx = *std::max_element(x, x + d.classes);
    T sum = 0;
    for (int64_t c = 0; c < d.classes; ++c) sum += (out[c] = std::exp(x[c] - mx));
    for (int64_t c = 0; c < d.classes; ++c) out[c] /= sum;
  }
  return y;
}

template <typename T>
void ctc_row(const std::vector<int>& lp, const std::vector<T>& y, int64_t classes, int64_t frames, bool merge,
             T* loss, T* grad_row, int64_t grad_stride) {
  const int blank = static_cast<int>(classes - 1);
  const int64_t U = static_cast<int64_t>(lp.size()), Tn = frames;
  auto logy = [&](int64_t cls, int64_t t) { return std::log(y[static_cast<size_t>(t * classes + cls)]); };
  Lattice<T> alpha(U, Tn), beta(U, Tn);
  alpha(0, 0) = logy(blank, 0);
  if (U > 1) alpha(1, 0) = logy(lp[1], 0);
  for (int64_t t = 1; t < Tn; ++t) {
    for (int64_t u = std::max<int64_t>(0, U - 2 * (Tn - t)); u < std::min<int64_t>(U, 2 * (t + 1)); ++u) {
      T sum = kNegInf<T>;
      if (merge || lp[u] == blank) sum = alpha(u, t - 1);
      if (u > 0) sum = log_sum_exp(sum, alpha(u - 1, t - 1));
      if (u > 1 && lp[u] != blank && !(merge && lp[u] == lp[u - 2]))
        sum = log_sum_exp(sum, alpha(u - 2, t - 1));
      alpha(u, t) = logy(lp[u], t) + sum;
    }
  }
  for (int64_t u = std::max<int64_t>(0, U - 2); u < U; ++u) beta(u, Tn - 1) = 0;
  // Note [A label of blanks only]: with every label at or above the blank, l' is one blank (U = 1) and
  // TensorFlow's kernel writes beta(-1, T - 1) of its column-major matrix, which is beta(0, T - 2): that
  // entry starts at log(1) instead of log(0), adding a path. Kept, so such rows give TensorFlow's loss.
  if (U == 1 && Tn >= 2) beta(0, Tn - 2) = 0;
  for (int64_t t = Tn - 2; t >= 0; --t) {
    for (int64_t u = std::max<int64_t>(0, U - 2 * (Tn - t)); u < std::min<int64_t>(U, 2 * (t + 1)); ++u) {
      if (merge || lp[u] == blank) beta(u, t) = log_sum_exp(beta(u, t), beta(u, t + 1) + logy(lp[u], t + 1));
      if (u + 1 < U) beta(u, t) = log_sum_exp(beta(u, t), beta(u + 1, t + 1) + logy(lp[u + 1], t + 1));
      if (u + 2 < U && lp[u] != blank && !(merge && lp[u] == lp[u + 2]))
        beta(u, t) = log_sum_exp(beta(u, t), beta(u + 2, t + 1) + logy(lp[u + 2], t + 1));
    }
  }
  T log_p = kNegInf<T>;
  for (int64_t u = 0; u < U; ++u) log_p = log_sum_exp(log_p, alpha(u, 0) + beta(u, 0));
  *loss = -log_p;
  for (int64_t t = 0; t < Tn; ++t) {
    T* g = grad_row + t * grad_stride;
    const T* yt = y.data() + t * classes;
    if (log_p == kNegInf<T>) {  // no valid path: TensorFlow's gradient is the softmax itself
      std::copy(yt, yt + classes, g);
      continue;
    }
    std::vector<T> prob_sum(static_cast<size_t>(classes), kNegInf<T>);
    for (int64_t u = 0; u < U; ++u) prob_sum[lp[u]] = log_sum_exp(prob_sum[lp[u]], alpha(u, t) + beta(u, t));
    for (int64_t c = 0; c < classes; ++c)
      g[c] = yt[c] -
             static_cast<T>(expf(static_cast<float>(prob_sum[c] - log_p)));  // Note [Float rounding in CTC]
  }
}

}  // namespace

template <typename T>
Status ctc_loss(const T* logits, CtcDims d, const int32_t* seq_len,
                const std::vector<std::vector<int>>& labels, bool collapse, bool merge, bool ignore_longer,
                T* loss, T* gradient) {
  const int classes = static_cast<int>(d.classes);
  for (int64_t b = 0; b < d.batch; ++b)
    if (seq_len[b] < 0) return invalid_argument("CTCLoss: seq_len(", b, ") < 0, got ", seq_len[b]);
  std::vector<std::vector<int>> l_primes(static_cast<size_t>(d.batch));
  for (int64_t b = 0; b < d.batch; ++b) {
    const std::vector<int>& label = labels[static_cast<size_t>(b)];
    if (label.empty()) return invalid_argument("CTCLoss: labels length is zero in batch ", b);
    EMBER_RETURN_IF_ERROR(label_with_blanks(label, b, classes, collapse, &l_primes[static_cast<size_t>(b)]));
    if (!ignore_longer && static_cast<int64_t>(label.size()) > seq_len[b])
      return invalid_argument("CTCLoss: not enough time for target transition sequence (required: ",
                              label.size(), ", available: ", seq_len[b], ") in batch ", b,
                              "; you can turn this error into a warning by using the flag "
                              "ignore_longer_outputs_than_inputs");
  }
  std::fill(gradient, gradient + d.max_time * d.batch * d.classes, T(0));
  for (int64_t b = 0; b < d.batch; ++b) {
    loss[b] = 0;
    const int64_t frames = seq_len[b];
    if (frames == 0 ||
        (ignore_longer && static_cast<int64_t>(labels[static_cast<size_t>(b)].size()) > frames))
      continue;  // TensorFlow's loss and gradient for a row CTC cannot align are zero
    const std::vector<T> y = softmax_rows(logits, d, b, frames);
    ctc_row(l_primes[static_cast<size_t>(b)], y, d.classes, frames, merge, &loss[b], gradient + b * d.classes,
            d.batch * d.classes);
  }
  return Status::OK();
}

// ---- tf.nn.ctc_loss with dense labels
//
// Note [TensorFlow 2's dense CTC]: TensorFlow 2 computes ctc_loss for dense labels not with the CTCLoss
// kernel but with an HMM written in TensorFlow ops (ctc_loss_dense): states are a start state, one state
// per label position and one blank state after each (2 * (max_label + 1)); the forward and backward passes
// renormalise every frame; "impossible" initial and final states get log(1e-307) (about -706.9) instead of
// -inf, so a label that cannot fit in its frames gives a large finite loss rather than an error, and labels
// past label_length take part with that weight. The blank is moved to class 0 first. This kernel runs the
// same recurrences in the same order, so it gives TensorFlow's values in those cases too.
template <typename T>
void ctc_loss_dense(const T* logits, CtcDims d, const int64_t* labels_in, int64_t L,
                    const int64_t* label_length, const int64_t* logit_length, int64_t blank, T* loss,
                    T* gradient) {
  const int64_t C = d.classes, S = 2 * (L + 1), Tn = d.max_time;
  const T log0 = static_cast<T>(static_cast<float>(std::log(1e-307)));
  auto rotated = [&](int64_t cls) { return cls == blank ? 0 : (cls < blank ? cls + 1 : cls); };
  // Row-wise reduce_logsumexp as TensorFlow computes it: shift by the max unless it is infinite.
  auto lse = [](const T* x, int64_t n, int64_t stride) {
    T mx = kNegInf<T>;
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i * stride]);
    if (!std::isfinite(mx)) mx = 0;
    T sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i * stride] - mx);
    return std::log(sum) + mx;
  };
  std::vector<T> lp(static_cast<size_t>(Tn * C)), obs(static_cast<size_t>(Tn * S));
  std::vector<T> fwd(static_cast<size_t>((Tn + 1) * S)), bwd(static_cast<size_t>((Tn + 1) * S));
  std::vector<T> fb(static_cast<size_t>(S)), olabel(static_cast<size_t>(C)), tmp(static_cast<size_t>(S));
  std::vector<uint8_t> trans(static_cast<size_t>(S * S));  // trans[to * S + from]
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t* lab_raw = labels_in + b * L;
    std::vector<int64_t> lab(static_cast<size_t>(L));
    for (int64_t i = 0; i < L; ++i) lab[i] = blank != 0 && lab_raw[i] < blank ? lab_raw[i] + 1 : lab_raw[i];
    // log_softmax of the rotated logits, per frame.
    for (int64_t t = 0; t < Tn; ++t) {
      const T* x = logits + (t * d.batch + b) * C;
      T* out = lp.data() + t * C;
      for (int64_t c = 0; c < C; ++c) out[rotated(c)] = x[c];
      const T mx = *std::max_element(out, out + C);
      T sum = 0;
      for (int64_t c = 0; c < C; ++c) sum += std::exp(out[c] - mx);
      const T log_sum = std::log(sum);
      for (int64_t c = 0; c < C; ++c) out[c] = out[c] - mx - log_sum;
    }
    // Observations: the start state never emits; label state i emits lab[i - 1] (a label outside the
    // classes matches no class: one_hot gives zeros, so its log probability is 0); blank states emit 0.
    for (int64_t t = 0; t < Tn; ++t) {
      T* o = obs.data() + t * S;
      o[0] = kNegInf<T>;
      for (int64_t i = 1; i <= L; ++i) {
        const int64_t c = lab[i - 1];
        o[i] = c >= 0 && c < C ? lp[t * C + c] : T(0);
      }
      for (int64_t k = 0; k <= L; ++k) o[L + 1 + k] = lp[t * C];
    }
    std::fill(trans.begin(), trans.end(), 0);
    auto allow = [&](int64_t to, int64_t from) { trans[static_cast<size_t>(to * S + from)] = 1; };
    for (int64_t s = 0; s < S; ++s) allow(s, s);
    allow(1, 0);
    for (int64_t k = 0; k < L; ++k) allow(k + 1, L + 1 + k);  // blank before label k + 1
    for (int64_t k = 0; k <= L; ++k) allow(L + 1 + k, k);     // label (or start) k to the blank after it
    for (int64_t k = 1; k < L; ++k)
      if (lab[k - 1] != lab[k]) allow(k + 1, k);
    auto log_trans = [&](int64_t to, int64_t from) {
      return trans[static_cast<size_t>(to * S + from)] ? T(0) : kNegInf<T>;
    };
    // Forward: fwd[0] is the initial distribution, fwd[t + 1] the normalised state after frame t.
    for (int64_t s = 0; s < S; ++s) fwd[s] = s == 0 ? T(0) : log0;
    for (int64_t t = 0; t < Tn; ++t) {
      const T* prev = fwd.data() + t * S;
      T* cur = fwd.data() + (t + 1) * S;
      for (int64_t s = 0; s < S; ++s) {
        for (int64_t f = 0; f < S; ++f) tmp[f] = prev[f] + log_trans(s, f);
        cur[s] = lse(tmp.data(), S, 1) + obs[t * S + s];
      }
      const T norm = lse(cur, S, 1);
      for (int64_t s = 0; s < S; ++s) cur[s] -= norm;
    }
    // Backward from the final states (label_length's label and blank states), restarting past logit_length.
    const int64_t ll = label_length[b];
    std::vector<T> final_state(static_cast<size_t>(S), log0);
    if (ll >= 0 && ll <= L) final_state[ll] = final_state[L + 1 + ll] = 0;
    std::copy(final_state.begin(), final_state.end(), bwd.begin() + Tn * S);
    T cum = 0;
    for (int64_t t = Tn - 1; t >= 0; --t) {
      const bool in_seq = t < logit_length[b];
      const T* next = bwd.data() + (t + 1) * S;
      T* cur = bwd.data() + t * S;
      for (int64_t s = 0; s < S; ++s) {
        for (int64_t to = 0; to < S; ++to) tmp[to] = next[to] + obs[t * S + to] + log_trans(to, s);
        cur[s] = lse(tmp.data(), S, 1);
      }
      const T norm = lse(cur, S, 1);
      for (int64_t s = 0; s < S; ++s) cur[s] = in_seq ? cur[s] - norm : final_state[s];
      if (in_seq) cum += norm;
    }
    loss[b] = -(bwd[0] + cum);
    // Gradient: softmax minus the posterior of each class's states, zero past logit_length.
    for (int64_t t = 0; t < Tn; ++t) {
      T* g = gradient + (t * d.batch + b) * C;
      if (!(t < logit_length[b])) {
        std::fill(g, g + C, T(0));
        continue;
      }
      for (int64_t s = 0; s < S; ++s) fb[s] = fwd[(t + 1) * S + s] + bwd[(t + 1) * S + s];
      const T norm = lse(fb.data(), S, 1);
      for (int64_t s = 0; s < S; ++s) fb[s] -= norm;
      olabel[0] = lse(fb.data() + L + 1, L + 1, 1);
      for (int64_t c = 1; c < C; ++c) {
        int64_t n = 0;
        for (int64_t i = 1; i <= L; ++i)
          if (lab[i - 1] == c) tmp[n++] = fb[i];
        olabel[c] = n == 0 ? kNegInf<T> : lse(tmp.data(), n, 1);
      }
      for (int64_t c = 0; c < C; ++c) g[c] = std::exp(lp[t * C + rotated(c)]) - std::exp(olabel[rotated(c)]);
    }
  }
}

// ---- Decoders

template <typename T>
void ctc_greedy_decode(const T* logits, CtcDims d, const int32_t* seq_len, bool merge, int blank,
                       CtcPaths* paths, T* log_prob) {
  paths->assign(static_cast<size_t>(d.batch), std::vector<std::vector<int>>(1));
  for (int64_t b = 0; b < d.batch; ++b) {
    std::vector<int>& seq = (*paths)[static_cast<size_t>(b)][0];
    log_prob[b] = 0;
    int prev = -1;
    for (int64_t t = 0; t < seq_len[b]; ++t) {
      const T* x = logits + (t * d.batch + b) * d.classes;
      int best = 0;
      for (int c = 1; c < d.classes; ++c)
        if (x[c] > x[best]) best = c;
      log_prob[b] += -x[best];
      if (best != blank && !(merge && best == prev)) seq.push_back(best);
      prev = best;
    }
  }
}

namespace {

// A node of the beam search's prefix tree: the label sequence from the root to it.
template <typename T>
struct BeamEntry {
  struct Prob {
    T total = kNegInf<T>, blank = kNegInf<T>, label = kNegInf<T>;
    void reset() { *this = Prob(); }
  };
  BeamEntry* parent = nullptr;
  int label = -1;
  std::unordered_map<int, BeamEntry*> children;
  Prob oldp, newp;
  bool active() const { return newp.total != kNegInf<T>; }
};

// Note [The beam's order]: the beam holds at most `limit` entries, best (highest newp.total) first when
// extracted. TensorFlow keeps it in gtl::TopN, whose storage goes from an unordered vector to one with the
// worst entry swapped to the front (once the bottom is asked for) to a heap (once a push overflows it), and
// is sorted with std::sort or std::sort_heap on extraction. Entries of equal probability (uniform logits give
// many) come out in an order that depends on those steps, so the beam takes the same steps with the same
// standard algorithms and orders ties as TensorFlow 2.21 does.
template <typename T>
class Beam {
 public:
  explicit Beam(size_t limit) : limit_(limit) {}
  size_t size() const { return items_.size(); }
  void push(BeamEntry<T>* e) {
    if (state_ != kHeap) {
      items_.push_back(e);
      if (items_.size() == limit_ + 1) {  // overflow: drop the worst and keep a heap from now on
        std::make_heap(items_.begin(), items_.end(), better);
        std::pop_heap(items_.begin(), items_.end(), better);
        items_.pop_back();
        state_ = kHeap;
      } else if (state_ == kBottomKnown && !better(items_.back(), items_.front())) {
        std::swap(items_.front(), items_.back());  // keep the known bottom at the front
      }
    } else if (better(e, items_.front())) {
      std::pop_heap(items_.begin(), items_.end(), better);
      items_.back() = e;
      std::push_heap(items_.begin(), items_.end(), better);
    }
  }
  BeamEntry<T>* bottom() {
    if (state_ == kUnordered) {
      size_t m = 0;
      for (size_t i = 1; i < items_.size(); ++i)
        if (better(items_[m], items_[i])) m = i;
      std::swap(items_[0], items_[m]);
      state_ = kBottomKnown;
    }
    return items_.front();
  }
  /// The entries, best first; the beam is left empty.
  std::vector<BeamEntry<T>*> extract() {
    std::vector<BeamEntry<T>*> out;
    out.swap(items_);
    if (state_ != kHeap) {
      std::sort(out.begin(), out.end(), better);
    } else {
      std::sort_heap(out.begin(), out.end(), better);
    }
    state_ = kUnordered;
    return out;
  }
  /// The entries in storage order (TensorFlow's unsorted_begin() .. unsorted_end()).
  const std::vector<BeamEntry<T>*>& unsorted() const { return items_; }

 private:
  static bool better(const BeamEntry<T>* a, const BeamEntry<T>* b) { return a->newp.total > b->newp.total; }
  enum State { kUnordered, kBottomKnown, kHeap };
  size_t limit_;
  std::vector<BeamEntry<T>*> items_;
  State state_ = kUnordered;
};

template <typename T>
class BeamSearch {
 public:
  BeamSearch(int classes, int width) : classes_(classes), width_(width), leaves_(static_cast<size_t>(width)) {
    entries_.push_back(std::make_unique<BeamEntry<T>>());
    BeamEntry<T>* root = entries_.back().get();
    root->newp.total = root->newp.blank = 0;
    leaves_.push(root);
  }

  void step(const T* x) {
    const int blank = classes_ - 1;
    const T mx = *std::max_element(x, x + classes_);
    T sum = 0;
    for (int c = 0; c < classes_; ++c) sum += std::exp(x[c] - mx);
    const T norm = mx + std::log(sum);
    std::vector<BeamEntry<T>*> branches = leaves_.extract();
    for (BeamEntry<T>* b : branches) b->oldp = b->newp;
    for (BeamEntry<T>* b : branches) {
      if (b->parent != nullptr) {
        if (b->parent->active()) {
          const T previous = b->label == b->parent->label ? b->parent->oldp.blank : b->parent->oldp.total;
          b->newp.label = log_sum_exp(b->newp.label, previous);
        }
        b->newp.label += x[b->label] - norm;
      }
      b->newp.blank = b->oldp.total + x[blank] - norm;
      b->newp.total = log_sum_exp(b->newp.blank, b->newp.label);
      leaves_.push(b);
    }
    auto candidate = [&](const typename BeamEntry<T>::Prob& p) {
      return p.total > kNegInf<T> &&
             (static_cast<int>(leaves_.size()) < width_ || p.total > leaves_.bottom()->newp.total);
    };
    for (BeamEntry<T>* b : branches) {
      if (!candidate(b->oldp)) continue;
      for (int label = 0; label < classes_ - 1; ++label) {
        BeamEntry<T>& c = child(b, label);
        if (c.active()) continue;
        c.newp.blank = kNegInf<T>;
        const T previous = c.label == b->label ? b->oldp.blank : b->oldp.total;
        c.newp.label = x[label] - norm + previous;
        c.newp.total = c.newp.label;
        if (candidate(c.newp)) {
          if (static_cast<int>(leaves_.size()) == width_) leaves_.bottom()->newp.reset();
          leaves_.push(&c);
        } else {
          c.oldp.reset();
          c.newp.reset();
        }
      }
    }
  }

  Status top_paths(int n, bool merge, std::vector<std::vector<int>>* paths, std::vector<T>* log_probs) {
    if (n > width_) return invalid_argument("CTCBeamSearchDecoder: requested more paths than the beam width");
    if (static_cast<size_t>(n) > leaves_.size())
      return invalid_argument("CTCBeamSearchDecoder: less leaves in the beam search than requested");
    Beam<T> top(static_cast<size_t>(n));
    for (BeamEntry<T>* e : leaves_.unsorted()) top.push(e);
    const std::vector<BeamEntry<T>*> best = top.extract();
    paths->clear();
    log_probs->clear();
    for (int i = 0; i < n; ++i) {
      std::vector<int> labels;
      int prev = -1;
      for (const BeamEntry<T>* e = best[i]; e->parent != nullptr; e = e->parent) {
        if (!merge || e->label != prev) labels.push_back(e->label);
        prev = e->label;
      }
      std::reverse(labels.begin(), labels.end());
      paths->push_back(std::move(labels));
      log_probs->push_back(best[i]->newp.total);
    }
    return Status::OK();
  }

 private:
  BeamEntry<T>& child(BeamEntry<T>* parent, int label) {
    auto [it, inserted] = parent->children.emplace(label, nullptr);
    if (inserted) {
      entries_.push_back(std::make_unique<BeamEntry<T>>());
      it->second = entries_.back().get();
      it->second->parent = parent;
      it->second->label = label;
    }
    return *it->second;
  }

  int classes_, width_;
  Beam<T> leaves_;
  std::vector<std::unique_ptr<BeamEntry<T>>> entries_;
};

}  // namespace

template <typename T>
Status ctc_beam_search_decode(const T* logits, CtcDims d, const int32_t* seq_len, int beam_width,
                              int top_paths, bool merge, CtcPaths* paths, T* log_prob) {
  paths->assign(static_cast<size_t>(d.batch), {});
  std::vector<T> probs;
  for (int64_t b = 0; b < d.batch; ++b) {
    BeamSearch<T> search(static_cast<int>(d.classes), beam_width);
    for (int64_t t = 0; t < seq_len[b]; ++t) search.step(logits + (t * d.batch + b) * d.classes);
    EMBER_RETURN_IF_ERROR(search.top_paths(top_paths, merge, &(*paths)[static_cast<size_t>(b)], &probs));
    for (int p = 0; p < top_paths; ++p) log_prob[b * top_paths + p] = probs[static_cast<size_t>(p)];
  }
  return Status::OK();
}

#define EMBER_CTC_INSTANTIATE(T)                                                                             \
  template Status ctc_loss<T>(const T*, CtcDims, const int32_t*, const std::vector<std::vector<int>>&, bool, \
                              bool, bool, T*, T*);                                                           \
  template void ctc_loss_dense<T>(const T*, CtcDims, const int64_t*, int64_t, const int64_t*,                \
                                  const int64_t*, int64_t, T*, T*);                                          \
  template void ctc_greedy_decode<T>(const T*, CtcDims, const int32_t*, bool, int, CtcPaths*, T*);           \
  template Status ctc_beam_search_decode<T>(const T*, CtcDims, const int32_t*, int, int, bool, CtcPaths*, T*);
EMBER_CTC_INSTANTIATE(float)
EMBER_CTC_INSTANTIATE(double)
#undef EMBER_CTC_INSTANTIATE

}  // namespace ember::kernels
