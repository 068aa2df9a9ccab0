// The part codec (pipeline/part_codec.hpp) gives back every member of a RankPart. The row structs
// it writes member by member (pipeline/part_values.hpp) are filled and compared generically, so
// a member added to one of them is filled with a value of its own and must come back, with no
// edit here; the parts the codec writes by hand (RankPart's top level, RankSlot, RankActivity,
// the names in order) are set and compared one by one, and their member counts checked, so a
// member added to one of them fails here until the codec and this test carry it. Values are
// compared member by member (comparing re-encoded bytes would pass a member the encoder and the
// decoder both miss), each leaf distinct from every other and from its default, so a member
// decoded into its neighbour is seen too.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "chopper/base/bytes.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/members.hpp"
#include "chopper/pipeline/part_codec.hpp"
#include "chopper/pipeline/part_values.hpp"

namespace chopper {
namespace {

using part_values::is_map;
using part_values::is_pair;
using part_values::is_vector;

template <class T>
struct is_array : std::false_type {};
template <class T, size_t N>
struct is_array<std::array<T, N>> : std::true_type {};

// The members the codec writes by hand: a member added to one of these must be added to the codec
// (enc_part/dec_part, enc_activity/dec_activity) and to full_part() and expect_hand_written().
// RankPart::kept is not encoded: ranks are kept in memory only by a run of one process.
static_assert(member_count<RankPart> == 16);
static_assert(member_count<RankSlot> == 8);
static_assert(member_count<RankActivity> == 10);

// The struct's name, as the compiler spells it (for the messages).
template <class T>
std::string type_name() {
  std::string s = typeid(T).name();
  // Itanium ABI: "N7chopper12BreakdownRowE" or "7chopper..." -> the last identifier.
  std::string last;
  for (size_t i = 0; i < s.size();) {
    if (s[i] < '0' || s[i] > '9') {
      ++i;
      continue;
    }
    size_t n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
      n = n * 10 + static_cast<size_t>(s[i++] - '0');
    last = s.substr(i, n);
    i += n;
  }
  return last.empty() ? s : last;
}

// ---- A value in every member

// Fills a value, member by member, with values distinct from each other and from the member's
// default: integers, enums and reals from a counter, bools flipped, text numbered, two elements in
// each vector and map. Views (label text) are interned in `names` first, as the analysis's are.
struct Filler {
  StringTable* names = nullptr;
  int64_t next = 0;

  template <class T>
  void fill(T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      v = !v;
    } else if constexpr (std::is_enum_v<T>) {
      using U = std::underlying_type_t<T>;
      const T d = v;
      do v = static_cast<T>(static_cast<U>(1 + ++next % 100));
      while (v == d);
    } else if constexpr (std::is_integral_v<T>) {
      const T d = v;
      do v = static_cast<T>(sizeof(T) < 2 ? 1 + ++next % 100 : ++next);
      while (v == d);
    } else if constexpr (std::is_floating_point_v<T>) {
      const T d = v;
      do v = static_cast<T>(static_cast<double>(++next) + 0.5);
      while (v == d);
    } else if constexpr (std::is_same_v<T, std::string>) {
      v = "text " + std::to_string(++next);
    } else if constexpr (std::is_same_v<T, std::string_view>) {
      if (names == nullptr) throw Error("fill: a view outside an analysis");
      v = names->str(names->intern("label " + std::to_string(++next)));
    } else if constexpr (is_vector<T>::value) {
      v.resize(2);
      for (auto& x : v) fill(x);
    } else if constexpr (is_map<T>::value) {
      for (int k = 0; k < 2; ++k) {
        std::pair<typename T::key_type, typename T::mapped_type> kv;
        fill(kv);
        v.emplace(std::move(kv));
      }
    } else if constexpr (is_pair<T>::value) {
      fill(v.first);
      fill(v.second);
    } else if constexpr (is_array<T>::value) {
      for (auto& x : v) fill(x);
    } else {
      for_each_member(v, [this](auto& m) { fill(m); });
    }
  }
};

// ---- Member by member

// Walks two values of the same type in step and names each leaf (number, enum, text) where
// `report(a, b)` holds: "BreakdownRow member 4 at analysis.breakdown[1]". Members are numbered
// from 0 in declaration order; `where` is the path of vector/map elements through the walk.
class Walk {
 public:
  explicit Walk(bool report_equal) : report_equal_(report_equal) {}
  std::vector<std::string> found;

