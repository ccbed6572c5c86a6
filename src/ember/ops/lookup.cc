// tf.lookup's table ops, with TensorFlow's names and operands: LookupTableFindV2, LookupTableInsertV2,
// LookupTableRemoveV2, LookupTableSizeV2, LookupTableExportV2, LookupTableImportV2, InitializeTableV2 and
// InitializeTableFromTextFileV2. As the variable ops (ops/state.cc), each names its table by attribute 0,
// `resource`, the table's id (core/lookup_table.h), and is flagged kReadsResource or kWritesResource, so
// tracing orders the ops on one table and leaves ops on different tables unordered. A table is created by
// its owner (Python: _C.create_lookup_table), as a variable is, or by one of TensorFlow's table-creating
// ops, HashTableV2, MutableHashTableV2 and MutableDenseHashTableV2 (Note [Table-creating ops]).
//
// Note [Table-creating ops]
// In TensorFlow these ops output a DT_RESOURCE handle that the table ops take as input 0. ember names a
// table by attribute instead and has no resource dtype, so a graph of ember's never holds them: GraphDef
// import evaluates each such node once (graph/graph_def.cc, Note [Tables in a GraphDef]) and binds its
// output, as it binds a resource Placeholder to a variable, so the table ops reading it name that table.
// Run eagerly, the op makes the table (shared by `shared_name`, core/lookup_table.h's Note [Tables an op
// creates]) and returns its id, an int64 scalar, the value a bound table's handle stands for.
#include <fstream>
#include <string>

#include "ember/core/lookup_table.h"
#include "ember/ops/families.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kKeyTypes = kStringType | kIndexTypes;
constexpr DTypeSet kValueTypes =
    kKeyTypes | dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64) | dtype_bit(DType::kBool);

StatusOr<std::shared_ptr<LookupTable>> table_of(const AttrReader& attrs, const OpDef& op) {
  return LookupTableRegistry::global().find(attrs.attr_int(0), op.name.c_str());
}

// The shape functions look the table up too, so a traced call with the wrong dtypes fails where it is
// written, as it would eagerly.
Status check_table_dtypes(InferContext& ctx, DType keys, DType values) {
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  return (*table)->check_dtypes(ctx.op->name.c_str(), keys, values);
}

// LookupTableFindV2(keys: Tin, default_value: Tout) -> values: Tout, shaped as the keys.
Status find_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_table_dtypes(ctx, ctx.inputs[0].dtype, ctx.inputs[1].dtype));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, ctx.inputs[0].shape});
  return Status::OK();
}

Status find_kernel(KernelContext& ctx) {
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  EMBER_RETURN_IF_ERROR(
      (*table)->check_dtypes("LookupTableFindV2", ctx.input(0).dtype(), ctx.input(1).dtype()));
  return (*table)->find(ctx.input(0), ctx.input(1), ctx.output(0));
}

// Insert, import and initialize: (keys: Tin, values: Tout), no outputs.
Status keys_values_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_table_dtypes(ctx, ctx.inputs[0].dtype, ctx.inputs[1].dtype));
  if (!ctx.inputs[0].shape.is_compatible_with(ctx.inputs[1].shape))
    return invalid_argument(ctx.op->name, ": expected values of shape ", ctx.inputs[0].shape.to_string(),
                            " (the keys'), got ", ctx.inputs[1].shape.to_string());
  return Status::OK();
}

template <int kMode>  // 0: insert, 1: import, 2: initialize
Status keys_values_kernel(KernelContext& ctx) {
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  LookupTable& t = **table;
  const char* op = ctx.op->name.c_str();
  EMBER_RETURN_IF_ERROR(t.check_dtypes(op, ctx.input(0).dtype(), ctx.input(1).dtype()));
  if constexpr (kMode == 0) return t.insert(op, ctx.input(0), ctx.input(1));
  if constexpr (kMode == 1) return t.import_entries(op, ctx.input(0), ctx.input(1));
  if (ctx.input(0).shape() != ctx.input(1).shape())
    return invalid_argument(op, ": table '", t.name(), "': expected values of shape ",
                            ctx.input(0).shape().to_string(), " (the keys'), got ",
                            ctx.input(1).shape().to_string());
  if (t.is_mutable())
    return invalid_argument(op, ": table '", t.name(),
                            "' is a MutableHashTable; InitializeTableV2 fills a HashTable");
  std::vector<std::pair<LookupTable::Scalar, LookupTable::Scalar>> entries;
  for (int64_t i = 0; i < ctx.input(0).num_elements(); ++i)
    entries.emplace_back(LookupTable::scalar_at(ctx.input(0), i), LookupTable::scalar_at(ctx.input(1), i));
  return t.initialize(op, std::move(entries));
}

