#include "ember/core/device.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>

#include "ember/core/parallel.h"

namespace ember {
namespace {

std::atomic<int> g_logical_cpus{1};
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_soft_placement{true};

thread_local Device t_device;
thread_local int t_share = 0;  // 0: the whole pool
thread_local std::string t_scope_spec;
thread_local Status t_scope_error;
thread_local bool t_has_scope_error = false;

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

std::string upper(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

bool is_device_type(std::string_view s) {
  const std::string u = upper(s);
  return u == "CPU" || u == "GPU" || u == "TPU";
}

Status unknown_part(std::string_view part, std::string_view name) {
  return make_error(Code::kInvalidArgument, "Unknown attribute '", part,
                    "' is encountered while parsing the device spec: '", name, "'.");
}

// "CPU:1" / "CPU:*" / "CPU" into the spec's type and index.
bool parse_type_index(std::string_view s, DeviceSpec& spec) {
  const size_t colon = s.find(':');
  std::string_view type = s.substr(0, colon);
  if (type.empty()) return false;
  spec.type = upper(type);
  if (colon == std::string_view::npos) return true;
  std::string_view index = s.substr(colon + 1);
  if (index == "*") return true;
  return parse_int(index, spec.index);
}

}  // namespace

StatusOr<DeviceSpec> DeviceSpec::parse(std::string_view name) {
  DeviceSpec spec;
  std::string_view rest = name;
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (part.empty()) continue;
    const size_t colon = part.find(':');
    const std::string_view key = part.substr(0, colon);
    const std::string_view value =
        colon == std::string_view::npos ? std::string_view{} : part.substr(colon + 1);
    if (key == "job") {
      if (value.empty()) return unknown_part(part, name);
      spec.job = std::string(value);
    } else if (key == "replica") {
      if (value != "*" && !parse_int(value, spec.replica)) return unknown_part(part, name);
    } else if (key == "task") {
      if (value != "*" && !parse_int(value, spec.task)) return unknown_part(part, name);
    } else if (key == "device") {
      // "/device:CPU:0", or the legacy "/device:0" is not accepted (TensorFlow refuses it too).
      if (!parse_type_index(value, spec)) return unknown_part(part, name);
    } else if (is_device_type(key)) {
      if (!parse_type_index(part, spec)) return unknown_part(part, name);
    } else {
      return unknown_part(part, name);
    }
  }
  return spec;
}

std::string DeviceSpec::to_string() const {
  std::string s;
  if (!job.empty()) s += "/job:" + job;
  if (replica >= 0) s += "/replica:" + std::to_string(replica);
  if (task >= 0) s += "/task:" + std::to_string(task);
  if (!type.empty()) s += "/device:" + type + ":" + (index >= 0 ? std::to_string(index) : std::string("*"));
  return s;
}

DeviceSpec DeviceSpec::merge(const DeviceSpec& outer, const DeviceSpec& inner) {
  DeviceSpec r = outer;
  if (!inner.job.empty()) r.job = inner.job;
  if (inner.replica >= 0) r.replica = inner.replica;
  if (inner.task >= 0) r.task = inner.task;
  if (!inner.type.empty()) {
    // A new type drops the outer index: "/gpu:0" then "cpu" is any CPU, not CPU:0.
    if (inner.type != r.type) r.index = -1;
    r.type = inner.type;
  }
  if (inner.index >= 0) r.index = inner.index;
  return r;
}

std::string short_device_name(Device d) {
  return std::string("/device:") + (d.type == DeviceType::kCPU ? "CPU:" : "GPU:") + std::to_string(d.index);
}

std::string full_device_name(Device d) { return "/job:localhost/replica:0/task:0" + short_device_name(d); }

Status configure_logical_cpus(int count) {
  if (count < 1)
    return make_error(Code::kInvalidArgument, "set_logical_device_configuration: expected at least one ",
                      "logical device for the CPU, got ", count);
  if (g_initialized.load(std::memory_order_acquire)) {
    if (count == g_logical_cpus.load()) return Status::OK();  // TensorFlow accepts an unchanged configuration
    return make_error(Code::kFailedPrecondition,
                      "Virtual devices cannot be modified after being initialized");
  }
  g_logical_cpus.store(count, std::memory_order_release);
  return Status::OK();
}

int num_logical_cpus() { return g_logical_cpus.load(std::memory_order_acquire); }

std::vector<Device> logical_devices() {
  mark_devices_initialized();
  std::vector<Device> out;
  for (int i = 0; i < num_logical_cpus(); ++i) out.push_back(Device{DeviceType::kCPU, i});
  return out;
}

bool devices_initialized() { return g_initialized.load(std::memory_order_acquire); }
void mark_devices_initialized() { g_initialized.store(true, std::memory_order_release); }

void reset_devices_for_tests() {
  g_initialized.store(false);
  g_logical_cpus.store(1);
  g_soft_placement.store(true);
}

bool soft_device_placement() { return g_soft_placement.load(std::memory_order_relaxed); }
void set_soft_device_placement(bool enabled) { g_soft_placement.store(enabled, std::memory_order_relaxed); }

StatusOr<Device> resolve_device(const DeviceSpec& spec, bool soft) {
  mark_devices_initialized();
  const int cpus = num_logical_cpus();
  DeviceSpec full = spec;
  if (full.job.empty()) full.job = "localhost";
  if (full.replica < 0) full.replica = 0;
  if (full.task < 0) full.task = 0;
  // Another job or task is another process: no cluster exists, whatever the soft placement.
  if (full.job != "localhost" || full.replica != 0 || full.task != 0) {
    DeviceSpec shown = full;
    if (shown.type.empty()) shown.type = "CPU", shown.index = 0;
    return make_error(Code::kInvalidArgument, shown.to_string(), " unknown device.");
  }
  if (full.type.empty() || (full.type == "CPU" && full.index < 0)) return Device{DeviceType::kCPU, 0};
  if (full.type == "CPU" && full.index < cpus) return Device{DeviceType::kCPU, full.index};
  if (full.type == "GPU" && full.index < 0 && soft) return Device{DeviceType::kCPU, 0};
  if (soft) return Device{DeviceType::kCPU, 0};
  std::string all;
  for (int i = 0; i < cpus; ++i) all += (i ? ", " : "") + full_device_name(Device{DeviceType::kCPU, i});
  if (full.index < 0) full.index = 0;
  return make_error(Code::kInvalidArgument, "Could not satisfy device specification '", full.to_string(),
                    "'. enable_soft_placement=0. Supported device types [CPU]. All available devices [", all,
                    "].");
}

int device_thread_share(Device d) {
  (void)d;  // every logical CPU gets the same share
  const int n = num_logical_cpus();
  if (n <= 1) return 0;
  return std::max(1, intra_op_threads() / n);
}

Device current_device() { return t_device; }

const Status* current_placement_error() { return t_has_scope_error ? &t_scope_error : nullptr; }

DeviceScope::DeviceScope(Device d) : previous_(t_device), previous_share_(t_share) {
  t_device = d;
  t_share = device_thread_share(d);
}

DeviceScope::~DeviceScope() {
  t_device = previous_;
  t_share = previous_share_;
}

void set_eager_device_scope(const std::string& spec) {
  t_scope_spec = spec;
  t_has_scope_error = false;
  if (spec.empty()) {
    t_device = Device{};
    t_share = device_thread_share(t_device);
    return;
  }
  StatusOr<DeviceSpec> parsed = DeviceSpec::parse(spec);
  StatusOr<Device> d = parsed.ok() ? resolve_device(*parsed, soft_device_placement()) : parsed.status();
  if (!d.ok()) {
    t_scope_error = d.status();
    t_has_scope_error = true;
    t_device = Device{};
  } else {
    t_device = *d;
  }
  t_share = device_thread_share(t_device);
}

const std::string& eager_device_scope() { return t_scope_spec; }

namespace internal {
int thread_share_of_current_device() { return t_share; }
}  // namespace internal

}  // namespace ember