  template <class T>
  void values(const T& a, const T& b, const std::string& where) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string> ||
                  std::is_same_v<T, std::string_view>) {
      if ((a == b) == report_equal_) found.push_back(where + ": " + show(a) + " / " + show(b));
    } else if constexpr (is_vector<T>::value || is_array<T>::value) {
      if (report_equal_) {  // every element of `a` against a default element
        if (a.empty()) found.push_back(where + ": empty");
        for (size_t i = 0; i < a.size(); ++i)
          values(a[i], typename T::value_type{}, where + "[" + std::to_string(i) + "]");
      } else if (a.size() != b.size()) {
        found.push_back(where + ": size " + std::to_string(a.size()) + " / " +
                        std::to_string(b.size()));
      } else {
        for (size_t i = 0; i < a.size(); ++i)
          values(a[i], b[i], where + "[" + std::to_string(i) + "]");
      }
    } else if constexpr (is_map<T>::value) {
      std::vector<std::pair<typename T::key_type, typename T::mapped_type>> va(a.begin(), a.end()),
          vb(b.begin(), b.end());
      values(va, vb, where);
    } else if constexpr (is_pair<T>::value) {
      values(a.first, b.first, where + ".first");
      values(a.second, b.second, where + ".second");
    } else {
      size_t i = 0;
      for_each_member(a, [&](const auto& ma) {
        size_t j = 0;
        for_each_member(b, [&](const auto& mb) {
          if constexpr (std::is_same_v<decltype(ma), decltype(mb)>)
            if (i == j)
              values(ma, mb, where + " (" + type_name<T>() + " member " + std::to_string(i) + ")");
          ++j;
        });
        ++i;
      });
    }
  }

 private:
  bool report_equal_;

  template <class T>
  static std::string show(const T& v) {
    if constexpr (std::is_enum_v<T>)
      return std::to_string(static_cast<int64_t>(v));
    else if constexpr (std::is_arithmetic_v<T>)
      return std::to_string(v);
    else
      return "\"" + std::string(v) + "\"";
  }
};

// The leaves where a and b differ.
template <class T>
std::vector<std::string> differences(const T& a, const T& b, const std::string& where) {
  Walk w(false);
  w.values(a, b, where);
  return w.found;
}

// The leaves of a filled value still at their default (or empty containers).
template <class T>
std::vector<std::string> defaults_left(const T& a, const std::string& where) {
  Walk w(true);
  w.values(a, T{}, where);
  return w.found;
}

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += "\n  " + x;
  return s;
}

// ---- The analysis: its carried members generically, the spooled ones left empty

// The names of partials run on other threads: not carried (their texts are in `names`).
template <class T>
inline constexpr bool kNames = std::is_same_v<T, std::unique_ptr<StringTable>> ||
                               std::is_same_v<T, std::vector<std::unique_ptr<StringTable>>>;

template <class T>
inline constexpr bool kSpooled =
    std::is_same_v<T, std::vector<IdleRow>> || std::is_same_v<T, std::vector<LaunchRow>> ||
    std::is_same_v<T, std::vector<QueueRow>> || std::is_same_v<T, std::vector<KernelHw>> ||
    std::is_same_v<T, std::vector<HwLevelRow>>;

// Every member of the analysis but its names (the table the views intern into) and the spooled
// rows, which the codec refuses (SpooledRowsAreRefused).
void fill_analysis(RankAnalysis& a, Filler& f) {
  f.names = a.names.get();
  for_each_member(a, [&f](auto& m) {
    using M = std::remove_cvref_t<decltype(m)>;
    if constexpr (!kNames<M> && !kSpooled<M>) f.fill(m);
  });
  f.names = nullptr;
}

