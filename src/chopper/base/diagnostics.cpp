#include "chopper/base/diagnostics.hpp"

#include "chopper/base/utf8.hpp"

namespace chopper {

namespace {
struct RunDiagInfo {
  RunDiag kind;
  std::string_view name;
  Severity severity;
  std::string_view doc;
};
constexpr RunDiagInfo kRunDiags[] = {
#define CHOPPER_X(e, name, sev, doc) {RunDiag::e, name, Severity::sev, doc},
    CHOPPER_RUN_DIAGNOSTICS(CHOPPER_X)
#undef CHOPPER_X
};
constexpr RunDiag kAllRunDiags[] = {
#define CHOPPER_X(e, name, sev, doc) RunDiag::e,
    CHOPPER_RUN_DIAGNOSTICS(CHOPPER_X)
#undef CHOPPER_X
};
}  // namespace

std::string_view run_diag_name(RunDiag k) {
  return kRunDiags[static_cast<size_t>(k)].name;
}
Severity run_diag_severity(RunDiag k) {
  return kRunDiags[static_cast<size_t>(k)].severity;
}
std::string_view run_diag_doc(RunDiag k) {
  return kRunDiags[static_cast<size_t>(k)].doc;
}
bool parse_run_diag(std::string_view name, RunDiag& k) {
  for (const RunDiagInfo& d : kRunDiags)
    if (d.name == name) {
      k = d.kind;
      return true;
    }
  return false;
}
std::span<const RunDiag> all_run_diags() {
  return kAllRunDiags;
}

namespace {
struct FileDiagInfo {
  FileDiag kind;
  Severity severity;
  std::string_view doc;
};
constexpr FileDiagInfo kFileDiags[] = {
#define CHOPPER_X(e, name, sev, doc) {FileDiag::e, Severity::sev, doc},
    CHOPPER_FILE_DIAGNOSTICS(CHOPPER_X)
#undef CHOPPER_X
};
constexpr FileDiag kAllFileDiags[] = {
#define CHOPPER_X(e, name, sev, doc) FileDiag::e,
    CHOPPER_FILE_DIAGNOSTICS(CHOPPER_X)
#undef CHOPPER_X
};
}  // namespace

Severity file_diag_severity(FileDiag k) {
  return kFileDiags[static_cast<size_t>(k)].severity;
}
std::string_view file_diag_doc(FileDiag k) {
  return kFileDiags[static_cast<size_t>(k)].doc;
}
bool parse_file_diag(std::string_view name, FileDiag& k) {
  for (FileDiag d : kAllFileDiags)
    if (file_diag_name(d) == name) {
      k = d;
      return true;
    }
  return false;
}
std::span<const FileDiag> all_file_diags() {
  return kAllFileDiags;
}

Diagnostics::Entry& Diagnostics::entry(std::string_view kind) {
  auto it = index_.find(std::string(kind));
  if (it != index_.end()) return entries_[it->second];
  index_.emplace(std::string(kind), entries_.size());
  entries_.push_back(Entry{std::string(kind), 0, {}});
  return entries_.back();
}

void Diagnostics::keep_example(Entry& e, std::string example) {
  repair_utf8(example);
  e.examples.push_back(std::move(example));
}

void Diagnostics::add_count_named(std::string_view kind, uint64_t n) {
  if (n == 0) return;
  entry(kind).count += n;
}

void Diagnostics::add_prefixed(std::string_view prefix, DiagKind kind, std::string example) {
  add_named(std::string(prefix) + std::string(kind.name()), [&] { return std::move(example); });
}

void Diagnostics::add_count_prefixed(std::string_view prefix, DiagKind kind, uint64_t n) {
  add_count_named(std::string(prefix) + std::string(kind.name()), n);
}

void Diagnostics::merge(const Diagnostics& other) {
  for (const Entry& o : other.entries_) {
    Entry& e = entry(o.kind);
    e.count += o.count;
    for (const auto& ex : o.examples) {
      if (e.examples.size() >= kMaxExamples) break;
      e.examples.push_back(ex);
    }
  }
}

uint64_t Diagnostics::count(std::string_view kind) const {
  auto it = index_.find(std::string(kind));
  return it == index_.end() ? 0 : entries_[it->second].count;
}

uint64_t Diagnostics::total() const {
  uint64_t t = 0;
  for (const auto& e : entries_) t += e.count;
  return t;
}

}  // namespace chopper
