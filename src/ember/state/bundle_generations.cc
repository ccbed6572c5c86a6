#include "ember/state/bundle_generations.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

#include "ember/state/tensor_bundle.h"

namespace ember {
namespace bundle_files {
namespace {

std::string errno_text() { return std::strerror(errno); }

// Note [Replacing a large file]
// rename() over an existing file frees the old file inside the call: for a 1 GiB checkpoint that is a
// quarter-million page-cache pages and the file's extents, 0.3-0.4 s of a save (strace), and on ext4 a
// rename that replaces a file also starts the new file's writeback (auto_da_alloc). Exchanging the two
// names instead (renameat2 RENAME_EXCHANGE, as atomic as rename: the name always holds one whole file)
// frees nothing. The old file, now under the temporary name, is unlinked at once while this process still
// holds it open: that only removes the name (nothing is left for a directory walk or `rmtree` to trip on),
// and the freeing waits for the last close, which a background thread does after the save returns. A
// process that exits or is killed closes it too. Where the target does not exist or the file system cannot
// exchange, it is a plain rename.
class FileReaper {
 public:
  static FileReaper& global() {
    static FileReaper* reaper = new FileReaper();  // never destroyed: its detached thread may still run
    return *reaper;
  }
  // Closes `fd` (the last reference to an unlinked file) on the background thread.
  void close_later(int fd) {
    // A forked child has neither the parent's thread nor, perhaps, an unlocked mutex: close now.
    const pid_t owner = owner_.load();
    if (owner != 0 && owner != ::getpid()) {
      ::close(fd);
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (owner_.load() == 0) {
      try {
        std::thread([this] { run(); }).detach();
      } catch (const std::system_error&) {
        lock.unlock();
        ::close(fd);  // no thread: now
        return;
      }
      owner_.store(::getpid());
    }
    pending_.push_back(fd);
    work_.notify_one();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [this] { return !pending_.empty(); });
      const int fd = pending_.front();
      pending_.pop_front();
      lock.unlock();
      ::close(fd);
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable work_;
  std::deque<int> pending_;
  std::atomic<pid_t> owner_{0};  // the process whose thread serves the queue
};

}  // namespace

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Status fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return make_error(Code::kUnavailable, "opening directory ", dir, ": ", errno_text());
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return make_error(Code::kUnavailable, "fsync of directory ", dir, ": ", errno_text());
  return Status();
}

// Removes the name `path` now and frees its file in the background (Note [Replacing a large file]).
void unlink_in_background(const std::string& path) {
  // Non-blocking: a FIFO of that name must not stall the save (anything but a regular file is closed now).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  ::unlink(path.c_str());
  if (fd < 0) return;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
    FileReaper::global().close_later(fd);
  else
    ::close(fd);
}

// Moves `from` to `to` atomically (Note [Replacing a large file]).
int replace_file(const std::string& from, const std::string& to) {
#if defined(__linux__) && defined(RENAME_EXCHANGE)
  // Only a regular file is exchanged; whatever else holds the name meets rename's own checks (EISDIR).
  struct stat st;
  if (::lstat(to.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
    unlink_in_background(from);  // the old contents now sit at `from`
    return 0;
  }
#endif
  return ::rename(from.c_str(), to.c_str());
}

// After a save with `num_shards` shards, the data files of an earlier bundle at the same prefix with
// another shard count belong to no index: they go (in the background, Note [Replacing a large file]).
void remove_other_shard_counts(const std::string& prefix, int num_shards) {
  const std::string dir = dir_of(prefix);
  const size_t slash = prefix.rfind('/');
  const std::string stem = (slash == std::string::npos ? prefix : prefix.substr(slash + 1)) + ".data-";
  char ours[16];
  std::snprintf(ours, sizeof(ours), "-of-%05d", num_shards);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // <stem>DDDDD-of-DDDDD and nothing else (not another save's temporary file)
    if (name.size() != stem.size() + 14 || name.compare(0, stem.size(), stem) != 0) continue;
    const std::string_view tail(name.data() + stem.size(), 14);
    bool digits = true;
    for (size_t i : {0, 1, 2, 3, 4, 9, 10, 11, 12, 13}) digits = digits && std::isdigit(tail[i]);
    if (!digits || tail.substr(5, 4) != "-of-" || tail.substr(5) == ours) continue;
    unlink_in_background(entry.path().string());
  }
}

// Note [Overwriting a checkpoint in place]
// A save to the prefix of an existing checkpoint with the same shard count replaces its data files, then
// its index: a kill between the two would leave new data under the old index. So before replacing
// anything the writer keeps the previous generation under second names: `<data file>.previous` for each
// data file it will replace and `<prefix>.index.previous`. Hard links copy nothing: the data files are
// linked first, then the index, whose kept name says that a kept generation is complete. Where the file
// system refuses hard links, the files themselves are moved aside, the index first (a missing
// `<prefix>.index` also says that the kept generation is the checkpoint), then each data file before its
// replacement lands; TensorFlow finds no index at the prefix meanwhile. While `<prefix>.index` is the kept
// index (the same inode) or missing, the new index has not landed and the checkpoint is the kept one; once
// it has, the checkpoint is the new one and the kept files are garbage, removed (data first, the kept
// index last). A reader (BundleReader::open) reads the kept generation while it is current and changes
// nothing. A kill leaves the kept files behind; the next save at the prefix settles them (rolls the kept
// generation back into place, or removes the garbage), and so does settle_abandoned_save once no live
// save holds them (Note [Who may settle a save]). A kill at any point thus leaves the old or the new
// checkpoint whole; TensorFlow reads the files whenever a write completed.
std::string kept_path(const std::string& path) { return path + ".previous"; }

bool regular_file(const std::string& path, struct stat* st) {
  return ::lstat(path.c_str(), st) == 0 && S_ISREG(st->st_mode);
}

// Whether `<prefix>.index.previous` holds the checkpoint: kept by an overwrite whose index never landed.
bool kept_generation_is_current(const std::string& prefix) {
  struct stat kept, index;
  if (!regular_file(kept_path(bundle_index_path(prefix)), &kept)) return false;
  if (!regular_file(bundle_index_path(prefix), &index)) return true;
  return kept.st_dev == index.st_dev && kept.st_ino == index.st_ino;
}

// The kept data files `<prefix>.data-DDDDD-of-DDDDD.previous` in the prefix's directory.
std::vector<std::string> kept_data_files(const std::string& prefix) {
  const size_t slash = prefix.rfind('/');
  const std::string stem = (slash == std::string::npos ? prefix : prefix.substr(slash + 1)) + ".data-";
  const std::string tail = kept_path("");
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_of(prefix), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == stem.size() + 14 + tail.size() && name.starts_with(stem) && name.ends_with(tail))
      out.push_back(entry.path().string());
  }
  return out;
}

