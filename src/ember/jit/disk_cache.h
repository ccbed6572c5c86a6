// The JIT's on-disk kernel cache: one file per kernel fingerprint, shared by every process of the user.
//
// Note [Disk cache safety]
// Files are written to a temporary name in the same directory and renamed into place, so a reader sees a
// whole file or none, whatever other processes do at the same time (two writers of one kernel both write
// whole files; the last rename wins). A file holds a header (magic, version, sizes), the full fingerprint
// and the object, with a 64-bit checksum over fingerprint and object: a truncated, corrupt or colliding
// file fails the check, is deleted and its kernel compiled again — it is never loaded. Nothing is fsynced:
// a crash that leaves a renamed but unwritten file yields one such rejected file. The directory is kept
// under a byte budget by deleting the least recently used files (a hit refreshes the file's time) after
// each write; a reader whose file is deleted meanwhile still holds it open, or simply compiles.
#pragma once

#include <cstdint>
#include <string>

namespace ember::jit {

class DiskCache {
 public:
  /// $EMBER_JIT_CACHE_DIR, else $XDG_CACHE_HOME/ember/jit, else ~/.cache/ember/jit; "" when
  /// EMBER_JIT_CACHE=0 or no home is known.
  static std::string default_directory();
  /// EMBER_JIT_CACHE_MAX_BYTES, else 64 MiB.
  static int64_t default_max_bytes();

  DiskCache(std::string directory, int64_t max_bytes);

  enum class Result { kHit, kMiss, kRejected };
  /// Reads the object stored for `fingerprint`.
  Result load(const std::string& fingerprint, std::string& object) const;
  /// Stores it (failures are ignored: the cache is an optimization).
  void store(const std::string& fingerprint, const std::string& object) const;
  /// The file that holds `fingerprint`'s kernel.
  std::string path_for(const std::string& fingerprint) const;
  const std::string& directory() const { return directory_; }

 private:
  void evict() const;

  std::string directory_;
  int64_t max_bytes_;
};

/// 64-bit FNV-1a, seeded (the cache's checksum and file names).
uint64_t fnv1a(const void* data, size_t size, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace ember::jit
