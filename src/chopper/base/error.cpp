#include "chopper/base/error.hpp"

#include <fmt/format.h>

#include "chopper/base/utf8.hpp"

namespace chopper {

namespace {
// An error message may quote the input: it is kept as valid UTF-8, as all kept text is.
std::string repaired(std::string s) {
  repair_utf8(s);
  return s;
}
}  // namespace

InputError::InputError(std::string file, uint64_t offset, std::string what)
    : Error(fmt::format("{}: byte {}: {}", file, offset, repaired(what))),
      file_(std::move(file)),
      offset_(offset),
      reason_(repaired(std::move(what))) {}

}  // namespace chopper
