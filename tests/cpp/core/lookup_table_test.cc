// LookupTable and its registry (core/lookup_table.h) on their own: the dtypes a table holds, values kept
// exactly through a round trip, and ids apart from variables'. The ops over them:
// tests/cpp/ops/lookup_test.cc.
#include "ember/core/lookup_table.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

TEST(LookupTable, RefusesDtypesItCannotHold) {
  auto bad_key = LookupTableRegistry::global().create("t", DType::kFloat32, DType::kInt64, false);
  EXPECT_EQ(bad_key.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad_key.status().message().find("keys must be string, int32 or int64, got float32"),
            std::string::npos);
  auto bad_value = LookupTableRegistry::global().create("t", DType::kString, DType::kComplex64, false);
  EXPECT_EQ(bad_value.status().code(), Code::kInvalidArgument);
}

TEST(LookupTable, ExportImportKeepsEveryValueDtype) {
  for (DType value_dtype : {DType::kInt32, DType::kInt64, DType::kFloat32, DType::kFloat64, DType::kBool}) {
    auto table = LookupTableRegistry::global().create("t", DType::kInt64, value_dtype, true).value();
    TensorRef keys = TensorImpl::allocate(DType::kInt64, Shape({2})).value();
    TensorRef values = TensorImpl::allocate(value_dtype, Shape({2})).value();
    for (int64_t i = 0; i < 2; ++i) {
      LookupTable::set_scalar(*keys, i, LookupTable::Scalar(int64_t{7} + i));
      LookupTable::set_scalar(
          *values, i,
          is_floating(value_dtype) ? LookupTable::Scalar(0.25 + i) : LookupTable::Scalar(int64_t{i}));
    }
    ASSERT_TRUE(table->import_entries("LookupTableImportV2", *keys, *values).ok());
    auto exported = table->export_entries().value();
    ASSERT_EQ(exported.first->num_elements(), 2);
    for (int64_t i = 0; i < 2; ++i) {
      const int64_t key = std::get<int64_t>(LookupTable::scalar_at(*exported.first, i));
      EXPECT_EQ(LookupTable::scalar_at(*exported.second, i), LookupTable::scalar_at(*values, key - 7))
          << dtype_name(value_dtype);
    }
  }
}

TEST(LookupTable, IdsAreApartFromVariables) {
  auto table = LookupTableRegistry::global().create("t", DType::kString, DType::kInt64, false).value();
  EXPECT_GE(table->id(), kFirstTableId);
  EXPECT_EQ(LookupTableRegistry::global().find(table->id(), "LookupTableSizeV2").value(), table);
}

}  // namespace
}  // namespace ember
