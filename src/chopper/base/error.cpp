#include "chopper/base/error.hpp"

#include <fmt/format.h>

namespace chopper {

InputError::InputError(std::string file, uint64_t offset, std::string what)
    : Error(fmt::format("{}: byte {}: {}", file, offset, what)),
      file_(std::move(file)),
      offset_(offset),
      reason_(std::move(what)) {}

}  // namespace chopper
