#include "chopper/ingest/rocprof/csv_split.hpp"

#include <cstring>

#include "chopper/base/error.hpp"

namespace chopper::csv {

namespace {
bool is_blank(char c) {
  return c == ' ' || c == '\t';
}
}  // namespace

bool Splitter::split(std::string_view line) {
  fields_.clear();
  quoted_.clear();
  owned_.clear();
  owned_len_.clear();
  unescaped_.clear();
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  bool ok = true;
  size_t i = 0;
  const size_t n = line.size();
  while (true) {
    while (i < n && is_blank(line[i])) ++i;
    if (i < n && line[i] == '"') {
      // Quoted field: up to the closing quote; "" is one quote.
      size_t start = ++i;
      bool escaped = false;
      bool closed = false;
      while (i < n) {
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') {
            escaped = true;
            i += 2;
            continue;
          }
          closed = true;
          break;
        }
        ++i;
      }
      std::string_view raw = line.substr(start, i - start);
      if (!closed) ok = false;
      if (closed) ++i;  // past the closing quote
      if (escaped) {
        owned_.push_back(unescaped_.size() + 1);
        size_t begin = unescaped_.size();
        for (size_t k = 0; k < raw.size(); ++k) {
          unescaped_.push_back(raw[k]);
          if (raw[k] == '"' && k + 1 < raw.size() && raw[k + 1] == '"') ++k;
        }
        owned_len_.push_back(unescaped_.size() - begin);
        fields_.emplace_back();  // set below, once unescaped_ no longer grows
      } else {
        owned_.push_back(0);
        owned_len_.push_back(0);
        fields_.push_back(raw);
      }
      quoted_.push_back(1);
      while (i < n && is_blank(line[i])) ++i;
      if (i < n && line[i] != ',') {
        ok = false;
        while (i < n && line[i] != ',') ++i;  // skip the stray text
      }
    } else {
      size_t start = i;
      while (i < n && line[i] != ',') ++i;
      size_t end = i;
      while (end > start && is_blank(line[end - 1])) --end;
      owned_.push_back(0);
      owned_len_.push_back(0);
      fields_.push_back(line.substr(start, end - start));
      quoted_.push_back(0);
    }
    if (i >= n) break;
    ++i;  // past ','
  }
  // Unescaped fields point into unescaped_, which no longer grows.
  for (size_t f = 0; f < fields_.size(); ++f)
    if (owned_[f] != 0)
      fields_[f] = std::string_view(unescaped_).substr(owned_[f] - 1, owned_len_[f]);
  return ok;
}

LineSource::LineSource(ByteSource& src, std::string head, Diagnostics* diags)
    : src_(src), diags_(diags), buf_(std::move(head)) {
  if (buf_.empty()) fill();
  if (buf_.size() >= 3 && std::memcmp(buf_.data(), "\xEF\xBB\xBF", 3) == 0) pos_ = 3;
}

bool LineSource::fill() {
  if (eof_) return false;
  if (pos_ > 0) {
    buf_.erase(0, pos_);
    base_ += pos_;
    pos_ = 0;
  }
  constexpr size_t kChunk = size_t{1} << 20;
  size_t old = buf_.size();
  buf_.resize(old + kChunk);
  size_t got = src_.read(buf_.data() + old, kChunk);
  buf_.resize(old + got);
  if (got == 0) eof_ = true;
  return got != 0;
}

bool LineSource::next(std::string_view& line, bool& terminated) {
  size_t scanned = pos_;
  while (true) {
    const void* nl = std::memchr(buf_.data() + scanned, '\n', buf_.size() - scanned);
    if (nl != nullptr) {
      size_t at = static_cast<size_t>(static_cast<const char*>(nl) - buf_.data());
      line = std::string_view(buf_.data() + pos_, at - pos_);
      line_start_ = base_ + pos_;
      ++line_no_;
      pos_ = at + 1;
      terminated = true;
      return true;
    }
    if (buf_.size() - pos_ > kMaxLine) {
      // Over the limit: the line's bytes are dropped as they come, up to its end.
      const uint64_t start = base_ + pos_;
      uint64_t bytes = buf_.size() - pos_;
      base_ += buf_.size();
      buf_.clear();
      pos_ = 0;
      bool ended = false;
      while (!ended && fill()) {
        const void* e = std::memchr(buf_.data(), '\n', buf_.size());
        const size_t at =
            e != nullptr ? static_cast<size_t>(static_cast<const char*>(e) - buf_.data()) : 0;
        ended = e != nullptr;
        const size_t drop = ended ? at + 1 : buf_.size();
        bytes += ended ? at : buf_.size();
        buf_.erase(0, drop);
        base_ += drop;
      }
      ++line_no_;
      ++long_lines_;
      if (diags_ != nullptr)
        diags_->add("row_too_long", [&] {
          return "line " + std::to_string(line_no_) + " (byte " + std::to_string(start) +
                 "): " + std::to_string(bytes) + " bytes, over the limit of " +
                 std::to_string(kMaxLine) + " bytes per row: skipped";
        });
      scanned = 0;
      continue;
    }
    size_t scanned_after_pos = buf_.size() - pos_;  // fill() moves the line to the front
    if (!fill()) break;
    scanned = pos_ + scanned_after_pos;
  }
  if (pos_ >= buf_.size()) return false;
  line = std::string_view(buf_.data() + pos_, buf_.size() - pos_);
  line_start_ = base_ + pos_;
  ++line_no_;
  pos_ = buf_.size();
  terminated = false;
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace chopper::csv
