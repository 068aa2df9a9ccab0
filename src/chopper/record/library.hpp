#pragma once
// A shared library loaded at run time (dlopen): the GPU vendors' libraries are never linked, so
// chopper runs where they are not installed.
#include <dlfcn.h>

#include <string>

namespace chopper::record {

class Library {
 public:
  Library() = default;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  // Loads `name` through the dynamic loader's search (LD_LIBRARY_PATH, ld.so.cache); false with
  // error() saying why.
  bool open(const char* name) {
    handle_ = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* e = ::dlerror();
      error_ = e != nullptr ? e : std::string(name) + ": cannot be loaded";
    }
    return handle_ != nullptr;
  }
  // The function `name`, or nullptr when the library does not export it.
  template <typename F>
  F get(const char* name) const {
    return handle_ == nullptr ? nullptr : reinterpret_cast<F>(::dlsym(handle_, name));
  }
  const std::string& error() const { return error_; }

 private:
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace chopper::record
