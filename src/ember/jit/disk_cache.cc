#include "ember/jit/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace ember::jit {
namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'J', 'I', 'T', '0', '1'};
constexpr uint32_t kVersion = 1;
constexpr const char* kSuffix = ".ejit";

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t fingerprint_bytes;
  uint64_t object_bytes;
  uint64_t checksum;
};
static_assert(sizeof(Header) == 32);

uint64_t checksum_of(const std::string& fingerprint, const char* object, size_t size) {
  return fnv1a(object, size, fnv1a(fingerprint.data(), fingerprint.size()));
}

bool make_directories(const std::string& path) {
  std::string partial;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      partial = path.substr(0, i);
      if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

uint64_t fnv1a(const void* data, size_t size, uint64_t seed) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < size; ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string DiskCache::default_directory() {
  const char* off = std::getenv("EMBER_JIT_CACHE");
  if (off != nullptr && std::strcmp(off, "0") == 0) return "";
  if (const char* dir = std::getenv("EMBER_JIT_CACHE_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::string(xdg) + "/ember/jit";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/ember/jit";
  return "";
}

int64_t DiskCache::default_max_bytes() {
  if (const char* s = std::getenv("EMBER_JIT_CACHE_MAX_BYTES"); s != nullptr && *s != '\0') {
    char* end = nullptr;
    long long v = std::strtoll(s, &end, 10);
    if (end != s && v >= 0) return v;
  }
  return int64_t{64} << 20;
}

DiskCache::DiskCache(std::string directory, int64_t max_bytes)
    : directory_(std::move(directory)), max_bytes_(max_bytes) {}

std::string DiskCache::path_for(const std::string& fingerprint) const {
  char name[40];
  std::snprintf(
      name, sizeof name, "%016llx%016llx",
      static_cast<unsigned long long>(fnv1a(fingerprint.data(), fingerprint.size())),
      static_cast<unsigned long long>(fnv1a(fingerprint.data(), fingerprint.size(), 0x9e3779b97f4a7c15ull)));
  return directory_ + "/" + name + kSuffix;
}

DiskCache::Result DiskCache::load(const std::string& fingerprint, std::string& object) const {
  if (directory_.empty()) return Result::kMiss;
  const std::string path = path_for(fingerprint);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Result::kMiss;
  std::string bytes;
  struct stat st;
  bool read_ok = ::fstat(fd, &st) == 0 && st.st_size >= 0 && st.st_size < (int64_t{1} << 30);
  if (read_ok) {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    bytes.resize(done);
  }
  ::close(fd);
  auto reject = [&] {
    ::unlink(path.c_str());
    return Result::kRejected;
  };
  if (!read_ok || bytes.size() < sizeof(Header)) return reject();
  Header header;
  std::memcpy(&header, bytes.data(), sizeof header);
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0 || header.version != kVersion) return reject();
  if (header.fingerprint_bytes != fingerprint.size() ||
      bytes.size() != sizeof(Header) + header.fingerprint_bytes + header.object_bytes)
    return reject();
  if (bytes.compare(sizeof(Header), fingerprint.size(), fingerprint) != 0) return reject();
  const char* data = bytes.data() + sizeof(Header) + fingerprint.size();
  if (checksum_of(fingerprint, data, header.object_bytes) != header.checksum) return reject();
  object.assign(data, header.object_bytes);
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // most recently used
  return Result::kHit;
}

void DiskCache::store(const std::string& fingerprint, const std::string& object) const {
  if (directory_.empty() || !make_directories(directory_)) return;
  static std::atomic<uint64_t> counter{0};
  const std::string path = path_for(fingerprint);
  const std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  Header header;
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.version = kVersion;
  header.fingerprint_bytes = static_cast<uint32_t>(fingerprint.size());
  header.object_bytes = object.size();
  header.checksum = checksum_of(fingerprint, object.data(), object.size());
  bool ok = write_all(fd, reinterpret_cast<const char*>(&header), sizeof header) &&
            write_all(fd, fingerprint.data(), fingerprint.size()) &&
            write_all(fd, object.data(), object.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    return;
  }
  evict();
}

void DiskCache::evict() const {
  DIR* dir = ::opendir(directory_.c_str());
  if (dir == nullptr) return;
  struct Entry {
    std::string path;
    int64_t bytes;
    int64_t mtime_ns;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    const bool temp = name.find(".tmp.") != std::string::npos;
    if (!ends_with(name, kSuffix) && !temp) continue;
    std::string path = directory_ + "/" + name;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;
    if (temp) {
      // A writer that died between open and rename; live writers take milliseconds.
      if (now - st.st_mtim.tv_sec > 600) ::unlink(path.c_str());
      continue;
    }
    entries.push_back({path, st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec});
    total += st.st_size;
  }
  ::closedir(dir);
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.mtime_ns < b.mtime_ns; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_ * 3 / 4) break;
    if (::unlink(e.path.c_str()) == 0) total -= e.bytes;
  }
}

}  // namespace ember::jit
