// How a bundle's files move into place, and how what an interrupted save left is settled: the file
// protocol under BundleWriter::finish and BundleReader::open (tensor_bundle.cc), apart from the format.
// A save at a prefix that holds a checkpoint keeps the previous generation under `.previous` names until
// its new index is in place (Note [Overwriting a checkpoint in place]); it locks what it works on, so
// that only a killed save's leftovers are ever settled (Note [Who may settle a save]). See
// docs/checkpoint.md, "Writing atomically".
#pragma once

#include <sys/stat.h>

#include <string>
#include <vector>

#include "ember/core/status.h"

namespace ember::bundle_files {

std::string dir_of(const std::string& path);
Status fsync_dir(const std::string& dir);

/// Moves `from` to `to` atomically; the file it replaces is freed in the background (Note [Replacing a
/// large file]). 0, or -1 with errno, as rename(2).
int replace_file(const std::string& from, const std::string& to);
/// Removes the name `path` now and frees its file in the background.
void unlink_in_background(const std::string& path);

/// After a save with `num_shards` shards: removes the data files of another shard count at `prefix`.
void remove_other_shard_counts(const std::string& prefix, int num_shards);

/// `<path>.previous`, the name a file of the kept generation takes.
std::string kept_path(const std::string& path);
bool regular_file(const std::string& path, struct stat* st);
/// Whether the kept generation is the checkpoint at `prefix`: its index is kept and `<prefix>.index` is
/// missing or the kept index itself (the new index has not landed).
bool kept_generation_is_current(const std::string& prefix);
/// The kept data files `<prefix>.data-DDDDD-of-DDDDD.previous`.
std::vector<std::string> kept_data_files(const std::string& prefix);

/// Keeps the data files at `prefix` that a save with `num_shards` shards replaces, then the index, under
/// their kept names: hard links, or, where the file system refuses them, the files themselves moved aside
/// (index first). The kept data files; none where the save replaces nothing.
StatusOr<std::vector<std::string>> keep_previous_generation(const std::string& prefix, int num_shards);
/// Puts an interrupted overwrite's kept generation back in place, or removes it once the new index landed.
/// The caller holds the generation's lock, or knows that no save is at work.
Status settle_interrupted_overwrite(const std::string& prefix);

/// lock_generation's results that are not a file descriptor.
constexpr int kNoGeneration = -1;      // no index at the prefix: no save keeps anything there
constexpr int kGenerationBusy = -2;    // a live save holds it (only without `wait`)
constexpr int kLocksUnsupported = -3;  // flock fails on this file system
/// Opens the index of the checkpoint at `prefix` (the kept one while it is current) and flocks it,
/// waiting for a save that holds it or not: the descriptor, to close to unlock, or one of the above.
int lock_generation(const std::string& prefix, bool wait);
/// Creates `path` (truncated) for writing and flocks it, so that no one takes it for a killed save's
/// leftover while this process lives: the descriptor, or -1 with errno.
int create_locked_file(const std::string& path);

}  // namespace ember::bundle_files