// Settles an overwrite of `prefix` that was interrupted (Note [Overwriting a checkpoint in place]).
Status settle_interrupted_overwrite(const std::string& prefix) {
  const std::string index = bundle_index_path(prefix), kept_index = kept_path(index);
  const bool roll_back = kept_generation_is_current(prefix);
  for (const std::string& kept : kept_data_files(prefix)) {
    if (!roll_back) {
      unlink_in_background(kept);
      continue;
    }
    const std::string original = kept.substr(0, kept.size() - kept_path("").size());
    // Not replaced yet, the data file is the kept one: rename() between two links of one file does nothing.
    struct stat a, b;
    if (regular_file(original, &a) && regular_file(kept, &b) && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      ::unlink(kept.c_str());
      continue;
    }
    if (::rename(kept.c_str(), original.c_str()) != 0)
      return make_error(Code::kUnavailable, "checkpoint ", prefix, ": restoring ", original,
                        " from an interrupted save: ", errno_text());
  }
  struct stat st;
  if (roll_back && !regular_file(index, &st)) {
    if (::rename(kept_index.c_str(), index.c_str()) != 0)
      return make_error(Code::kUnavailable, "checkpoint ", prefix, ": restoring ", index,
                        " from an interrupted save: ", errno_text());
  } else if (::unlink(kept_index.c_str()) != 0 && errno != ENOENT) {
    return make_error(Code::kUnavailable, "checkpoint ", prefix, ": removing ", kept_index, ": ",
                      errno_text());
  }
  return Status();
}

namespace {

std::atomic<bool> hard_links_refused{false};

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Whether `fd` is still the file named `path`.
bool still_named(int fd, const std::string& path) {
  struct stat held, named;
  return ::fstat(fd, &held) == 0 && ::lstat(path.c_str(), &named) == 0 && same_file(held, named);
}

int flock_retrying(int fd, int operation) {
  int rc;
  do rc = ::flock(fd, operation);
  while (rc != 0 && errno == EINTR);
  return rc;
}

}  // namespace

