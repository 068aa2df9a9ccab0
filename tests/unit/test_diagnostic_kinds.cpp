// The per-file diagnostic kinds are declared once (CHOPPER_FILE_DIAGNOSTICS in
// base/diagnostics.hpp), and docs/formats.md's table of them is that list: every kind with its
// severity and meaning, and no other.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "chopper/base/diagnostics.hpp"

namespace chopper {
namespace {

constexpr std::string_view kBegin = "<!-- file-diagnostics: begin";
constexpr std::string_view kEnd = "<!-- file-diagnostics: end -->";

// The table as the list gives it.
std::vector<std::string> expected_rows() {
  std::vector<std::string> rows = {"| kind | severity | meaning |", "|---|---|---|"};
  for (FileDiag k : all_file_diags())
    rows.push_back("| `" + std::string(file_diag_name(k)) + "` | " +
                   std::string(severity_name(file_diag_severity(k))) + " | " +
                   std::string(file_diag_doc(k)) + " |");
  return rows;
}

// The table's lines in docs/formats.md, between the markers.
std::vector<std::string> doc_rows(bool& found) {
  std::ifstream in(std::string(CHOPPER_TEST_DATA) + "/../../docs/formats.md");
  std::vector<std::string> rows;
  bool inside = false;
  found = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kBegin, 0) == 0) {
      inside = found = true;
    } else if (line == kEnd) {
      inside = false;
    } else if (inside && !line.empty()) {
      rows.push_back(line);
    }
  }
  return rows;
}

std::string kind_of_row(const std::string& row) {
  const size_t a = row.find('`'), b = row.find('`', a + 1);
  return a == std::string::npos || b == std::string::npos ? "" : row.substr(a + 1, b - a - 1);
}

TEST(FileDiagnostics, DocsTableIsTheList) {
  bool found = false;
  const std::vector<std::string> doc = doc_rows(found);
  ASSERT_TRUE(found) << "docs/formats.md has no table between '" << kBegin << "' and '" << kEnd
                     << "'";
  const std::vector<std::string> want = expected_rows();
  std::string table;
  for (const std::string& r : want) table += r + "\n";
  // Each kind's row (kind, severity, meaning) is in the doc, and the doc lists no other kind.
  const std::set<std::string> doc_set(doc.begin(), doc.end());
  std::set<std::string> kinds;
  for (FileDiag k : all_file_diags()) kinds.insert(std::string(file_diag_name(k)));
  for (const std::string& r : want)
    EXPECT_TRUE(doc_set.count(r)) << "docs/formats.md lacks the row\n"
                                  << r << "\nthe table from the list:\n"
                                  << table;
  for (const std::string& r : doc) {
    if (r == want[0] || r == want[1]) continue;
    EXPECT_TRUE(kinds.count(kind_of_row(r)))
        << "docs/formats.md lists a kind that is not in CHOPPER_FILE_DIAGNOSTICS: " << r;
  }
  EXPECT_EQ(doc, want) << "the table from the list:\n" << table;
}

TEST(FileDiagnostics, NamesAreUniqueAndParse) {
  std::set<std::string_view> names;
  for (FileDiag k : all_file_diags()) {
    EXPECT_TRUE(names.insert(file_diag_name(k)).second) << file_diag_name(k);
    FileDiag back{};
    ASSERT_TRUE(parse_file_diag(file_diag_name(k), back));
    EXPECT_EQ(back, k);
    EXPECT_FALSE(file_diag_doc(k).empty()) << file_diag_name(k);
  }
  FileDiag x{};
  EXPECT_FALSE(parse_file_diag("missing_tss", x));
  // A literal is looked up when compiled: the same kind as its enumerator.
  static_assert(DiagKind("missing_name").kind() == FileDiag::kMissingName);
  static_assert(DiagKind(FileDiag::kUnusedField).name() == "unused_field");
  // missing_name: counted as a warning, documented like every other kind.
  EXPECT_EQ(file_diag_severity(FileDiag::kMissingName), Severity::kWarning);
  EXPECT_EQ(file_diag_severity(FileDiag::kUnusedField), Severity::kInfo);
}

TEST(FileDiagnostics, KernelTraceKindsArePrefixed) {
  // A counter table holds its kernel trace's kinds under kernel_trace_<kind>.
  Diagnostics d;
  d.add_prefixed("kernel_trace_", "bad_timestamp", "kt.csv: line 3");
  d.add_count_prefixed("kernel_trace_", FileDiag::kBadTimestamp, 2);
  d.add("bad_timestamp", std::string("line 4"));
  EXPECT_EQ(d.count("kernel_trace_bad_timestamp"), 3u);
  EXPECT_EQ(d.count("bad_timestamp"), 1u);
  ASSERT_EQ(d.entries().size(), 2u);
  EXPECT_EQ(d.entries()[0].examples, std::vector<std::string>{"kt.csv: line 3"});
}

}  // namespace
}  // namespace chopper
