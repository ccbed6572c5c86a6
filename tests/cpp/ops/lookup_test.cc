// The table ops (ops/lookup.cc) run through the registry: find with any key shape, insert/remove/export on
// a MutableHashTable, initialization once, text files with TensorFlow's column conventions, and the
// errors TensorFlow raises. tests/python/test_lookup.py compares the Python tf.lookup with TensorFlow.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "ember/core/lookup_table.h"
#include "ember/ops/execute.h"
#include "ember/ops/registry.h"
#include "tests/cpp/ops/grad_check.h"

namespace ember {
namespace {

TensorRef strings(const std::vector<std::string>& values, std::vector<int64_t> dims) {
  TensorRef t = TensorImpl::allocate(DType::kString, Shape(dims)).value();
  for (size_t i = 0; i < values.size(); ++i) t->mutable_data<std::string>()[i] = values[i];
  return t;
}

TensorRef strings(const std::vector<std::string>& values) {
  return strings(values, {static_cast<int64_t>(values.size())});
}

TensorRef scalar_string(const std::string& value) { return strings({value}, {}); }

TensorRef int64s(std::vector<int64_t> dims, const std::vector<double>& values) {
  return testing::make_tensor(std::move(dims), values, DType::kInt64);
}

Status run(const char* name, std::vector<TensorRef> inputs, const LookupTable& table, OutputList& outs,
           std::vector<AttrValue> more_attrs = {}) {
  const OpDef* op = OpRegistry::global().find(name);
  EXPECT_NE(op, nullptr) << name;
  std::vector<TensorImpl*> raw;
  for (TensorRef& t : inputs) raw.push_back(t.get());
  AttrList attrs;
  attrs.push_back(table.id());
  for (AttrValue& a : more_attrs) attrs.push_back(std::move(a));
  EMBER_RETURN_IF_ERROR(complete_attrs(*op, attrs));
  return execute_op(*op, {raw.data(), raw.size()}, {attrs.data(), attrs.size()}, outs);
}

std::shared_ptr<LookupTable> hash_table(bool is_mutable = false) {
  auto table = LookupTableRegistry::global().create("vocab", DType::kString, DType::kInt64, is_mutable);
  EXPECT_TRUE(table.ok());
  return std::move(table).value();
}

TEST(LookupOps, FindKeepsTheKeysShape) {
  auto table = hash_table();
  OutputList outs;
  ASSERT_TRUE(
      run("InitializeTableV2", {strings({"a", "b", "c"}), int64s({3}, {1, 2, 3})}, *table, outs).ok());
  outs.clear();
  ASSERT_TRUE(
      run("LookupTableFindV2", {strings({"a", "x", "c", "b"}, {2, 2}), int64s({}, {-1})}, *table, outs).ok());
  EXPECT_EQ(outs[0]->shape().to_string(), "[2,2]");
  const int64_t* v = outs[0]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(v, v + 4), (std::vector<int64_t>{1, -1, 3, 2}));
  outs.clear();
  ASSERT_TRUE(run("LookupTableSizeV2", {}, *table, outs).ok());
  EXPECT_EQ(outs[0]->data<int64_t>()[0], 3);
}

TEST(LookupOps, WrongKeyDtypeNamesTableAndDtypes) {
  auto table = hash_table();
  OutputList outs;
  ASSERT_TRUE(run("InitializeTableV2", {strings({"a"}), int64s({1}, {1})}, *table, outs).ok());
  Status s = run("LookupTableFindV2", {int64s({1}, {1}), int64s({}, {-1})}, *table, outs);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("'vocab' maps string -> int64, got keys of dtype int64"), std::string::npos)
      << s.message();
}

TEST(LookupOps, InitializeOnceAndDuplicateKeys) {
  auto table = hash_table();
  OutputList outs;
  Status s = run("LookupTableFindV2", {strings({"a"}), int64s({}, {-1})}, *table, outs);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << "a HashTable is not initialized yet";
  s = run("InitializeTableV2", {strings({"a", "a"}), int64s({2}, {1, 2})}, *table, outs);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("Key a has 1 and trying to add value 2"), std::string::npos) << s.message();
  ASSERT_TRUE(run("InitializeTableV2", {strings({"a", "a"}), int64s({2}, {1, 1})}, *table, outs).ok());
  EXPECT_EQ(table->size(), 1);
  EXPECT_TRUE(run("InitializeTableV2", {strings({"a"}), int64s({1}, {1})}, *table, outs).ok())
      << "initializing with the same entries again changes nothing";
  s = run("InitializeTableV2", {strings({"b"}), int64s({1}, {1})}, *table, outs);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("already initialized with different data"), std::string::npos);
  s = run("LookupTableInsertV2", {strings({"c"}), int64s({1}, {3})}, *table, outs);
  EXPECT_EQ(s.code(), Code::kUnimplemented) << "a HashTable takes no insertions";
}

TEST(LookupOps, MutableInsertRemoveExportImport) {
  auto table = hash_table(/*is_mutable=*/true);
  OutputList outs;
  ASSERT_TRUE(run("LookupTableInsertV2", {strings({"x", "y"}), int64s({2}, {1, 2})}, *table, outs).ok());
  ASSERT_TRUE(run("LookupTableInsertV2", {strings({"y"}), int64s({1}, {5})}, *table, outs).ok());
  Status s = run("LookupTableInsertV2", {strings({"x", "y"}), int64s({3}, {1, 2, 3})}, *table, outs);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  ASSERT_TRUE(run("LookupTableRemoveV2", {strings({"x", "absent"})}, *table, outs).ok());
  outs.clear();
  ASSERT_TRUE(run("LookupTableExportV2", {}, *table, outs, {DType::kString, DType::kInt64}).ok());
  ASSERT_EQ(outs[0]->num_elements(), 1);
  EXPECT_EQ(outs[0]->data<std::string>()[0], "y");
  EXPECT_EQ(outs[1]->data<int64_t>()[0], 5);
  ASSERT_TRUE(run("LookupTableImportV2", {strings({"p", "q"}), int64s({2}, {7, 8})}, *table, outs).ok());
  EXPECT_EQ(table->size(), 2) << "import replaces the contents";
}

