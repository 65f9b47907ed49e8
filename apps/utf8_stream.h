// Streaming decoded bytes as text: a token may end in the middle of a UTF-8 character (GPT-2's
// byte-level tokens split them freely), so the bytes of an incomplete character at the end are held
// back until the rest arrives. Bytes that cannot start or continue a character pass through as they
// are, so nothing is ever lost; finish() returns whatever is still held.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace lazygrad::cli {

class Utf8Stream {
 public:
  // The bytes that can be written now: everything so far but an incomplete character at the end.
  std::string push(std::string_view bytes) {
    pending_ += bytes;
    const size_t hold = incomplete_tail();
    std::string ready = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return ready;
  }
  // What is still held (an incomplete character at the end of the text).
  std::string finish() { return std::exchange(pending_, std::string()); }

 private:
  // The length of an incomplete multi-byte character at the end of pending_, or 0.
  size_t incomplete_tail() const {
    const size_t n = pending_.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
      const auto c = static_cast<unsigned char>(pending_[n - back]);
      if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back for the lead
      const size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
      return need > back ? back : 0;
    }
    return 0;
  }

  std::string pending_;
};

}  // namespace lazygrad::cli
