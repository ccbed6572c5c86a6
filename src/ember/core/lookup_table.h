// Lookup tables (TensorFlow's tf.lookup) as resources, held like variables (core/resource.h): the owner
// (a Python table object) holds the only strong reference, the LookupTableRegistry holds the table weakly
// by id, and the table ops (ops/lookup.cc) name their table by attribute 0, `resource`, so tracing orders
// them with automatic control dependencies (a find waits for the last insert; an insert waits for the
// finds before it) and GraphDef export writes the table as input 0, as TensorFlow writes a captured
// table handle.
//
// Note [Table ids]
// Table ids start at kFirstTableId, far above any variable id (ResourceManager counts variables from 1),
// so code that looks an id up as a variable (the device placer, a tape's watched variables, GraphDef's
// variable bindings) never mistakes a table for a variable: it finds no variable with that id.
//
// Note [Tables an op creates]
// A table made by a Python table object is owned by that object. A table made by an op (a GraphDef's or
// SavedModel's HashTableV2, MutableHashTableV2 or MutableDenseHashTableV2 node, which GraphDef import
// evaluates once per import, or the op run eagerly) has no such owner: as in TensorFlow's resource
// manager, the registry owns it, until the process ends (ember has no DestroyResourceOp) or until the C++
// SavedModel loader takes a load's tables over for its signatures (release_shared). Ops naming one
// `shared_name` (in one `container`) share one table, as TensorFlow's do; an op with no shared name makes
// a table of its own each time it runs.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember {

inline constexpr int64_t kFirstTableId = int64_t{1} << 48;

/// What a table can hold as keys: string, int32, int64. As values: those, float32, float64 and bool.
bool is_table_key_dtype(DType d);
bool is_table_value_dtype(DType d);

/// Whether `op` is one of the ops that create a table (HashTableV2, MutableHashTableV2,
/// MutableDenseHashTableV2), which GraphDef, FunctionDef and SavedModel import evaluate while importing.
constexpr bool is_table_creating_op(std::string_view op) {
  return op == "HashTableV2" || op == "MutableHashTableV2" || op == "MutableDenseHashTableV2";
}

class LookupTable {
 public:
  /// One key or value: integers and bool as int64, floats as double, strings as themselves.
  using Scalar = std::variant<int64_t, double, std::string>;

  /// `is_mutable`: a MutableHashTable (insert, remove, import) rather than an initializable HashTable
  /// (filled once by InitializeTableV2 or a text file).
  LookupTable(int64_t id, std::string name, DType key_dtype, DType value_dtype, bool is_mutable)
      : id_(id),
        name_(std::move(name)),
        key_dtype_(key_dtype),
        value_dtype_(value_dtype),
        mutable_(is_mutable) {}

  int64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  DType key_dtype() const { return key_dtype_; }
  DType value_dtype() const { return value_dtype_; }
  bool is_mutable() const { return mutable_; }
  bool initialized() const;
  int64_t size() const;

  /// Checks that `keys` (and `values`, when given) have the table's dtypes; an InvalidArgument naming
  /// `op`, the table and both dtypes otherwise (TensorFlow's "Signature mismatch").
  Status check_dtypes(const char* op, DType keys, DType values) const;

  /// out[i] = table[keys[i]], or the default (a scalar, or one value per key) where a key is absent.
  Status find(const TensorImpl& keys, const TensorImpl& default_value, TensorImpl& out) const;
  /// MutableHashTable only: sets table[keys[i]] = values[i] (the last of repeated keys wins).
  Status insert(const char* op, const TensorImpl& keys, const TensorImpl& values);
  /// MutableHashTable only: removes the keys that are present.
  Status remove(const char* op, const TensorImpl& keys);
  /// Every entry, in no particular order (as TensorFlow's).
  StatusOr<std::pair<TensorRef, TensorRef>> export_entries() const;
  /// Replaces the contents. A HashTable takes this as its initialization.
  Status import_entries(const char* op, const TensorImpl& keys, const TensorImpl& values);
  /// HashTable initialization (InitializeTableV2, text files): once. A second one with the same entries
  /// does nothing; with other entries it is a FailedPrecondition, as TensorFlow's. A key given twice with
  /// different values is a FailedPrecondition naming the key.
  Status initialize(const char* op, std::vector<std::pair<Scalar, Scalar>> entries);

  /// Element i of a tensor of a table dtype as a Scalar, and back.
  static Scalar scalar_at(const TensorImpl& t, int64_t i);
  static void set_scalar(TensorImpl& t, int64_t i, const Scalar& value);
  static std::string scalar_to_string(const Scalar& value);

 private:
  Status check_mutable(const char* op) const;
  Status check_same_length(const char* op, const TensorImpl& keys, const TensorImpl& values) const;

  int64_t id_;
  std::string name_;
  DType key_dtype_;
  DType value_dtype_;
  bool mutable_;
  mutable std::mutex mu_;
  bool initialized_ = false;
  std::unordered_map<Scalar, Scalar> entries_;
};

class LookupTableRegistry {
 public:
  static LookupTableRegistry& global();

  /// A new table; the returned pointer is its only strong reference. InvalidArgument for dtypes a table
  /// cannot hold.
  StatusOr<std::shared_ptr<LookupTable>> create(std::string name, DType key_dtype, DType value_dtype,
                                                bool is_mutable);
  /// The table a table-creating op (HashTableV2, MutableHashTableV2, MutableDenseHashTableV2) makes:
  /// with a `shared_name`, the table already under (`container`, `shared_name`) when there is one (its
  /// dtypes and kind must match: InvalidArgument naming `op` otherwise), else a new one under that name;
  /// with none, a new table of its own. Note [Tables an op creates].
  StatusOr<std::shared_ptr<LookupTable>> create_for_op(const char* op, const std::string& container,
                                                       const std::string& shared_name, DType key_dtype,
                                                       DType value_dtype, bool is_mutable);
  /// Hands over the tables ops made under a shared name ending in `suffix` (one SavedModel load's, Note
  /// [Tables shared within one load] in state/saved_model.cc): the caller owns them from then on, and
  /// `find` finds them while they live.
  std::vector<std::shared_ptr<LookupTable>> release_shared(std::string_view suffix);
  /// The table with this id; NotFound or, once its owner is gone, FailedPrecondition naming `op`.
  StatusOr<std::shared_ptr<LookupTable>> find(int64_t id, const char* op) const;

 private:
  mutable std::mutex mu_;
  int64_t next_id_ = kFirstTableId;
  std::unordered_map<int64_t, std::weak_ptr<LookupTable>> tables_;
  // The tables ops created, owned here: by (container, shared_name), and those with no shared name.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<LookupTable>> shared_;
  std::vector<std::shared_ptr<LookupTable>> unnamed_;
};

}  // namespace ember