// LookupTableRemoveV2(keys: Tin).
Status remove_shape(InferContext& ctx) {
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  return (*table)->check_dtypes("LookupTableRemoveV2", ctx.inputs[0].dtype, (*table)->value_dtype());
}

Status remove_kernel(KernelContext& ctx) {
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  EMBER_RETURN_IF_ERROR(
      (*table)->check_dtypes("LookupTableRemoveV2", ctx.input(0).dtype(), (*table)->value_dtype()));
  return (*table)->remove("LookupTableRemoveV2", ctx.input(0));
}

// LookupTableSizeV2() -> size: int64 scalar.
Status size_shape(InferContext& ctx) {
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape()});
  return Status::OK();
}

Status size_kernel(KernelContext& ctx) {
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  ctx.output(0).mutable_data<int64_t>()[0] = (*table)->size();
  return Status::OK();
}

// LookupTableExportV2() -> (keys: Tkeys [?], values: Tvalues [?]); attrs resource, Tkeys, Tvalues.
Status export_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_table_dtypes(ctx, ctx.attr_dtype(1), ctx.attr_dtype(2)));
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(1), Shape({-1})});
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(2), Shape({-1})});
  return Status::OK();
}

Status export_kernel(KernelContext& ctx) {
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  EMBER_RETURN_IF_ERROR((*table)->check_dtypes("LookupTableExportV2", ctx.attr_dtype(1), ctx.attr_dtype(2)));
  auto entries = (*table)->export_entries();
  if (!entries.ok()) return entries.status();
  ctx.outputs[0] = std::move(entries->first);
  ctx.outputs[1] = std::move(entries->second);
  return Status::OK();
}

// InitializeTableFromTextFileV2(filename: string scalar); attrs resource, key_index, value_index,
// vocab_size, delimiter, offset. Column -2 is the whole line, -1 the line number plus `offset`.
Status text_file_shape(InferContext& ctx) {
  if (ctx.inputs[0].shape.rank_known() && ctx.inputs[0].shape.rank() != 0)
    return invalid_argument("InitializeTableFromTextFileV2: filename must be a scalar, got shape ",
                            ctx.inputs[0].shape.to_string());
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  for (int i : {1, 2})
    if (ctx.attr_int(i) < -2)
      return invalid_argument("InitializeTableFromTextFileV2: ", i == 1 ? "key_index" : "value_index",
                              " must be -2 (whole line), -1 (line number) or a column >= 0, got ",
                              ctx.attr_int(i));
  return Status::OK();
}

std::vector<std::string> split_line(const std::string& line, const std::string& delimiter) {
  std::vector<std::string> fields;
  if (delimiter.empty()) {
    fields.push_back(line);
    return fields;
  }
  size_t start = 0;
  for (size_t at; (at = line.find(delimiter, start)) != std::string::npos; start = at + delimiter.size())
    fields.push_back(line.substr(start, at - start));
  fields.push_back(line.substr(start));
  return fields;
}

// The key or value of one line as the table's dtype.
StatusOr<LookupTable::Scalar> field_value(const std::string& line, const std::vector<std::string>& fields,
                                          int64_t index, int64_t line_number, int64_t offset, DType dtype) {
  if (index == -1) {
    if (dtype != DType::kInt64 && dtype != DType::kInt32)
      return invalid_argument(
          "InitializeTableFromTextFileV2: the line number is an integer, but the table holds ",
          dtype_name(dtype));
    return LookupTable::Scalar(line_number + offset);
  }
  const std::string& text = index == -2 ? line : fields[static_cast<size_t>(index)];
  if (dtype == DType::kString) return LookupTable::Scalar(text);
  try {
    size_t used = 0;
    if (dtype == DType::kFloat32 || dtype == DType::kFloat64) {
      double v = std::stod(text, &used);
      if (used == text.size()) return LookupTable::Scalar(v);
    } else {
      long long v = std::stoll(text, &used);
      if (used == text.size()) return LookupTable::Scalar(static_cast<int64_t>(v));
    }
  } catch (const std::exception&) {
  }
  return invalid_argument("InitializeTableFromTextFileV2: Field ", text, " in line ", line_number,
                          " is not a valid ", dtype_name(dtype));
}

