#pragma once
// The values of a partial as bytes, member by member (base/members.hpp): what the part codec
// (pipeline/part_codec.cpp) writes every row struct of a RankPart with, so a member added to a
// row struct is carried between processes with no edit of the codec. Integers, enums and reals
// as their bytes; std::string with its length; std::string_view is label text, written as the id
// of the text in the analysis's names (and read back as a view of the decoding analysis's names);
// vectors and maps with their size; pairs and plain structs member by member.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "chopper/base/bytes.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/intern.hpp"
#include "chopper/base/members.hpp"

namespace chopper::part_values {

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};

// Writes any value of a partial. Views (std::string_view) are label text: written as the id of
// the text in `names` (an error without names, or for a text not in them).
struct Enc {
  ByteWriter& w;
  const StringTable* names = nullptr;  // the analysis's: label keys and signatures as ids

  template <class T>
  void value(const T& v) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      w.put(v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      w.put_str(v);
    } else if constexpr (std::is_same_v<T, std::string_view>) {
      if (names == nullptr) throw Error("encode_parts: a view outside an analysis");
      const StrId i = names->find(v);
      if (i == UINT32_MAX) throw Error("encode_parts: a label is not in its analysis's names");
      w.put<uint32_t>(i);
    } else if constexpr (is_vector<T>::value || is_map<T>::value) {
      w.put<uint64_t>(v.size());
      for (const auto& x : v) value(x);
    } else if constexpr (is_pair<T>::value) {
      value(v.first);
      value(v.second);
    } else {
      for_each_member(v, [this](const auto& m) { this->value(m); });
    }
  }
};

// What Enc wrote, read back into the same types (views: of `names`).
struct Dec {
  ByteReader& r;
  StringTable* names = nullptr;

  template <class T>
  void value(T& v) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      r.get(v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      v = r.get_str();
    } else if constexpr (std::is_same_v<T, std::string_view>) {
      const auto i = r.get<uint32_t>();
      if (names == nullptr || i >= names->size())
        throw Error("decode_parts: a label id out of range");
      v = names->str(i);
    } else if constexpr (is_vector<T>::value) {
      v.resize(r.get<uint64_t>());
      for (auto& x : v) value(x);
    } else if constexpr (is_map<T>::value) {
      v.clear();
      for (uint64_t n = r.get<uint64_t>(); n > 0; --n) {
        std::pair<typename T::key_type, typename T::mapped_type> kv;
        value(kv);
        v.emplace(std::move(kv));
      }
    } else if constexpr (is_pair<T>::value) {
      value(v.first);
      value(v.second);
    } else {
      for_each_member(v, [this](auto& m) { this->value(m); });
    }
  }
};

}  // namespace chopper::part_values