// The carried members of the analysis, a's and b's in step: all but its names (compared on their
// own) and the spooled rows (never carried: empty).
template <class F>
void each_analysis_member(const RankAnalysis& a, const RankAnalysis& b, F each) {
  size_t i = 0;
  for_each_member(a, [&](const auto& ma) {
    size_t j = 0;
    for_each_member(b, [&](const auto& mb) {
      using M = std::remove_cvref_t<decltype(ma)>;
      if constexpr (std::is_same_v<decltype(ma), decltype(mb)> && !kNames<M> && !kSpooled<M>)
        if (i == j) each(ma, mb, "analysis (RankAnalysis member " + std::to_string(i) + ")");
      ++j;
    });
    ++i;
  });
}

// ---- The part: hand-written parts one by one, row structs generically

RankPart full_part() {
  RankPart p;
  p.file = 7;
  p.not_trace = "JSON but not a trace";
  p.counter_pass = true;
  p.slot.file = "/runs/a/rank3.json";
  p.slot.rank = 3;
  p.slot.ok = true;
  p.slot.error = "rank3.json: byte 12: cut short";
  p.slot.missing = true;
  p.slot.first_ns = 11;
  p.slot.last_ns = 99;
  p.slot.trace.file = "/runs/a/rank3.json.gz";
  p.slot.trace.meta.rank = 4;
  p.slot.trace.meta.world_size = 8;
  p.slot.trace.meta.backend = "nccl";
  p.slot.trace.meta.rank_source = "distributedInfo";
  p.needs_rank = true;

  RankActivity& v = p.activity;
  v.ok = true;
  v.rank = 5;
  v.device = 2;
  v.devices = 4;
  v.busy = BusyTime({1, 10}, {5, 20});
  v.compute = BusyTime({2}, {4});
  v.other = BusyTime({12}, {13});
  v.pids = {100, 200};
  v.gpu_first_ns = 21;
  v.gpu_last_ns = 22;

  p.analysed = true;
  p.process = 2;
  p.spool = 3;

  Filler f;
  f.next = 1000;  // above the hand-set values
  fill_analysis(p.analysis, f);
  f.fill(p.gpu_rows);
  f.fill(p.coverage);
  f.fill(p.diagnostics);
  f.fill(p.joins);
  f.fill(p.chunks);
  return p;
}

#define CHOPPER_EQ(field) EXPECT_EQ(a.field, b.field) << #field

void expect_busy(const BusyTime& a, const BusyTime& b, const std::string& what) {
  EXPECT_EQ(a.starts(), b.starts()) << what;
  EXPECT_EQ(a.ends(), b.ends()) << what;
}

// What the codec writes by hand, one by one.
void expect_hand_written(const RankPart& a, const RankPart& b) {
  CHOPPER_EQ(file);
  CHOPPER_EQ(not_trace);
  CHOPPER_EQ(counter_pass);
  // The slot is carried as its shell (slot_shell): everything but the trace's events.
  CHOPPER_EQ(slot.file);
  CHOPPER_EQ(slot.rank);
  CHOPPER_EQ(slot.ok);
  CHOPPER_EQ(slot.error);
  CHOPPER_EQ(slot.missing);
  CHOPPER_EQ(slot.first_ns);
  CHOPPER_EQ(slot.last_ns);
  CHOPPER_EQ(slot.trace.file);
  CHOPPER_EQ(slot.trace.meta.rank);
  CHOPPER_EQ(slot.trace.meta.world_size);
  CHOPPER_EQ(slot.trace.meta.backend);
  CHOPPER_EQ(slot.trace.meta.rank_source);
  CHOPPER_EQ(needs_rank);
  CHOPPER_EQ(activity.ok);
  CHOPPER_EQ(activity.rank);
  CHOPPER_EQ(activity.device);
  CHOPPER_EQ(activity.devices);
  expect_busy(a.activity.busy, b.activity.busy, "activity.busy");
  expect_busy(a.activity.compute, b.activity.compute, "activity.compute");
  expect_busy(a.activity.other, b.activity.other, "activity.other");
  CHOPPER_EQ(activity.pids);
  CHOPPER_EQ(activity.gpu_first_ns);
  CHOPPER_EQ(activity.gpu_last_ns);
  CHOPPER_EQ(analysed);
  CHOPPER_EQ(process);
  CHOPPER_EQ(spool);
  // The names, in order: the decoded views are ids into them.
  ASSERT_EQ(a.analysis.names->size(), b.analysis.names->size());
  for (StrId i = 0; i < a.analysis.names->size(); ++i)
    EXPECT_EQ(a.analysis.names->str(i), b.analysis.names->str(i)) << "name " << i;
}

