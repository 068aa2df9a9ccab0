#pragma once
// A byte count as people read it: B, KiB, MiB, GiB, TiB (powers of 1024).
#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace chopper {

// 512 -> "512 B", 436224000 -> "416.0 MiB", 1610612736 -> "1.50 GiB": three significant digits
// from KiB on; below 1 KiB the exact count.
inline std::string size_text(int64_t bytes) {
  if (bytes < 1024 && bytes > -1024) return fmt::format("{} B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  size_t u = 0;
  while ((v >= 1024.0 || v <= -1024.0) && u + 1 < std::size(kUnits)) v /= 1024.0, ++u;
  const double a = v < 0 ? -v : v;
  if (a >= 100) return fmt::format("{:.0f} {}", v, kUnits[u]);
  if (a >= 10) return fmt::format("{:.1f} {}", v, kUnits[u]);
  return fmt::format("{:.2f} {}", v, kUnits[u]);
}

}  // namespace chopper
