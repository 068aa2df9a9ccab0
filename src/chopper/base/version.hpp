#pragma once
// chopper's version: `chopper --version`, and the chopper_run row of every database it writes.
#include <string_view>

namespace chopper {

inline constexpr std::string_view kVersion = "0.1.0";

}  // namespace chopper
