#include "chopper/base/progress.hpp"

#include <mutex>
#include <utility>

namespace chopper {

namespace {
std::mutex phase_mutex;
std::string& phase_text() {
  static std::string text;
  return text;
}
}  // namespace

void progress_phase(std::string what) {
  std::lock_guard<std::mutex> lock(phase_mutex);
  phase_text() = std::move(what);
}

std::string progress_phase_now() {
  std::lock_guard<std::mutex> lock(phase_mutex);
  return phase_text();
}

}  // namespace chopper
