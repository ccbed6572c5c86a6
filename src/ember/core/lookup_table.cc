#include "ember/core/lookup_table.h"

#include <cstdio>

namespace ember {

bool is_table_key_dtype(DType d) { return d == DType::kString || d == DType::kInt32 || d == DType::kInt64; }

bool is_table_value_dtype(DType d) {
  return is_table_key_dtype(d) || d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kBool;
}

LookupTable::Scalar LookupTable::scalar_at(const TensorImpl& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kString:
      return t.data<std::string>()[i];
    case DType::kInt32:
      return static_cast<int64_t>(t.data<int32_t>()[i]);
    case DType::kInt64:
      return t.data<int64_t>()[i];
    case DType::kBool:
      return static_cast<int64_t>(t.data<bool>()[i]);
    case DType::kFloat32:
      return static_cast<double>(t.data<float>()[i]);
    case DType::kFloat64:
      return t.data<double>()[i];
    default:
      EMBER_DCHECK(false);
      return int64_t{0};
  }
}

void LookupTable::set_scalar(TensorImpl& t, int64_t i, const Scalar& value) {
  switch (t.dtype()) {
    case DType::kString:
      t.mutable_data<std::string>()[i] = std::get<std::string>(value);
      break;
    case DType::kInt32:
      t.mutable_data<int32_t>()[i] = static_cast<int32_t>(std::get<int64_t>(value));
      break;
    case DType::kInt64:
      t.mutable_data<int64_t>()[i] = std::get<int64_t>(value);
      break;
    case DType::kBool:
      t.mutable_data<bool>()[i] = std::get<int64_t>(value) != 0;
      break;
    case DType::kFloat32:
      t.mutable_data<float>()[i] = static_cast<float>(std::get<double>(value));
      break;
    case DType::kFloat64:
      t.mutable_data<double>()[i] = std::get<double>(value);
      break;
    default:
      EMBER_DCHECK(false);
  }
}

std::string LookupTable::scalar_to_string(const Scalar& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  char text[32];
  std::snprintf(text, sizeof text, "%g", std::get<double>(value));
  return text;
}

bool LookupTable::initialized() const {
  std::lock_guard<std::mutex> lock(mu_);
  return initialized_;
}

int64_t LookupTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(entries_.size());
}

Status LookupTable::check_dtypes(const char* op, DType keys, DType values) const {
  if (keys == key_dtype_ && values == value_dtype_) return Status::OK();
  return invalid_argument(op, ": table '", name_, "' maps ", dtype_name(key_dtype_), " -> ",
                          dtype_name(value_dtype_), ", got keys of dtype ", dtype_name(keys),
                          " and values of dtype ", dtype_name(values));
}

Status LookupTable::check_mutable(const char* op) const {
  if (mutable_) return Status::OK();
  return make_error(
      Code::kUnimplemented, op, ": table '", name_,
      "' is a HashTable, which is filled once by its initializer; only a MutableHashTable takes "
      "insertions and removals");
}

Status LookupTable::check_same_length(const char* op, const TensorImpl& keys,
                                      const TensorImpl& values) const {
  if (keys.shape() == values.shape()) return Status::OK();
  return invalid_argument(op, ": table '", name_, "': expected values of shape ", keys.shape().to_string(),
                          " (the keys'), got ", values.shape().to_string());
}

Status LookupTable::find(const TensorImpl& keys, const TensorImpl& default_value, TensorImpl& out) const {
  const int64_t n = keys.num_elements();
  const bool scalar_default = default_value.num_elements() == 1 && default_value.shape().rank() <= 1;
  if (!scalar_default && default_value.shape() != keys.shape())
    return invalid_argument("LookupTableFindV2: table '", name_,
                            "': expected a default value of shape [] or ", keys.shape().to_string(), ", got ",
                            default_value.shape().to_string());
  std::lock_guard<std::mutex> lock(mu_);
  if (!mutable_ && !initialized_)
    return make_error(Code::kFailedPrecondition, "LookupTableFindV2: table '", name_, "' is not initialized");
  for (int64_t i = 0; i < n; ++i) {
    auto it = entries_.find(scalar_at(keys, i));
    if (it != entries_.end()) {
      set_scalar(out, i, it->second);
    } else {
      set_scalar(out, i, scalar_at(default_value, scalar_default ? 0 : i));
    }
  }
  return Status::OK();
}

Status LookupTable::insert(const char* op, const TensorImpl& keys, const TensorImpl& values) {
  EMBER_RETURN_IF_ERROR(check_mutable(op));
  EMBER_RETURN_IF_ERROR(check_same_length(op, keys, values));
  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t i = 0; i < keys.num_elements(); ++i) entries_[scalar_at(keys, i)] = scalar_at(values, i);
  return Status::OK();
}

Status LookupTable::remove(const char* op, const TensorImpl& keys) {
  EMBER_RETURN_IF_ERROR(check_mutable(op));
  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t i = 0; i < keys.num_elements(); ++i) entries_.erase(scalar_at(keys, i));
  return Status::OK();
}

StatusOr<std::pair<TensorRef, TensorRef>> LookupTable::export_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Shape shape({static_cast<int64_t>(entries_.size())});
  auto keys = TensorImpl::allocate(key_dtype_, shape);
  if (!keys.ok()) return keys.status();
  auto values = TensorImpl::allocate(value_dtype_, shape);
  if (!values.ok()) return values.status();
  int64_t i = 0;
  for (const auto& [key, value] : entries_) {
    set_scalar(*keys.value(), i, key);
    set_scalar(*values.value(), i, value);
    ++i;
  }
  return std::make_pair(std::move(keys).value(), std::move(values).value());
}