TEST(LookupOps, TextFileColumns) {
  const std::string path = ::testing::TempDir() + "/lookup_test_vocab.txt";
  std::ofstream(path) << "emerson 10\nlake 20\npalmer 30\n";
  auto table = hash_table();
  OutputList outs;
  // key_index -2: the whole line; value_index -1: the line number plus offset.
  ASSERT_TRUE(run("InitializeTableFromTextFileV2", {scalar_string(path)}, *table, outs,
                  {int64_t{-2}, int64_t{-1}, int64_t{-1}, std::string("\t"), int64_t{5}})
                  .ok());
  outs.clear();
  ASSERT_TRUE(run("LookupTableFindV2", {strings({"lake 20", "lake"}), int64s({}, {-1})}, *table, outs).ok());
  EXPECT_EQ(outs[0]->data<int64_t>()[0], 6);
  EXPECT_EQ(outs[0]->data<int64_t>()[1], -1);

  auto columns = hash_table();
  ASSERT_TRUE(run("InitializeTableFromTextFileV2", {scalar_string(path)}, *columns, outs,
                  {int64_t{0}, int64_t{1}, int64_t{2}, std::string(" ")})
                  .ok());
  EXPECT_EQ(columns->size(), 2) << "vocab_size reads the first lines only";

  auto too_few = hash_table();
  Status s = run("InitializeTableFromTextFileV2", {scalar_string(path)}, *too_few, outs,
                 {int64_t{0}, int64_t{1}, int64_t{4}, std::string(" ")});
  EXPECT_NE(s.message().find("Invalid vocab_size"), std::string::npos) << s.message();
  s = run("InitializeTableFromTextFileV2", {scalar_string(path)}, *too_few, outs,
          {int64_t{0}, int64_t{3}, int64_t{-1}, std::string(" ")});
  EXPECT_NE(s.message().find("expected at least 4 got 2"), std::string::npos) << s.message();
  s = run("InitializeTableFromTextFileV2", {scalar_string(path)}, *too_few, outs,
          {int64_t{1}, int64_t{0}, int64_t{-1}, std::string(" ")});
  EXPECT_NE(s.message().find("Field emerson in line 0 is not a valid int64"), std::string::npos)
      << s.message();
  s = run("InitializeTableFromTextFileV2", {scalar_string(path + ".absent")}, *too_few, outs,
          {int64_t{-2}, int64_t{-1}});
  EXPECT_EQ(s.code(), Code::kNotFound);
  std::remove(path.c_str());
}

TEST(LookupOps, DeletedTableIsAnErrorNotACrash) {
  int64_t id;
  {
    auto table = hash_table();
    id = table->id();
  }
  auto found = LookupTableRegistry::global().find(id, "LookupTableFindV2");
  EXPECT_EQ(found.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(LookupTableRegistry::global().find(3, "LookupTableFindV2").status().code(), Code::kNotFound)
      << "a variable's id is never a table's (Note [Table ids])";
}

TEST(LookupOps, CreatingOpsShareTablesBySharedName) {
  auto create = [](const char* name, const std::string& shared_name, DType value_dtype) -> StatusOr<int64_t> {
    const OpDef& op = op_def(name);
    AttrList attrs{std::string(), shared_name, false, DType::kString, value_dtype};
    EMBER_RETURN_IF_ERROR(complete_attrs(op, attrs));
    OutputList outs;
    EMBER_RETURN_IF_ERROR(execute_op(op, {}, {attrs.data(), attrs.size()}, outs));
    return outs[0]->data<int64_t>()[0];
  };
  auto first = create("HashTableV2", "lookup_test_shared", DType::kInt64);
  auto again = create("HashTableV2", "lookup_test_shared", DType::kInt64);
  ASSERT_TRUE(first.ok() && again.ok()) << first.status().to_string();
  EXPECT_EQ(*first, *again);
  auto table = LookupTableRegistry::global().find(*first, "test");
  ASSERT_TRUE(table.ok()) << "the registry owns a table an op created";
  EXPECT_FALSE((*table)->is_mutable());
  auto mismatch = create("MutableHashTableV2", "lookup_test_shared", DType::kInt64);
  EXPECT_EQ(mismatch.status().code(), Code::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("MutableHashTableV2: shared_name 'lookup_test_shared' names a "
                                             "HashTable of string -> int64"),
            std::string::npos)
      << mismatch.status().message();
  auto unnamed_a = create("MutableHashTableV2", "", DType::kFloat32);
  auto unnamed_b = create("MutableHashTableV2", "", DType::kFloat32);
  ASSERT_TRUE(unnamed_a.ok() && unnamed_b.ok());
  EXPECT_NE(*unnamed_a, *unnamed_b) << "no shared name: a table of its own";
  EXPECT_TRUE(LookupTableRegistry::global().find(*unnamed_a, "test").value()->is_mutable());
}

}  // namespace
}  // namespace ember
