#pragma once
// The members of a plain struct (an aggregate without base classes), in declaration order,
// without listing them: for_each_member(x, f) calls f on each member of x. What the part codec
// (pipeline/part_codec.cpp) encodes and decodes with, so a member added to a partial's row struct
// travels between processes with no further edit, and what its test compares field by field.
//
// How: the number of members is the largest N for which `T{a1, ..., aN}` compiles with arguments
// convertible to anything; a structured binding of that many names then gives the members.
// Limits: up to 32 members, no base classes, no C arrays or references as members.
#include <cstddef>
#include <type_traits>
#include <utility>

namespace chopper {
namespace members_detail {

struct Any {
  template <class T>
  operator T() const;  // declared only: used in unevaluated contexts
};

template <class T, size_t... I>
constexpr bool brace_constructible(std::index_sequence<I...>) {
  return requires {
    T{(static_cast<void>(I), Any{})...};
  };
}

template <class T, size_t N = 32>
constexpr size_t count() {
  if constexpr (N == 0)
    return 0;
  else if constexpr (brace_constructible<T>(std::make_index_sequence<N>{}))
    return N;
  else
    return count<T, N - 1>();
}

template <class F, class... M>
constexpr void apply(F& f, M&... m) {
  (f(m), ...);
}

}  // namespace members_detail

// The number of members of T (an aggregate, at most 32 members).
template <class T>
inline constexpr size_t member_count = members_detail::count<std::remove_cvref_t<T>>();

// f(member) for each member of x, in declaration order; x may be const or not.
template <class T, class F>
constexpr void for_each_member(T&& x, F&& f) {
  using U = std::remove_cvref_t<T>;
  static_assert(std::is_aggregate_v<U>, "for_each_member: not an aggregate");
  constexpr size_t n = member_count<U>;
  static_assert(n > 0 && n <= 32, "for_each_member: 1 to 32 members");
  // clang-format off
#define CHOPPER_M(k, ...)             \
  if constexpr (n == k) {             \
    auto& [__VA_ARGS__] = x;          \
    members_detail::apply(f, __VA_ARGS__); \
  }
  CHOPPER_M(1, m1)
  CHOPPER_M(2, m1, m2)
  CHOPPER_M(3, m1, m2, m3)
  CHOPPER_M(4, m1, m2, m3, m4)
  CHOPPER_M(5, m1, m2, m3, m4, m5)
  CHOPPER_M(6, m1, m2, m3, m4, m5, m6)
  CHOPPER_M(7, m1, m2, m3, m4, m5, m6, m7)
  CHOPPER_M(8, m1, m2, m3, m4, m5, m6, m7, m8)
  CHOPPER_M(9, m1, m2, m3, m4, m5, m6, m7, m8, m9)
  CHOPPER_M(10, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10)
  CHOPPER_M(11, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11)
  CHOPPER_M(12, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12)
  CHOPPER_M(13, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13)
  CHOPPER_M(14, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14)
  CHOPPER_M(15, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15)
  CHOPPER_M(16, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16)
  CHOPPER_M(17, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17)
  CHOPPER_M(18, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18)
  CHOPPER_M(19, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18,
            m19)
  CHOPPER_M(20, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18,
            m19, m20)
  CHOPPER_M(21, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18,
            m19, m20, m21)
  CHOPPER_M(22, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18,
            m19, m20, m21, m22)
  CHOPPER_M(23, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18,
            m19, m20, m21, m22, m23)
  CHOPPER_M(24, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18,
            m19, m20, m21, m22, m23, m24)
  CHOPPER_M(25, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20, m21, m22, m23, m24, m25)
  CHOPPER_M(26, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20, m21, m22, m23, m24, m25, m26)
  CHOPPER_M(27, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20, m21, m22, m23, m24, m25, m26, m27)
  CHOPPER_M(28, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20, m21, m22, m23, m24, m25, m26, m27, m28)
  CHOPPER_M(29, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20, m21, m22, m23, m24, m25, m26, m27, m28, m29)
  CHOPPER_M(30, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20, m21, m22, m23, m24, m25, m26, m27, m28, m29, m30)
  CHOPPER_M(31, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20, m21, m22, m23, m24, m25, m26, m27, m28, m29, m30, m31)
  CHOPPER_M(32, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20, m21, m22, m23, m24, m25, m26, m27, m28, m29, m30, m31, m32)
#undef CHOPPER_M
  // clang-format on
}

}  // namespace chopper