Status text_file_kernel(KernelContext& ctx) {
  auto table = table_of(ctx, *ctx.op);
  if (!table.ok()) return table.status();
  LookupTable& t = **table;
  const std::string& filename = ctx.input(0).data<std::string>()[0];
  const int64_t key_index = ctx.attr_int(1), value_index = ctx.attr_int(2), vocab_size = ctx.attr_int(3);
  const std::string& delimiter = ctx.attr_string(4);
  const int64_t offset = ctx.attr_int(5);
  if (t.is_mutable())
    return invalid_argument("InitializeTableFromTextFileV2: table '", t.name(),
                            "' is a MutableHashTable; a text file initializes a HashTable");
  std::ifstream in(filename);
  if (!in)
    return make_error(Code::kNotFound, "InitializeTableFromTextFileV2: ", filename,
                      "; No such file or directory");
  // A column past any line's length fails on the first line; the bound keeps `needed` from overflowing.
  constexpr int64_t kMaxColumn = int64_t{1} << 40;
  if (key_index > kMaxColumn || value_index > kMaxColumn)
    return invalid_argument("InitializeTableFromTextFileV2: column ", std::max(key_index, value_index),
                            " is past the end of every line of ", filename);
  const int64_t needed = std::max(key_index, value_index) + 1;
  std::vector<std::pair<LookupTable::Scalar, LookupTable::Scalar>> entries;
  std::string line;
  int64_t line_number = 0;
  for (; (vocab_size < 0 || line_number < vocab_size) && std::getline(in, line); ++line_number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty())
      return invalid_argument("InitializeTableFromTextFileV2: Invalid content in ", filename,
                              ": empty line found at line ", line_number);
    std::vector<std::string> fields = split_line(line, delimiter);
    if (static_cast<int64_t>(fields.size()) < needed)
      return invalid_argument("InitializeTableFromTextFileV2: Invalid number of columns in ", filename,
                              " line ", line_number, " (", line, ") : expected at least ", needed, " got ",
                              fields.size());
    auto key = field_value(line, fields, key_index, line_number, offset, t.key_dtype());
    if (!key.ok()) return key.status();
    auto value = field_value(line, fields, value_index, line_number, offset, t.value_dtype());
    if (!value.ok()) return value.status();
    entries.emplace_back(std::move(key).value(), std::move(value).value());
  }
  if (vocab_size >= 0 && line_number < vocab_size)
    return invalid_argument("InitializeTableFromTextFileV2: Invalid vocab_size in ", filename, ": expected ",
                            vocab_size, " but got ", line_number);
  return t.initialize("InitializeTableFromTextFileV2", std::move(entries));
}

// HashTableV2, MutableHashTableV2 and MutableDenseHashTableV2 (attributes container, shared_name,
// use_node_name_sharing, key_dtype, value_dtype, ...) -> table_handle: the table's id, an int64 scalar.
Status create_table_shape(InferContext& ctx) {
  const int value_shape = ctx.op->attr_index("value_shape");
  if (value_shape >= 0 && !ctx.attr_ints(value_shape).empty())
    return make_error(Code::kUnimplemented, ctx.op->name,
                      ": ember's tables hold scalar values, got value_shape [",
                      ctx.attr_ints(value_shape).size(), " dimensions]");
  if (ctx.op->inputs.size() == 2)  // MutableDenseHashTableV2's empty_key and deleted_key
    for (int i : {0, 1})
      if (ctx.inputs[i].dtype != ctx.attr_dtype(3))
        return invalid_argument(ctx.op->name, ": ", i == 0 ? "empty_key" : "deleted_key", " has dtype ",
                                dtype_name(ctx.inputs[i].dtype), ", but key_dtype is ",
                                dtype_name(ctx.attr_dtype(3)));
  ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape()});
  return Status::OK();
}

Status create_table_kernel(KernelContext& ctx) {
  auto table = LookupTableRegistry::global().create_for_op(
      ctx.op->name.c_str(), ctx.attr_string(0), ctx.attr_string(1), ctx.attr_dtype(3), ctx.attr_dtype(4),
      /*is_mutable=*/ctx.op->name != "HashTableV2");
  if (!table.ok()) return table.status();
  ctx.output(0).mutable_data<int64_t>()[0] = (*table)->id();
  return Status::OK();
}

}  // namespace

