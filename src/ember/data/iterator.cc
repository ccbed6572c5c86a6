// The iterators that run on the caller's thread: slices, a foreign source, batch.
#include "ember/data/iterator.h"

#include <cstring>
#include <new>
#include <thread>

namespace ember::data {
namespace {

class SlicesIterator final : public Iterator {
 public:
  SlicesIterator(std::vector<TensorRef> components, int64_t rows)
      : components_(std::move(components)), rows_(rows) {
    for (const TensorRef& c : components_) {
      std::vector<int64_t> dims = c->shape().dim_vector();
      dims.erase(dims.begin());
      row_shapes_.emplace_back(std::span<const int64_t>(dims));
      row_bytes_.push_back(static_cast<size_t>(row_shapes_.back().num_elements()) * dtype_size(c->dtype()));
    }
  }

  StatusOr<bool> next(Element& out) override {
    if (index_ >= rows_) return false;
    out.clear();
    for (size_t c = 0; c < components_.size(); ++c)
      out.push_back(TensorImpl::view(*components_[c], row_shapes_[c], row_bytes_[c] * index_));
    ++index_;
    return true;
  }

 private:
  std::vector<TensorRef> components_;
  std::vector<Shape> row_shapes_;
  std::vector<size_t> row_bytes_;
  int64_t rows_;
  int64_t index_ = 0;
};

class SourceIterator final : public Iterator {
 public:
  explicit SourceIterator(SourceFn fn) : fn_(std::move(fn)) {}
  StatusOr<bool> next(Element& out) override {
    if (done_) return false;
    StatusOr<bool> more = fn_(out);
    if (more.ok() && !*more) done_ = true;
    return more;
  }

 private:
  SourceFn fn_;
  bool done_ = false;
};

class BatchIterator final : public Iterator {
 public:
  BatchIterator(IteratorPtr input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

  StatusOr<bool> next(Element& out) override {
    if (done_) return false;
    rows_.clear();
    while (static_cast<int64_t>(rows_.size()) < batch_size_) {
      Element e;
      StatusOr<bool> more = input_->next(e);
      if (!more.ok()) return more.status();
      if (!*more) {
        done_ = true;
        break;
      }
      rows_.push_back(std::move(e));
    }
    if (rows_.empty() || (drop_remainder_ && static_cast<int64_t>(rows_.size()) < batch_size_)) return false;
    out.clear();
    try {
      for (size_t c = 0; c < rows_[0].size(); ++c) {
        StatusOr<TensorRef> stacked = stack(c);
        if (!stacked.ok()) return stacked.status();
        out.push_back(std::move(stacked).value());
      }
    } catch (const std::bad_alloc&) {
      return make_error(Code::kResourceExhausted, "Dataset.batch: out of memory stacking ", rows_.size(),
                        " elements");
    }
    return true;
  }

 private:
  StatusOr<TensorRef> stack(size_t c) {
    const TensorImpl& first = *rows_[0][c];
    for (size_t i = 1; i < rows_.size(); ++i) {
      if (rows_[i].size() != rows_[0].size())
        return invalid_argument("Dataset.batch: element ", i, " has ", rows_[i].size(),
                                " components, the first has ", rows_[0].size());
      const TensorImpl& t = *rows_[i][c];
      if (t.dtype() != first.dtype())
        return invalid_argument("Cannot batch tensors with different dtypes in component ", c,
                                ". First element had dtype ", dtype_name(first.dtype()), " and element ", i,
                                " had dtype ", dtype_name(t.dtype()), ".");
      if (!(t.shape() == first.shape()))
        return invalid_argument("Cannot batch tensors with different shapes in component ", c,
                                ". First element had shape ", first.shape().to_string(), " and element ", i,
                                " had shape ", t.shape().to_string(), ".");
    }
    std::vector<int64_t> dims = first.shape().dim_vector();
    dims.insert(dims.begin(), static_cast<int64_t>(rows_.size()));
    StatusOr<TensorRef> out = TensorImpl::allocate(first.dtype(), Shape(std::span<const int64_t>(dims)));
    if (!out.ok()) return out.status().with_prefix("Dataset.batch: ");
    char* dst = static_cast<char*>((*out)->mutable_raw_data());
    const size_t row = first.nbytes();
    for (const Element& e : rows_) {
      if (row > 0) std::memcpy(dst, e[c]->raw_data(), row);
      dst += row;
    }
    return out;
  }

  IteratorPtr input_;
  int64_t batch_size_;
  bool drop_remainder_;
  bool done_ = false;
  std::vector<Element> rows_;
};

}  // namespace

StatusOr<IteratorPtr> make_slices(std::vector<TensorRef> components) {
  if (components.empty())
    return invalid_argument("Dataset.from_tensor_slices: expected at least one component, got none");
  int64_t rows = -1;
  for (size_t c = 0; c < components.size(); ++c) {
    const TensorImpl& t = *components[c];
    if (t.is_symbolic())
      return invalid_argument("Dataset.from_tensor_slices: component ", c, " is a graph tensor");
    if (t.rank() == 0)
      return invalid_argument("Dataset.from_tensor_slices: component ", c,
                              " is a scalar; slicing needs rank >= 1");
    if (rows >= 0 && t.shape().dim(0) != rows)
      return invalid_argument(
          "Dataset.from_tensor_slices: all components must have the same size in their "
          "first dimension; component 0 has ",
          rows, " and component ", c, " has ", t.shape().dim(0));
    rows = t.shape().dim(0);
  }
  return IteratorPtr(new SlicesIterator(std::move(components), rows));
}

IteratorPtr make_source(SourceFn fn) { return std::make_unique<SourceIterator>(std::move(fn)); }

IteratorPtr make_batch(IteratorPtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_unique<BatchIterator>(std::move(input), batch_size, drop_remainder);
}

int autotune_parallelism() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace ember::data