#undef CHOPPER_EQ

// Every difference between a part and its decoded copy: the row structs, member by member.
std::vector<std::string> row_differences(const RankPart& a, const RankPart& b) {
  std::vector<std::string> out;
  auto add = [&out](const std::vector<std::string>& d) {
    out.insert(out.end(), d.begin(), d.end());
  };
  each_analysis_member(a.analysis, b.analysis,
                       [&](const auto& x, const auto& y, const std::string& where) {
                         add(differences(x, y, where));
                       });
  add(differences(a.gpu_rows, b.gpu_rows, "gpu_rows"));
  add(differences(a.coverage, b.coverage, "coverage"));
  add(differences(a.diagnostics, b.diagnostics, "diagnostics"));
  add(differences(a.joins, b.joins, "joins"));
  add(differences(a.chunks, b.chunks, "chunks"));
  return out;
}

TEST(PartCodec, FilledPartHasNoDefaultLeft) {
  // The test's own premise: every leaf of every row struct holds a value other than its default
  // (a member left at its default would round-trip even if the codec dropped it).
  const RankPart p = full_part();
  std::vector<std::string> left;
  each_analysis_member(p.analysis, p.analysis,
                       [&](const auto& x, const auto&, const std::string& where) {
                         const std::vector<std::string> d = defaults_left(x, where);
                         left.insert(left.end(), d.begin(), d.end());
                       });
  for (const auto& d :
       {defaults_left(p.gpu_rows, "gpu_rows"), defaults_left(p.coverage, "coverage"),
        defaults_left(p.diagnostics, "diagnostics"), defaults_left(p.joins, "joins"),
        defaults_left(p.chunks, "chunks")})
    left.insert(left.end(), d.begin(), d.end());
  EXPECT_TRUE(left.empty()) << "left at the default:" << lines(left);
  // 2 breakdown rows, 2 ops, 2 units ...: the filler's two elements per vector.
  EXPECT_EQ(p.analysis.breakdown.size(), 2u);
  EXPECT_EQ(p.analysis.units.size(), 2u);
}

TEST(PartCodec, EveryMemberRoundTrips) {
  std::vector<RankPart> parts;
  parts.push_back(full_part());
  parts.push_back(RankPart{});  // and a part left at its defaults
  const std::vector<RankPart> back = decode_parts(encode_parts(parts));
  ASSERT_EQ(back.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    SCOPED_TRACE(k == 0 ? "full part" : "default part");
    expect_hand_written(parts[k], back[k]);
    const std::vector<std::string> d = row_differences(parts[k], back[k]);
    EXPECT_TRUE(d.empty()) << "decoded differently:" << lines(d);
    // Spooled, never carried (part_codec.hpp): empty.
    const RankAnalysis& b = back[k].analysis;
    EXPECT_TRUE(b.idle.empty() && b.launch.empty() && b.queues.empty() && b.kernel_hw.empty() &&
                b.hw_levels.empty());
  }
  // The decoded views view the decoded part's own names.
  ASSERT_FALSE(back[0].analysis.ops.empty());
  EXPECT_EQ(back[0].analysis.ops[0].key.operation, parts[0].analysis.ops[0].key.operation);
  EXPECT_NE(back[0].analysis.ops[0].key.operation.data(),
            parts[0].analysis.ops[0].key.operation.data());
  EXPECT_EQ(back[0].analysis.names->find(back[0].analysis.ops[0].key.operation),
            parts[0].analysis.names->find(parts[0].analysis.ops[0].key.operation));
}