StatusOr<std::vector<std::string>> keep_previous_generation(const std::string& prefix, int num_shards) {
  struct stat st;
  const std::string index = bundle_index_path(prefix), kept_index = kept_path(index);
  if (!regular_file(index, &st)) return std::vector<std::string>{};
  std::vector<std::string> replaced;
  for (int shard = 0; shard < num_shards; ++shard) {
    std::string data = bundle_data_path(prefix, shard, num_shards);
    if (regular_file(data, &st)) replaced.push_back(std::move(data));
  }
  if (replaced.empty()) return std::vector<std::string>{};  // a new shard count: the save replaces nothing
  std::vector<std::string> kept;
  bool linked = !hard_links_refused.load();
  for (size_t i = 0; i < replaced.size() && linked; ++i) {
    linked = ::link(replaced[i].c_str(), kept_path(replaced[i]).c_str()) == 0;
    if (linked) kept.push_back(kept_path(replaced[i]));
  }
  if (linked && ::link(index.c_str(), kept_index.c_str()) == 0) return kept;
  // No hard links here: move the generation aside, its index first (with `<prefix>.index` missing, the kept
  // generation is the checkpoint), then each data file the save replaces.
  for (const std::string& path : kept) ::unlink(path.c_str());
  kept.clear();
  if (::rename(index.c_str(), kept_index.c_str()) != 0)
    return make_error(Code::kUnavailable, "checkpoint ", prefix, ": keeping ", index, " as ", kept_index,
                      ": ", errno_text());
  for (const std::string& data : replaced) {
    if (::rename(data.c_str(), kept_path(data).c_str()) != 0) {
      Status s = make_error(Code::kUnavailable, "checkpoint ", prefix, ": keeping ", data, " as ",
                            kept_path(data), ": ", errno_text());
      (void)settle_interrupted_overwrite(prefix);  // puts back what moved
      return s;
    }
    kept.push_back(kept_path(data));
  }
  return kept;
}

// Note [Who may settle a save]
// The leftovers of a save (a kept generation, temporary files) may be settled only once that save is over:
// a save still running needs them. So a save holds flock(2) locks, which the kernel drops when the save
// closes the files or its process dies (SIGKILL included): on the index of the generation it replaces, from
// before it keeps anything until the kept files are gone (the lock is on the file, not the name, so it
// follows the index to `<prefix>.index.previous`, by link or rename), and on each of its temporary files
// from their creation until it returns (the index's temporary file becomes the new index, so the lock also
// covers the moment between the new index landing and the kept files going). Anyone else settles without
// waiting (LOCK_NB) and leaves alone what is locked; a save settling what a killed one left waits for the
// lock instead, so two saves at one prefix take turns there. TensorFlow's writers take no locks, so their
// temporary files look abandoned: settle_abandoned_save removes temporary files only when told to
// (CheckpointManager, over its own checkpoints).
int lock_generation(const std::string& prefix, bool wait) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const bool kept = kept_generation_is_current(prefix);
    const std::string path = kept ? kept_path(bundle_index_path(prefix)) : bundle_index_path(prefix);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
      if (kept_generation_is_current(prefix) != kept) continue;  // a save moved it meanwhile
      return kNoGeneration;
    }
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return kNoGeneration;
    }
    if (flock_retrying(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
      const bool busy = errno == EWOULDBLOCK;
      ::close(fd);
      return busy ? kGenerationBusy : kLocksUnsupported;
    }
    if (kept_generation_is_current(prefix) == kept && still_named(fd, path)) return fd;
    ::close(fd);  // moved while we waited: look again
  }
  return kGenerationBusy;  // it keeps moving: a save is at work
}

int create_locked_file(const std::string& path) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    // No locks on this file system: the file is written unprotected, as TensorFlow writes its own.
    if (flock_retrying(fd, LOCK_EX) != 0 || still_named(fd, path)) return fd;
    ::close(fd);  // a settle removed the name between the open and the lock
  }
  errno = EAGAIN;
  return -1;
}

namespace {

// Removes the temporary files of saves at `prefix` that no live save holds (Note [Who may settle a save]).
void remove_abandoned_temporary_files(const std::string& prefix) {
  const size_t slash = prefix.rfind('/');
  const std::string stem = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_of(prefix), ec)) {
    const std::string name = entry.path().filename().string();
    const bool temporary =
        name.starts_with(stem + ".index.tempstate") ||
        (name.starts_with(stem + ".data-") && name.find(".tempstate") != std::string::npos);
    if (!temporary) continue;
    const std::string path = entry.path().string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock_retrying(fd, LOCK_EX | LOCK_NB) == 0 &&
        still_named(fd, path))
      ::unlink(path.c_str());
    ::close(fd);
  }
}

}  // namespace

}  // namespace bundle_files

Status settle_abandoned_save(const std::string& prefix, bool temporary_files) {
  using namespace bundle_files;
  Status s;
  struct stat st;
  if (regular_file(kept_path(bundle_index_path(prefix)), &st) || !kept_data_files(prefix).empty()) {
    const int lock = lock_generation(prefix, /*wait=*/false);
    // Without locks a live save cannot be told from a killed one: its files are left alone.
    if (lock >= 0 || lock == kNoGeneration) s = settle_interrupted_overwrite(prefix);
    if (lock >= 0) ::close(lock);
  }
  if (temporary_files) remove_abandoned_temporary_files(prefix);
  return s;
}

void set_bundle_hard_links_refused_for_testing(bool refuse) {
  bundle_files::hard_links_refused.store(refuse);
}

}  // namespace ember
