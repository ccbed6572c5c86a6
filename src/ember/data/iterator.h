// tf.data's iterators in C++ (docs/data.md): the parts of an input pipeline that must not hold Python's GIL
// — slicing a tensor into elements, running a traced map function on worker threads, stacking elements
// into batches and prefetching on a background thread. The Python package (python/ember/data/) builds
// every other transformation and keeps the element's nested structure; here an element is its flat list
// of component tensors.
//
//   auto it = make_prefetch(make_batch(make_map(*make_slices({x}), fn, 2, "map"), 128, false), 2);
//   Element batch;
//   while (*it->next(batch)) use(batch);
//
// The data layer depends only on core: a map function arrives as a MapFn (the Python extension makes one
// from a traced graph function's compiled plan), and a Python-side input as a SourceFn.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember::data {

/// One element of a dataset: its component tensors, flattened (the Python package keeps the structure).
using Element = std::vector<TensorRef>;

/// Pulls elements one at a time. One consumer calls `next` at a time; the iterators that run threads
/// serialise their own pulls from their input. Destroying an iterator stops and joins its threads, so an
/// iterator abandoned before its end leaks nothing and leaves nothing running.
class Iterator {
 public:
  virtual ~Iterator() = default;
  /// Fills `out` with the next element and returns true; false at the end of the sequence. An error fails
  /// only this element: the next call goes on with the following one, as TensorFlow's iterators do.
  virtual StatusOr<bool> next(Element& out) = 0;
};
using IteratorPtr = std::unique_ptr<Iterator>;

/// A map function: the element's components in, the result's components out. Called concurrently from
/// several threads when the map is parallel.
using MapFn = std::function<Status(const Element& in, Element& out)>;
/// An input produced elsewhere (a Python iterator): same contract as Iterator::next.
using SourceFn = std::function<StatusOr<bool>(Element& out)>;

/// Rows of the components along their first dimension (views, no copy). The components must have rank
/// >= 1 and one first dimension; otherwise an InvalidArgumentError that names from_tensor_slices.
StatusOr<IteratorPtr> make_slices(std::vector<TensorRef> components);
IteratorPtr make_source(SourceFn fn);
/// `num_parallel` == 0 runs `fn` on the caller's thread; > 0 runs it on that many worker threads, which
/// pull from `input` in order and hand results back in input order (deterministic, as TensorFlow's
/// default). `name` prefixes errors ("Dataset.map(f): ...").
IteratorPtr make_map(IteratorPtr input, MapFn fn, int num_parallel, std::string name);
/// Stacks `batch_size` elements per component on a new first dimension; the last, smaller batch is kept
/// unless `drop_remainder`. Components of differing shapes or dtypes are TensorFlow's InvalidArgumentError.
IteratorPtr make_batch(IteratorPtr input, int64_t batch_size, bool drop_remainder);
/// Fills a buffer of up to `buffer_size` elements from `input` on a background thread.
IteratorPtr make_prefetch(IteratorPtr input, int64_t buffer_size);

/// The worker threads tf.data.AUTOTUNE gives a parallel map: the machine's cores (at least one).
int autotune_parallelism();

}  // namespace ember::data