TEST(PartCodec, ComparisonNamesTheMemberThatDiffers) {
  // The generic comparison sees a single changed member and names its struct and index:
  // BreakdownRow's members are rank, iteration, start_ns, total_ns, compute_ns (index 4), ...
  RankPart a = full_part();
  RankPart b = full_part();
  b.analysis.breakdown[1].compute_ns += 1;
  const std::vector<std::string> d = row_differences(a, b);
  ASSERT_EQ(d.size(), 1u) << lines(d);
  EXPECT_NE(d[0].find("[1] (BreakdownRow member 4)"), std::string::npos) << d[0];
  // A view that differs, two levels down (OpInstance member 1 is its LabelKey, whose member 3 is
  // the operation).
  b = full_part();
  b.analysis.ops[0].key.operation = b.analysis.names->str(b.analysis.names->intern("other"));
  const std::vector<std::string> e = row_differences(a, b);
  ASSERT_EQ(e.size(), 1u) << lines(e);
  EXPECT_NE(e[0].find("(OpInstance member 1) (LabelKey member 3)"), std::string::npos) << e[0];
}

// ---- A member added to a row struct is carried

// A row struct as it is, and the same with members added (a vector of pairs, a nested label key):
// the generic codec carries the new members with no edit.
struct RowBefore {
  int64_t rank = -1;
  std::string name;
  double share = 0;
};
struct RowAfter {
  int64_t rank = -1;
  std::string name;
  double share = 0;
  std::vector<std::pair<std::string, int64_t>> added;
  LabelKey key;
};

template <class T>
std::string encoded(const T& v, const StringTable* names) {
  ByteWriter w;
  part_values::Enc{w, names}.value(v);
  return w.take();
}

TEST(PartCodec, AddedMemberIsCarried) {
  StringTable names;
  Filler f{&names};
  RowAfter after;
  f.fill(after);
  ASSERT_TRUE(defaults_left(after, "after").empty()) << lines(defaults_left(after, "after"));
  const std::string bytes = encoded(after, &names);

  StringTable decoded_names;
  for (StrId i = 1; i < names.size(); ++i) decoded_names.intern(names.str(i));
  ByteReader r(bytes);
  RowAfter back;
  part_values::Dec{r, &decoded_names}.value(back);
  EXPECT_TRUE(r.done());
  const std::vector<std::string> d = differences(after, back, "after");
  EXPECT_TRUE(d.empty()) << lines(d);
  EXPECT_EQ(back.added.size(), 2u);
  EXPECT_EQ(back.key.operation, after.key.operation);

  // The added members are in the bytes: the same first three members written as RowBefore give a
  // strict prefix, the rest is `added` (8-byte size, 2 × (string, int64)) and `key`.
  const RowBefore before{after.rank, after.name, after.share};
  const std::string prefix = encoded(before, &names);
  ASSERT_LT(prefix.size(), bytes.size());
  EXPECT_EQ(bytes.substr(0, prefix.size()), prefix);
  // Read as RowBefore, the bytes of RowAfter are not all read.
  ByteReader r2(bytes);
  RowBefore short_read;
  part_values::Dec{r2, &decoded_names}.value(short_read);
  EXPECT_FALSE(r2.done());
  EXPECT_EQ(short_read.name, after.name);
}

TEST(PartCodec, ViewOutsideItsNamesIsRefused) {
  // A label text not interned in the analysis's names cannot be written as an id.
  StringTable names;
  LabelKey k;
  k.operation = "not interned";
  EXPECT_THROW(encoded(k, &names), Error);
  EXPECT_THROW(encoded(k, nullptr), Error);
}

TEST(PartCodec, SpooledRowsAreRefused) {
  // The rows a stage spools are not carried: a part still holding one is an error, not a loss.
  const std::vector<std::function<void(RankAnalysis&)>> spooled = {
      [](RankAnalysis& a) { a.idle.push_back(IdleRow{}); },
      [](RankAnalysis& a) { a.launch.push_back(LaunchRow{}); },
      [](RankAnalysis& a) { a.queues.push_back(QueueRow{}); },
      [](RankAnalysis& a) { a.kernel_hw.push_back(KernelHw{}); },
      [](RankAnalysis& a) { a.hw_levels.push_back(HwLevelRow{}); },
  };
  for (size_t k = 0; k < spooled.size(); ++k) {
    std::vector<RankPart> parts;
    parts.push_back(full_part());
    EXPECT_NO_THROW(encode_parts(parts));
    spooled[k](parts[0].analysis);
    EXPECT_THROW(encode_parts(parts), Error) << "spooled member " << k;
  }
}

}  // namespace
}  // namespace chopper
