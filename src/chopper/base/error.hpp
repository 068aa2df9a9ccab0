#pragma once
// Errors raised for input that cannot be read at all. Anything smaller than "this file is unusable"
// goes to Diagnostics instead (see diagnostics.hpp): one bad event never aborts a file.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace chopper {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file that cannot be read: the message names the file and the byte offset where reading failed.
class InputError : public Error {
 public:
  InputError(std::string file, uint64_t offset, std::string what);
  const std::string& file() const { return file_; }
  uint64_t offset() const { return offset_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  uint64_t offset_;
  std::string reason_;
};

// The file is readable but is not a trace of the expected kind (another JSON document, CSV, ...).
// A directory scan skips such files and lists them; a file named explicitly is an error.
class NotATraceError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace chopper