Status LookupTable::import_entries(const char* op, const TensorImpl& keys, const TensorImpl& values) {
  EMBER_RETURN_IF_ERROR(check_same_length(op, keys, values));
  std::vector<std::pair<Scalar, Scalar>> entries;
  entries.reserve(static_cast<size_t>(keys.num_elements()));
  for (int64_t i = 0; i < keys.num_elements(); ++i)
    entries.emplace_back(scalar_at(keys, i), scalar_at(values, i));
  if (!mutable_) return initialize(op, std::move(entries));
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  for (auto& [key, value] : entries) entries_[std::move(key)] = std::move(value);
  return Status::OK();
}

Status LookupTable::initialize(const char* op, std::vector<std::pair<Scalar, Scalar>> entries) {
  std::unordered_map<Scalar, Scalar> filled;
  for (auto& [key, value] : entries) {
    auto [it, added] = filled.emplace(key, value);
    if (!added && it->second != value)
      return make_error(Code::kFailedPrecondition, op, ": table '", name_,
                        "': HashTable has different value for same key. Key ", scalar_to_string(key), " has ",
                        scalar_to_string(it->second), " and trying to add value ", scalar_to_string(value));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (initialized_) {
    // Initializing again is allowed when it would change nothing (TensorFlow's AreEntriesSame), which is
    // what running a table's initializer from a second function call does.
    if (filled == entries_) return Status::OK();
    return make_error(Code::kFailedPrecondition, op, ": table '", name_,
                      "' was already initialized with different data");
  }
  entries_ = std::move(filled);
  initialized_ = true;
  return Status::OK();
}

LookupTableRegistry& LookupTableRegistry::global() {
  static LookupTableRegistry* registry =
      new LookupTableRegistry;  // never destroyed: tables may outlive main()
  return *registry;
}

StatusOr<std::shared_ptr<LookupTable>> LookupTableRegistry::create(std::string name, DType key_dtype,
                                                                   DType value_dtype, bool is_mutable) {
  if (!is_table_key_dtype(key_dtype))
    return invalid_argument("lookup table '", name, "': keys must be string, int32 or int64, got ",
                            dtype_name(key_dtype));
  if (!is_table_value_dtype(value_dtype))
    return invalid_argument("lookup table '", name,
                            "': values must be string, int32, int64, float32, float64 or bool, got ",
                            dtype_name(value_dtype));
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t id = next_id_++;
  // The last owner's release removes the registry entry, so dropped tables leave nothing behind.
  std::shared_ptr<LookupTable> table(new LookupTable(id, std::move(name), key_dtype, value_dtype, is_mutable),
                                     [this](LookupTable* t) {
                                       {
                                         std::lock_guard<std::mutex> lock(mu_);
                                         tables_.erase(t->id());
                                       }
                                       delete t;
                                     });
  tables_.emplace(id, table);
  return table;
}

StatusOr<std::shared_ptr<LookupTable>> LookupTableRegistry::create_for_op(const char* op,
                                                                          const std::string& container,
                                                                          const std::string& shared_name,
                                                                          DType key_dtype, DType value_dtype,
                                                                          bool is_mutable) {
  const auto key = std::make_pair(container, shared_name);
  if (!shared_name.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = shared_.find(key);
    if (it != shared_.end()) {
      const LookupTable& t = *it->second;
      if (t.key_dtype() != key_dtype || t.value_dtype() != value_dtype || t.is_mutable() != is_mutable)
        return invalid_argument(op, ": shared_name '", shared_name, "' names a ",
                                t.is_mutable() ? "MutableHashTable" : "HashTable", " of ",
                                dtype_name(t.key_dtype()), " -> ", dtype_name(t.value_dtype()),
                                "; this op wants a ", is_mutable ? "MutableHashTable" : "HashTable", " of ",
                                dtype_name(key_dtype), " -> ", dtype_name(value_dtype));
      return it->second;
    }
  }
  auto table = create(shared_name.empty() ? std::string("hash_table") : shared_name, key_dtype, value_dtype,
                      is_mutable);
  if (!table.ok()) return table.status().with_prefix(std::string(op) + ": ");
  std::lock_guard<std::mutex> lock(mu_);
  if (shared_name.empty()) {
    unnamed_.push_back(*table);
    return table;
  }
  // Another thread may have made the same shared table meanwhile: the first one stays.
  return shared_.emplace(key, *table).first->second;
}

std::vector<std::shared_ptr<LookupTable>> LookupTableRegistry::release_shared(std::string_view suffix) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<LookupTable>> released;
  for (auto it = shared_.begin(); it != shared_.end();) {
    if (!it->first.second.ends_with(suffix)) {
      ++it;
      continue;
    }
    released.push_back(std::move(it->second));
    it = shared_.erase(it);
  }
  return released;
}

StatusOr<std::shared_ptr<LookupTable>> LookupTableRegistry::find(int64_t id, const char* op) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tables_.find(id);
  std::shared_ptr<LookupTable> table = it == tables_.end() ? nullptr : it->second.lock();
  if (table) return table;
  if (id < kFirstTableId || id >= next_id_)
    return make_error(Code::kNotFound, op, ": there is no lookup table with resource id ", id);
  return make_error(Code::kFailedPrecondition, op, ": lookup table with resource id ", id,
                    " has been deleted (its Python object was freed), but a function still uses it; keep a "
                    "reference to the table for as long as functions that use it run");
}

}  // namespace ember
