// Devices: the process's logical devices, their names as TensorFlow spells them, the device a thread's
// eager ops run on, and each logical device's share of the thread pool. docs/devices.md tells the story.
//
//   configure_logical_cpus(2);                          // tf.config.set_logical_device_configuration
//   auto spec = DeviceSpec::parse("/cpu:1");            // job, replica, task, type and index, each optional
//   auto d = resolve_device(*spec, /*soft=*/true);      // Device{kCPU, 1}; marks the devices initialized
//   full_device_name(*d);                               // "/job:localhost/replica:0/task:0/device:CPU:1"
//
// The physical CPU is one device; split into N logical CPUs, each runs its ops with about 1/N of the
// threads (Note [Thread shares]). Kernels never look at the device: every logical CPU shares the host's
// memory, so a tensor's device is where it was produced, not where its bytes are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ember/core/allocator.h"
#include "ember/core/status.h"

namespace ember {

/// A device specification, possibly partial: TensorFlow's DeviceSpec. Empty strings and -1 mean "any".
struct DeviceSpec {
  std::string job;
  int replica = -1;
  int task = -1;
  std::string type;  // "CPU", "GPU" (upper case once parsed)
  int index = -1;

  /// Parses "/job:localhost/replica:0/task:0/device:CPU:0" and the short forms ("cpu:0", "/CPU:1",
  /// "/device:GPU:0", "GPU", "/cpu:*"). Fails with InvalidArgument naming the part it could not read.
  static StatusOr<DeviceSpec> parse(std::string_view name);
  /// The canonical partial name: "/job:localhost/device:CPU:1" (only the parts that are set).
  std::string to_string() const;
  bool empty() const { return job.empty() && replica < 0 && task < 0 && type.empty() && index < 0; }
  /// `inner` inside `outer` (nested tf.device scopes): the parts inner sets win.
  static DeviceSpec merge(const DeviceSpec& outer, const DeviceSpec& inner);
};

/// "/job:localhost/replica:0/task:0/device:CPU:1".
std::string full_device_name(Device d);
/// "/device:CPU:1" (a LogicalDevice's name).
std::string short_device_name(Device d);

/// Logical CPU devices (1 until configured). Fails with FailedPrecondition once the devices are in use
/// (TensorFlow's "Virtual devices cannot be modified after being initialized").
Status configure_logical_cpus(int count);
int num_logical_cpus();
/// Every logical device, CPUs first.
std::vector<Device> logical_devices();
/// Whether the devices are in use (listed, resolved or placed on): configuration is closed from then on.
bool devices_initialized();
void mark_devices_initialized();
/// Tests only (TensorFlow's context._reset_context): forget the configuration and reopen it.
void reset_devices_for_tests();

/// tf.config.set_soft_device_placement (on by default, as in TensorFlow).
bool soft_device_placement();
void set_soft_device_placement(bool enabled);

/// The logical device `spec` names. With soft placement, a device that does not exist (a GPU, CPU:5)
/// falls back to CPU:0 of this task; without it that is InvalidArgument in TensorFlow's words ("Could not
/// satisfy device specification ..."). A job other than localhost is always an error (no cluster).
StatusOr<Device> resolve_device(const DeviceSpec& spec, bool soft);

// Note [Thread shares]
// Splitting the CPU into N logical devices splits its threads too: a device runs its kernels with
// max(1, threads / N) threads (threads: ember.config.threading's intra-op count, all cores by default),
// the executor's inter-op workers likewise. Partitions of a multi-device function run at once, one
// thread each plus their share's extra workers, so N devices never ask for more than the cores (beyond
// one thread each when there are more devices than cores).

/// The threads ops placed on `d` may use.
int device_thread_share(Device d);

/// The device this thread's ops run on (and allocate their results on). Eager: the tf.device scope; in a
/// multi-device function: the partition's device.
Device current_device();
/// A scope's error under hard placement: ops run in the scope fail with it (TensorFlow raises at the op).
const Status* current_placement_error();

/// Sets the thread's device for a block; restores the previous one when destroyed.
class DeviceScope {
 public:
  explicit DeviceScope(Device d);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  Device previous_;
  int previous_share_;
};

/// The eager device scope of this thread (Python's `with tf.device(...)`): `spec` is the merged requested
/// device ("" outside every scope). Resolves it now; under hard placement an unknown device is kept as the
/// error ops in the scope report.
void set_eager_device_scope(const std::string& spec);
/// The requested device of the innermost scope (what traced nodes record), "" when none.
const std::string& eager_device_scope();

namespace internal {
/// Threads of the current device's share (0: no share set, the whole pool).
int thread_share_of_current_device();
}  // namespace internal

}  // namespace ember
