// read_kineto: the parser's copy for this CPU's x86-64 level (kineto_isa.hpp), chosen once.
#include "chopper/ingest/kineto/kineto_reader.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "chopper/base/error.hpp"
#include "chopper/ingest/kineto/kineto_cold.hpp"
#include "chopper/ingest/kineto/kineto_isa.hpp"

namespace chopper {

bool kineto_isa_supported(KinetoIsa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // Each level's copy is compiled for these features (kineto_parser_*.cpp). GCC's and compiler-rt's
  // "avx" and "avx2" also need the OS to save the AVX registers (XGETBV).
  const bool v2 = __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("sse4.1") &&
                  __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt");
  switch (isa) {
    case KinetoIsa::kBaseline:
      return true;
    case KinetoIsa::kV2:
      return v2;
    case KinetoIsa::kV3:
      return v2 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  }
  return false;
#else
  return isa == KinetoIsa::kBaseline;
#endif
}

KinetoIsa choose_kineto_isa(const char* forced, std::string* warning) {
  KinetoIsa best = KinetoIsa::kBaseline;
  for (KinetoIsa isa : kKinetoIsas)
    if (kineto_isa_supported(isa)) best = isa;
  if (warning != nullptr) warning->clear();
  const std::string_view want = forced == nullptr ? std::string_view() : std::string_view(forced);
  if (want.empty() || want == "auto") return best;
  if (KinetoIsa isa{}; parse_enum(want, isa)) {
    if (kineto_isa_supported(isa)) return isa;
    if (warning != nullptr)
      *warning = fmt::format("CHOPPER_ISA={}: this CPU cannot run it; using {}", want,
                             kineto_isa_name(best));
    return best;
  }
  if (warning != nullptr)
    *warning = fmt::format("CHOPPER_ISA={} is not baseline, v2, v3 or auto; using {}", want,
                           kineto_isa_name(best));
  return best;
}

KinetoIsa kineto_isa() {
  static const KinetoIsa chosen = [] {
    std::string warning;
    const KinetoIsa isa = choose_kineto_isa(std::getenv("CHOPPER_ISA"), &warning);
    if (!warning.empty()) fmt::print(stderr, "chopper: {}\n", warning);
    return isa;
  }();
  return chosen;
}

namespace {

RankTrace read_with(ByteSource& src, const KinetoReadOptions& opt, KinetoIsa isa,
                    const std::string& path) {
  void (*read)(ByteSource&, const KinetoReadOptions&, RankTrace&, const std::string&) = nullptr;
  if (kineto_isa_supported(isa)) {
    switch (isa) {
      case KinetoIsa::kBaseline:
        read = kineto_parser::baseline::read;
        break;
#if defined(__x86_64__)
      case KinetoIsa::kV2:
        read = kineto_parser::v2::read;
        break;
      case KinetoIsa::kV3:
        read = kineto_parser::v3::read;
        break;
#endif
      default:
        break;
    }
  }
  if (read == nullptr)
    throw std::invalid_argument(
        fmt::format("read_kineto: the {} parser does not run here", kineto_isa_name(isa)));
  RankTrace t;
  t.file = src.name();
  t.file_bytes = src.raw_size();
  try {
    read(src, opt, t, path);
    kineto_parser::drop_gpu_activities_outside_trace(t);
  } catch (const std::bad_alloc&) {
    // Memory is short: free the trace before building the message.
    t = RankTrace();
    throw InputError(src.name(), src.raw_offset(), "out of memory while reading this file");
  } catch (const std::length_error&) {
    t = RankTrace();
    throw InputError(src.name(), src.raw_offset(), "out of memory while reading this file");
  }
  return t;
}

}  // namespace

RankTrace read_kineto(ByteSource& src, const KinetoReadOptions& opt, KinetoIsa isa) {
  return read_with(src, opt, isa, std::string());
}

RankTrace read_kineto(ByteSource& src, const KinetoReadOptions& opt) {
  return read_kineto(src, opt, kineto_isa());
}

RankTrace read_kineto_file(const std::string& path, const KinetoReadOptions& opt, KinetoIsa isa) {
  // A trace may come through a pipe ("-", <(zcat ...)); a directory's FIFOs never get here.
  auto src = ByteSource::open_file(path, /*streams=*/true);
  return read_with(*src, opt, isa, path);
}

RankTrace read_kineto_file(const std::string& path, const KinetoReadOptions& opt) {
  return read_kineto_file(path, opt, kineto_isa());
}

}  // namespace chopper
