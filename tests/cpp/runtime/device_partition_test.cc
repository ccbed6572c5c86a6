// Device names, placement and the partitioner of multi-device functions (core/device.h,
// runtime/partition.h): a function cut across two logical CPUs computes what it computes on one.
#include <gtest/gtest.h>

#include <cmath>

#include "../passes/pass_testing.h"
#include "ember/core/device.h"
#include "ember/runtime/executor.h"
#include "ember/runtime/partition.h"

namespace ember {
namespace {

using testing::run_compiled;
using testing::trace_function;

// Every test starts from one logical CPU, configuration open, and leaves it so.
class Devices : public ::testing::Test {
 protected:
  void SetUp() override { reset_devices_for_tests(); }
  void TearDown() override {
    set_eager_device_scope("");
    reset_devices_for_tests();
  }
};

std::string parsed(std::string_view name) {
  auto spec = DeviceSpec::parse(name);
  return spec.ok() ? spec->to_string() : "error: " + spec.status().message();
}

TEST_F(Devices, ParsesTensorFlowsNamesAndShortForms) {
  EXPECT_EQ(parsed("/job:localhost/replica:0/task:0/device:CPU:1"),
            "/job:localhost/replica:0/task:0/device:CPU:1");
  EXPECT_EQ(parsed("cpu:1"), "/device:CPU:1");
  EXPECT_EQ(parsed("/CPU:0"), "/device:CPU:0");
  EXPECT_EQ(parsed("/device:GPU:0"), "/device:GPU:0");
  EXPECT_EQ(parsed("GPU"), "/device:GPU:*");
  EXPECT_EQ(parsed("/cpu:*"), "/device:CPU:*");
  EXPECT_EQ(parsed(""), "");
  EXPECT_EQ(parsed("foo"),
            "error: Unknown attribute 'foo' is encountered while parsing the device spec: 'foo'.");
  EXPECT_EQ(parsed("/cpu:x"),
            "error: Unknown attribute 'cpu:x' is encountered while parsing the device spec: '/cpu:x'.");
}

TEST_F(Devices, NestedScopesMerge) {
  auto outer = DeviceSpec::parse("/job:localhost/device:GPU:1");
  auto inner = DeviceSpec::parse("cpu");
  ASSERT_TRUE(outer.ok() && inner.ok());
  EXPECT_EQ(DeviceSpec::merge(*outer, *inner).to_string(), "/job:localhost/device:CPU:*");
  EXPECT_EQ(DeviceSpec::merge(*inner, *DeviceSpec::parse("/cpu:1")).to_string(), "/device:CPU:1");
}

TEST_F(Devices, ResolvesWithSoftAndHardPlacement) {
  ASSERT_TRUE(configure_logical_cpus(2).ok());
  auto resolve = [](std::string_view name, bool soft) {
    auto d = resolve_device(*DeviceSpec::parse(name), soft);
    return d.ok() ? full_device_name(*d) : "error: " + d.status().message();
  };
  EXPECT_EQ(resolve("/cpu:1", false), "/job:localhost/replica:0/task:0/device:CPU:1");
  EXPECT_EQ(resolve("GPU:0", true), "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(resolve("/cpu:5", true), "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(resolve("/cpu:5", false),
            "error: Could not satisfy device specification '/job:localhost/replica:0/task:0/device:CPU:5'. "
            "enable_soft_placement=0. Supported device types [CPU]. All available devices "
            "[/job:localhost/replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:CPU:1].");
  EXPECT_EQ(resolve("/job:worker/cpu:0", true),
            "error: /job:worker/replica:0/task:0/device:CPU:0 unknown device.");
  // Resolving put the devices in use: the configuration is closed (the same one is still accepted).
  EXPECT_EQ(configure_logical_cpus(3).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(configure_logical_cpus(2).ok());
}

TEST_F(Devices, ThreadSharesSplitTheThreads) {
  ASSERT_TRUE(configure_logical_cpus(2).ok());
  EXPECT_EQ(device_thread_share(Device{DeviceType::kCPU, 1}), std::max(1, intra_op_threads() / 2));
  {
    DeviceScope scope(Device{DeviceType::kCPU, 1});
    EXPECT_EQ(current_device().index, 1);
    EXPECT_LE(inter_op_threads(), std::max(1, intra_op_threads() / 2));
    auto t = TensorImpl::allocate(DType::kFloat32, Shape({2}));
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t.value()->device().index, 1);  // results belong to the device their op ran on
  }
  EXPECT_EQ(current_device().index, 0);
}

// f(x) = exp(x) on CPU:1, + x on CPU:0: x goes to CPU:1, exp(x) comes back.
std::shared_ptr<FunctionGraph> two_device_function() {
  return trace_function({Shape({64})}, [](std::vector<Tensor>& x) {
    set_eager_device_scope("/device:CPU:1");
    Tensor a = exp(x[0] * 0.01f);
    set_eager_device_scope("");
    return std::vector<Tensor>{a + x[0], a};
  });
}

TEST_F(Devices, PlacesAndPartitionsWithSendRecvPairs) {
  ASSERT_TRUE(configure_logical_cpus(2).ok());
  auto fn = two_device_function();
  auto devices = place_function(*fn, /*soft=*/true);
  ASSERT_TRUE(devices.ok()) << devices.status().to_string();
  auto partitioned = partition_function(*fn, *devices);
  ASSERT_TRUE(partitioned.ok()) << partitioned.status().to_string();
  ASSERT_EQ(partitioned->partitions.size(), 2u);
  EXPECT_EQ(partitioned->num_keys, 2);  // x to CPU:1, exp(x) to CPU:0
  const std::string cpu0 = partitioned->partitions[0].function->graph.to_text();
  const std::string cpu1 = partitioned->partitions[1].function->graph.to_text();
  EXPECT_NE(cpu0.find("_send_x0_0 = _Send(x0:0)"), std::string::npos) << cpu0;
  EXPECT_NE(cpu0.find("= _Recv("), std::string::npos) << cpu0;
  EXPECT_NE(cpu1.find("_recv_x0_0 = _Recv()"), std::string::npos) << cpu1;
  EXPECT_NE(cpu1.find("Exp("), std::string::npos) << cpu1;
  EXPECT_NE(cpu1.find("@/job:localhost/replica:0/task:0/device:CPU:1"), std::string::npos) << cpu1;
  // Results: a + x from CPU:0, a from CPU:1.
  EXPECT_EQ(partitioned->results[0].first, 0);
  EXPECT_EQ(partitioned->results[1].first, 1);
}

TEST_F(Devices, PartitionedRunEqualsTheSingleDeviceRun) {
  ASSERT_TRUE(configure_logical_cpus(2).ok());
  auto fn = two_device_function();
  CompiledFunction multi(fn);
  ASSERT_EQ(multi.partitions().size(), 2u);
  CompiledFunction single(fn, passes::optimizer_options(), /*partition=*/false);
  EXPECT_TRUE(single.partitions().empty());
  std::vector<float> xs(64);
  for (int i = 0; i < 64; ++i) xs[i] = static_cast<float>(i);
  Tensor x = Tensor::from_vector<float>(xs);
  for (int run = 0; run < 3; ++run) {
    auto got = run_compiled(multi, {x});
    auto want = run_compiled(single, {x});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].to_vector<float>(), want[0].to_vector<float>());
    EXPECT_EQ(got[1].to_vector<float>(), want[1].to_vector<float>());
    EXPECT_EQ(got[1].impl()->device().index, 1);  // exp(x) was made on CPU:1
    EXPECT_EQ(got[0].impl()->device().index, 0);
  }
}

TEST_F(Devices, HardPlacementFailsTheCall) {
  ASSERT_TRUE(configure_logical_cpus(2).ok());
  auto fn = trace_function({Shape({2})}, [](std::vector<Tensor>& x) {
    set_eager_device_scope("/device:CPU:9");
    Tensor a = x[0] * 2.0f;
    set_eager_device_scope("");
    return std::vector<Tensor>{a};
  });
  set_soft_device_placement(false);  // the placer resolves requested devices at instantiation
  CompiledFunction compiled(fn);
  Tensor x = Tensor::from_vector<float>({1.0f, 2.0f});
  TensorImpl* args[] = {x.impl()};
  OutputList results;
  Status s = compiled.run(args, results);
  set_soft_device_placement(true);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("Could not satisfy device specification"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace ember
