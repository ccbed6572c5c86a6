// TensorFlow's checkpoint format V2 (a "tensor bundle"): `<prefix>.index`, a LevelDB-format table from
// tensor name to BundleEntryProto (dtype, shape, where its bytes lie, their CRC32C) with a
// BundleHeaderProto under the empty key, and `<prefix>.data-00000-of-00001`, the tensors' raw bytes one
// after another (large bundles: `<prefix>.data-0000i-of-0000n`, n shards). What ember writes TensorFlow's
// tf.train.load_checkpoint reads, and the other way round.
//
//   BundleWriter w("/tmp/ckpt/model");
//   EMBER_RETURN_IF_ERROR(w.add("dense/kernel/.ATTRIBUTES/VARIABLE_VALUE", kernel));
//   EMBER_RETURN_IF_ERROR(w.add_string("_CHECKPOINTABLE_OBJECT_GRAPH", graph_bytes));
//   EMBER_RETURN_IF_ERROR(w.finish());   // atomic: both files appear, or the old ones stay
//
//   EMBER_ASSIGN_OR_RETURN(BundleReader r, BundleReader::open("/tmp/ckpt/model"));
//   StatusOr<TensorRef> kernel = r.read("dense/kernel/.ATTRIBUTES/VARIABLE_VALUE");
//
// The reader trusts nothing in the files: every size, offset, varint and checksum is checked against the
// files before anything is allocated, and every problem is a Status naming the file and what is wrong.
// See docs/checkpoint.md.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"
#include "ember/tensor_bundle.pb.h"

namespace ember {

/// `<prefix>.index` and `<prefix>.data-<shard>-of-<num_shards>` (five digits each), as TensorFlow names them.
std::string bundle_index_path(const std::string& prefix);
std::string bundle_data_path(const std::string& prefix, int shard, int num_shards);
/// Whether a bundle is at `prefix`: its index, or the index an interrupted overwrite kept, which
/// BundleReader reads in its place (Note [Overwriting a checkpoint in place] in bundle_generations.cc).
bool bundle_exists(const std::string& prefix);

/// For tests: called by BundleWriter::finish after each step of moving a bundle into place ("temporary
/// files written", "previous generation kept", "data <shard> in place", "index in place", "previous
/// generation removed"); a Status other than OK fails finish there as an I/O error would, and a hook may
/// kill the process to test a crash. An empty function removes it.
using BundleFinishHook = std::function<Status(const std::string& step)>;
void set_bundle_finish_hook_for_testing(BundleFinishHook hook);
/// For tests: while true, BundleWriter behaves as on a file system that refuses link(2) (it moves the
/// previous generation aside instead of linking it).
void set_bundle_hard_links_refused_for_testing(bool refuse);

/// Settles what a save killed while writing `prefix` left behind, unless a live save still holds it (Note
/// [Who may settle a save] in bundle_generations.cc): an overwrite's kept `.previous` generation is put
/// back in place, or removed where the new index had landed. With `temporary_files`, the `.tempstate`
/// files that no live ember save holds go too; TensorFlow's saves hold no locks, so ask for that only
/// where TensorFlow is not writing this prefix. The next save at `prefix` settles the kept generation
/// anyway.
Status settle_abandoned_save(const std::string& prefix, bool temporary_files);

/// Writes one bundle. `add` keeps a reference to each tensor (values are immutable, so later variable
/// updates do not reach it; memory shared with another library through DLPack is copied) and encodes
/// string tensors at once; finish writes the data, in several shards
/// written in parallel when there is much of it (Note [Parallel shards] in tensor_bundle.cc), then the
/// index, and renames them into place (data first, then index). Until the index is in place the
/// checkpoint at `prefix` is the previous one, even if the process is killed (an overwrite keeps the
/// previous files until then: Note [Overwriting a checkpoint in place] in bundle_generations.cc); a writer
/// destroyed without finish removes its temporary files. With `sync`, finish also fsyncs every file before
/// the renames and the directory after them, so that the bundle survives a power loss too (Note [Atomic, not
/// synced] in tensor_bundle.cc).
class BundleWriter {
 public:
  explicit BundleWriter(std::string prefix, bool sync = true);
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  /// A tensor of any ember dtype under `key` (not empty, not added before).
  Status add(const std::string& key, TensorRef tensor);
  /// A DT_STRING tensor of shape `dims` (a scalar when empty) holding `values`, TensorFlow's encoding.
  Status add_strings(const std::string& key, const std::vector<std::string_view>& values,
                     const std::vector<int64_t>& dims = {});
  /// A scalar DT_STRING (the object graph is one).
  Status add_string(const std::string& key, std::string_view bytes) { return add_strings(key, {bytes}); }
  /// Writes the data and the index and moves them into place. The first error of any call is returned again.
  Status finish();
  /// The number of data shards finish wrote (1 until then).
  int num_shards() const { return num_shards_; }

