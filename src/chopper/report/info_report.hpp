#pragma once
#include <string>

#include "chopper/model/run.hpp"

namespace chopper {

// `chopper info` as text for a terminal, and as a JSON array with one object per file.
std::string info_text(const Run& run);
std::string info_json(const Run& run);

}  // namespace chopper