void register_lookup_ops(OpRegistry& r) {
  struct Creator {
    const char* name;
    const char* doc;
  };
  const Creator creators[] = {
      {"HashTableV2",
       "Creates a HashTable (filled once by an initializer), shared by shared_name; its id. "
       "HashTableV2(key_dtype=string, value_dtype=int64, shared_name='vocab')"},
      {"MutableHashTableV2",
       "Creates a MutableHashTable, shared by shared_name; its id. "
       "MutableHashTableV2(key_dtype=string, value_dtype=int64)"},
      {"MutableDenseHashTableV2",
       "Creates a DenseHashTable (kept as a MutableHashTable), shared by shared_name; its id. "
       "MutableDenseHashTableV2(empty_key='', deleted_key='$', key_dtype=string, value_dtype=int64)"},
  };
  for (const Creator& c : creators) {
    const bool dense = std::string_view(c.name) == "MutableDenseHashTableV2";
    OpBuilder op(c.name);
    op.doc(c.doc);
    if (dense) op.input("empty_key", 0).input("deleted_key", 0).type_var(kKeyTypes, 0);
    op.output("table_handle")
        .attr("container", AttrType::kString, std::string())
        .attr("shared_name", AttrType::kString, std::string())
        .attr("use_node_name_sharing", AttrType::kBool, false)
        .attr("key_dtype", AttrType::kDType)
        .attr("value_dtype", AttrType::kDType);
    if (dense)
      op.attr("value_shape", AttrType::kInts, std::vector<int64_t>{})
          .attr("initial_num_buckets", AttrType::kInt, int64_t{131072})
          .attr("max_load_factor", AttrType::kFloat, 0.8);
    else
      op.type_var(dtype_bit(DType::kInt64)).dispatch_on_output();
    op.flags(kStateful | kNotDifferentiable)
        .shape(&create_table_shape)
        .kernel(dense ? kKeyTypes : dtype_bit(DType::kInt64), &create_table_kernel)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  OpBuilder("LookupTableFindV2")
      .doc(
          "Looks keys up in a table, the default where absent; shaped as keys. "
          "table {'a': 1} : LookupTableFindV2(['a', 'b'], -1) == [1, -1]")
      .input("keys", 0)
      .input("default_value", 1)
      .output("values")
      .type_var(kKeyTypes, 0)
      .type_var(kValueTypes, 1)
      .attr("resource", AttrType::kInt)
      .flags(kStateful | kReadsResource | kNotDifferentiable)
      .shape(&find_shape)
      .kernel(kKeyTypes, &find_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  struct KeysValues {
    const char* name;
    KernelFn kernel;
    const char* doc;
  };
  const KeysValues writers[] = {
      {"LookupTableInsertV2", &keys_values_kernel<0>,
       "Sets table[keys[i]] = values[i] in a MutableHashTable. LookupTableInsertV2(['a'], [1])"},
      {"LookupTableImportV2", &keys_values_kernel<1>,
       "Replaces a table's contents with keys -> values. LookupTableImportV2(['a', 'b'], [1, 2])"},
      {"InitializeTableV2", &keys_values_kernel<2>,
       "Fills a HashTable once with keys -> values. InitializeTableV2(['a', 'b'], [1, 2])"},
  };
  for (const KeysValues& w : writers) {
    OpBuilder(w.name)
        .doc(w.doc)
        .input("keys", 0)
        .input("values", 1)
        .type_var(kKeyTypes, 0)
        .type_var(kValueTypes, 1)
        .attr("resource", AttrType::kInt)
        .flags(kStateful | kWritesResource | kNotDifferentiable)
        .shape(&keys_values_shape)
        .kernel(kKeyTypes, w.kernel)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  OpBuilder("LookupTableRemoveV2")
      .doc("Removes keys from a MutableHashTable (absent ones are ignored). LookupTableRemoveV2(['a'])")
      .input("keys", 0)
      .type_var(kKeyTypes, 0)
      .attr("resource", AttrType::kInt)
      .flags(kStateful | kWritesResource | kNotDifferentiable)
      .shape(&remove_shape)
      .kernel(kKeyTypes, &remove_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("LookupTableSizeV2")
      .doc("The number of entries of a table, an int64 scalar. table {'a': 1} : LookupTableSizeV2() == 1")
      .output("size")
      .type_var(dtype_bit(DType::kInt64))
      .attr("resource", AttrType::kInt)
      .dispatch_on_output()
      .flags(kStateful | kReadsResource | kNotDifferentiable)
      .shape(&size_shape)
      .kernel(DType::kInt64, &size_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("LookupTableExportV2")
      .doc(
          "Every key and value of a table, in no particular order. "
          "table {'a': 1} : LookupTableExportV2(Tkeys=string, Tvalues=int64) == (['a'], [1])")
      .output("keys")
      .output("values")
      .type_var(kKeyTypes)
      .attr("resource", AttrType::kInt)
      .attr("Tkeys", AttrType::kDType)
      .attr("Tvalues", AttrType::kDType)
      .dispatch_on_output()
      .flags(kStateful | kReadsResource | kNotDifferentiable | kKernelAllocates)
      .shape(&export_shape)
      .kernel(kKeyTypes, &export_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("InitializeTableFromTextFileV2")
      .doc(
          "Fills a HashTable once from a text file, a line per entry; column -2 is the whole line, -1 the "
          "line number. InitializeTableFromTextFileV2('vocab.txt', key_index=-2, value_index=-1)")
      .input_fixed("filename", kStringType)
      .attr("resource", AttrType::kInt)
      .attr("key_index", AttrType::kInt)
      .attr("value_index", AttrType::kInt)
      .attr("vocab_size", AttrType::kInt, int64_t{-1})
      .attr("delimiter", AttrType::kString, std::string("\t"))
      .attr("offset", AttrType::kInt, int64_t{0})
      .flags(kStateful | kWritesResource | kNotDifferentiable)
      .shape(&text_file_shape)
      .kernel(DType::kString, &text_file_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