 private:
  // One tensor's bytes waiting for finish: a dense tensor's, or a string tensor's encoding and its CRC
  // (TensorFlow's string CRC is not the CRC of the encoding).
  struct Piece {
    std::string key;
    TensorRef tensor;
    std::string encoded;
    uint32_t encoded_crc = 0;
    size_t bytes() const { return tensor ? tensor->nbytes() : encoded.size(); }
  };

  Status begin_entry(const std::string& key);
  Status fail(Status s);
  // fail(s), once files may have moved: settles the overwrite first (Note [Overwriting a checkpoint in
  // place] in bundle_generations.cc). OK stays OK.
  Status fail_at(Status s);
  Status fail_at_step(const std::string& step);

  std::string prefix_, suffix_, index_tmp_;
  std::vector<std::string> data_tmps_;  // one per shard; [0] is created at construction
  int first_fd_ = -1;
  // Locked files, closed (unlocked) when finish returns: the temporary files and the index of the
  // generation the save replaces (Note [Who may settle a save] in bundle_generations.cc).
  std::vector<int> held_fds_;
  int num_shards_ = 1;
  bool finished_ = false;
  bool sync_ = true;
  Status status_;
  std::map<std::string, proto::BundleEntryProto> entries_;
  std::vector<Piece> pieces_;  // in the order added
};

/// A bundle opened for reading: the whole index is parsed and checked at open; tensor bytes are read
/// (and their CRC32C checked) on demand.
class BundleReader {
 public:
  static StatusOr<BundleReader> open(const std::string& prefix);
  BundleReader(BundleReader&&) noexcept;
  BundleReader& operator=(BundleReader&&) noexcept;
  ~BundleReader();

  const std::string& prefix() const { return prefix_; }
  /// Every tensor name, sorted (the header's empty key is not one).
  std::vector<std::string> keys() const;
  bool contains(const std::string& key) const { return entries_.count(key) != 0; }
  /// The entry of `key` (NotFound names the key and the file).
  StatusOr<const proto::BundleEntryProto*> entry(const std::string& key) const;
  /// TensorFlow's DataType number of `key` (DT_STRING = 7 included) and its dims.
  StatusOr<int> tf_dtype(const std::string& key) const;
  StatusOr<std::vector<int64_t>> dims(const std::string& key) const;

  /// A numeric tensor (any ember dtype).
  StatusOr<TensorRef> read(const std::string& key) const;
  /// Every element of a DT_STRING tensor, in row-major order.
  StatusOr<std::vector<std::string>> read_strings(const std::string& key) const;
  /// A scalar DT_STRING tensor.
  StatusOr<std::string> read_string(const std::string& key) const;

 private:
  BundleReader() = default;
  // The bundle at `prefix`, or the generation an interrupted overwrite kept for it.
  static StatusOr<BundleReader> open_generation(const std::string& prefix, bool kept);
  struct Located {
    int fd;
    std::string path;
  };
  StatusOr<Located> locate(const std::string& key, const proto::BundleEntryProto& e) const;

  std::string prefix_;
  proto::BundleHeaderProto header_;
  std::map<std::string, proto::BundleEntryProto> entries_;
  std::vector<int> shard_fds_;
  std::vector<int64_t> shard_sizes_;
  std::vector<std::string> shard_paths_;
};

}  // namespace ember
