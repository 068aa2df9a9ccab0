// A table declared once (model/table_def.hpp): the schema every sink receives, the cells of each
// row and the self-description in chopper_columns come from the one declaration, so a column added
// there appears in all of them; a typed handle finds a column's place at compile time.
#include <gtest/gtest.h>

#include <string>

#include "chopper/base/members.hpp"
#include "chopper/model/table_def.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper {
namespace {

struct Sample {
  int64_t rank = -1;
  Ns busy_ns = 0, total_ns = 0;
  double power_w = 0;
  std::string name;
};

Cell busy_share(const Sample& s) {
  return s.total_ns > 0 ? Cell::of(static_cast<double>(s.busy_ns) / static_cast<double>(s.total_ns))
                        : Cell::null();
}

constexpr auto kSampleTable =
    table<Sample>("sample", "One row per sample", column<&Sample::rank>("rank", "rank", kNever),
                  column<&Sample::busy_ns>("busy_ns", "busy time", kNever),
                  column<&Sample::power_w>("power_w", "mean power", "not recorded"),
                  column<&Sample::name>("name", "what it is", kNever),
                  column<Sample>("busy_share", ColType::kReal, "busy_ns / total_ns", "total_ns = 0",
                                 &busy_share));

TEST(TableDef, SchemaComesFromTheDeclaration) {
  const TableSchema s = kSampleTable.schema();
  EXPECT_EQ(s.name, "sample");
  EXPECT_EQ(s.doc, "One row per sample");
  ASSERT_EQ(s.columns.size(), 5u);
  // Types follow from the members (int64_t, Ns → INTEGER; double → REAL; string → TEXT) or are
  // given (busy_share); units from the names' suffixes.
  EXPECT_EQ(s.columns[0].type, ColType::kInt);
  EXPECT_EQ(s.columns[1].type, ColType::kInt);
  EXPECT_EQ(s.columns[2].type, ColType::kReal);
  EXPECT_EQ(s.columns[3].type, ColType::kText);
  EXPECT_EQ(s.columns[4].type, ColType::kReal);
  EXPECT_EQ(s.columns[0].unit, "");
  EXPECT_EQ(s.columns[1].unit, "ns");
  EXPECT_EQ(s.columns[2].unit, "W");
  EXPECT_EQ(s.columns[4].unit, "fraction");
  EXPECT_EQ(s.columns[2].null_when, "not recorded");
  EXPECT_EQ(s.columns[0].null_when, "never");
  EXPECT_EQ(s.columns[4].doc, "busy_ns / total_ns");
}

TEST(TableDef, CellsFollowTheColumns) {
  Sample x{3, 250, 1000, std::nan(""), "gemm"};
  auto c = kSampleTable.cells(x);
  EXPECT_EQ(c[0].i, 3);
  EXPECT_EQ(c[1].i, 250);
  EXPECT_TRUE(c[2].is_null()) << "a NaN real is NULL";
  EXPECT_EQ(c[3].s, "gemm");
  EXPECT_DOUBLE_EQ(c[4].r, 0.25);  // 250 / 1000
  x.total_ns = 0;
  EXPECT_TRUE(kSampleTable.cells(x)[4].is_null()) << "a share of nothing is NULL";
  // Every cell fits its declared column.
  EXPECT_NO_THROW(validate_row(kSampleTable.schema(), kSampleTable.cells(x)));
}

TEST(TableDef, HandlesAreCheckedWhenCompiled) {
  constexpr ColumnHandle h = kSampleTable.handle("power_w");
  static_assert(h.index == 2 && h.type == ColType::kReal);
  static_assert(h.table == "sample");
  // A real table: the position of a column as the sinks receive it.
  constexpr ColumnHandle idle = kTemporalBreakdownTable.handle("idle_share");
  const TableSchema s = kTemporalBreakdownTable.schema();
  EXPECT_EQ(s.columns[idle.index].name, "idle_share");
}

TEST(TableDef, UnitsFromNames) {
  EXPECT_EQ(unit_of_name("dur_ns"), "ns");
  EXPECT_EQ(unit_of_name("busbw_gbs"), "GB/s");
  EXPECT_EQ(unit_of_name("sm_clock_mhz"), "MHz");
  EXPECT_EQ(unit_of_name("energy_j"), "J");
  EXPECT_EQ(unit_of_name("max_temp_c"), "°C");
  EXPECT_EQ(unit_of_name("tokens_per_s"), "1/s") << "not s: the longer suffix first";
  EXPECT_EQ(unit_of_name("max_dp_dt_w_per_s"), "W/s");
  EXPECT_EQ(unit_of_name("share_of_parent"), "fraction");
  EXPECT_EQ(unit_of_name("kernels"), "");
  EXPECT_EQ(unit_of_name("_ns"), "") << "a bare suffix is not a unit";
}

// The members of a plain struct, counted and visited without listing them (what the part codec
// encodes with).
TEST(Members, CountedAndVisitedInOrder) {
  static_assert(member_count<Sample> == 5);
  static_assert(member_count<BreakdownRow> == 12);
  Sample x{7, 1, 2, 3.5, "n"};
  std::string seen;
  for_each_member(x, [&](const auto& m) {
    using T = std::remove_cvref_t<decltype(m)>;
    if constexpr (std::is_same_v<T, std::string>)
      seen += m;
    else
      seen += std::to_string(static_cast<int64_t>(m));
    seen += ',';
  });
  EXPECT_EQ(seen, "7,1,2,3,n,");
}

}  // namespace
}  // namespace chopper
