#include "chopper/model/run.hpp"

#include <cctype>

#include "chopper/base/text.hpp"

namespace chopper {

int64_t rank_from_file_name(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  const std::string name =
      ascii_lower(slash == std::string_view::npos ? path : path.substr(slash + 1));
  for (size_t at = name.find("rank"); at != std::string::npos; at = name.find("rank", at + 1)) {
    size_t p = at + 4;
    if (p < name.size() && (name[p] == '-' || name[p] == '_')) ++p;
    size_t q = p;
    while (q < name.size() && std::isdigit(static_cast<unsigned char>(name[q])) && q - p < 9) ++q;
    if (q > p) return std::stoll(name.substr(p, q - p));
  }
  return -1;
}

}  // namespace chopper
