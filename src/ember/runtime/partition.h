// Placement and partitioning of a multi-device function (docs/devices.md). When a function is
// instantiated, the placer gives every node a device: a variable's readers and writers go where the
// variable lives, a node with a requested device goes there (CPU:0 under soft placement when no such
// device exists), Shape/Size/Rank go with their input, and nodes without inputs (arguments, constants)
// go with their consumers when those agree; everything else goes to the default device, CPU:0 (as
// TensorFlow's placer does). When more than one device is used, the partitioner cuts the graph into one
// function per device: an edge between devices becomes a _Send in the producer's partition and a _Recv in
// the consumer's (ops/send_recv.h), a control edge a token sent the same way.
//
// Note [Send/receive order]
// Partitions run at once, each on its own thread, and a _Recv blocks its thread until the matching _Send
// has run. The partitioner walks the graph in one topological order and puts a value's _Send right after
// its producer and its _Recv right before its first consumer; each partition's sends and receives are
// chained by control edges in walk order. Give each the position where the walk made it: a send comes
// before its receive. Then the earliest unfinished send or receive of a run can always proceed: a
// receive's send is earlier, so done; a send waits only for its partition's earlier nodes, whose
// receives are earlier still, so done. So no run deadlocks, whatever order each partition's executor
// picks, and neither side waits longer than the data does.
#pragma once

#include <memory>
#include <vector>

#include "ember/core/device.h"
#include "ember/graph/graph.h"

namespace ember {

/// One device per node of `fn.graph`. Fails under hard placement for a device that does not exist.
StatusOr<std::vector<Device>> place_function(const FunctionGraph& fn, bool soft);

struct Partition {
  Device device;
  std::shared_ptr<FunctionGraph> function;  // its call arguments, then its captured values
  std::vector<int> call_args;               // the original call argument each of its call arguments is
};

struct PartitionedFunction {
  std::vector<Partition> partitions;
  /// Original result i is result `.second` of partition `.first`.
  std::vector<std::pair<int, int>> results;
  int num_keys = 0;  // _Send/_Recv pairs (rendezvous slots)
};

/// Cuts `fn` by `devices` (one per node, all of them used by some node or not). Fails if the graph's
/// node order is not topological (the caller then runs it on one device).
StatusOr<PartitionedFunction> partition_function(const FunctionGraph& fn, const std::vector<Device>& devices);

}  // namespace ember
