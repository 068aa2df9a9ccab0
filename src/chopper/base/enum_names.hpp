#pragma once
// Enums with names, declared one way: an X-macro list of (enumerator, name) from which the enum,
// its names in order and the name → value parse are all made, so a value cannot be added without
// its name (docs/architecture.md, "Declared once").
//
//   #define CHOPPER_GPU_KINDS(X) X(kKernel, "kernel") X(kMemcpy, "memcpy")
//   CHOPPER_ENUM(GpuKind, CHOPPER_GPU_KINDS)
//
// declares `enum class GpuKind : uint8_t { kKernel, kMemcpy }`, `enum_count<GpuKind>`,
// `enum_name(GpuKind)` ("?" for a value outside the list) and `parse_enum(text, GpuKind&)`.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace chopper {

template <class E>
struct EnumNames;  // specialised by CHOPPER_ENUM: `static constexpr std::array names`

template <class E>
inline constexpr size_t enum_count = EnumNames<E>::names.size();

// The value's name; "?" for a value outside the declared list.
template <class E>
constexpr std::string_view enum_name(E v) {
  const auto i = static_cast<size_t>(v);
  return i < enum_count<E> ? EnumNames<E>::names[i] : std::string_view("?");
}

// The value named `s` (an exact match); false if none.
template <class E>
constexpr bool parse_enum(std::string_view s, E& out) {
  for (size_t i = 0; i < enum_count<E>; ++i)
    if (EnumNames<E>::names[i] == s) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}

#define CHOPPER_ENUM_VALUE_(e, name) e,
#define CHOPPER_ENUM_NAME_(e, name) std::string_view(name),
#define CHOPPER_ENUM_COUNT_(e, name) +1

#define CHOPPER_ENUM(E, LIST)                                                            \
  enum class E : uint8_t { LIST(CHOPPER_ENUM_VALUE_) };                                  \
  template <>                                                                            \
  struct EnumNames<E> {                                                                  \
    static constexpr std::array<std::string_view, 0 LIST(CHOPPER_ENUM_COUNT_)> names = { \
        LIST(CHOPPER_ENUM_NAME_)};                                                       \
  };

}  // namespace chopper
