// PNG writing: see png_writer.h.
#include "png_writer.h"

#include <lazygrad/error.h>
#include <zlib.h>

#include <fstream>
#include <string_view>
#include <vector>

namespace lazygrad::cli {

namespace {

void put32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}

// length, type, data, then the CRC-32 of type and data.
void chunk(std::string& out, std::string_view type, std::string_view data) {
  put32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out += type;
  out += data;
  const auto* bytes = reinterpret_cast<const Bytef*>(out.data() + start);
  put32(out,
        static_cast<uint32_t>(crc32(crc32(0, nullptr, 0), bytes, static_cast<uInt>(out.size() - start))));
}

}  // namespace

std::string encode_png(std::span<const uint8_t> rgb, uint32_t width, uint32_t height) {
  const size_t row = 3 * size_t{width};
  if (width == 0 || height == 0 || rgb.size() != row * height)
    throw Error("PNG: " + std::to_string(rgb.size()) + " bytes are not a " + std::to_string(width) + "x" +
                std::to_string(height) + " RGB image");
  // The rows, each after its filter type byte (0: the bytes as they are).
  std::vector<uint8_t> raw;
  raw.reserve((row + 1) * height);
  for (size_t y = 0; y < height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), rgb.begin() + static_cast<std::ptrdiff_t>(y * row),
               rgb.begin() + static_cast<std::ptrdiff_t>((y + 1) * row));
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size, raw.data(),
                static_cast<uLong>(raw.size()), Z_BEST_COMPRESSION) != Z_OK)
    throw Error("PNG: zlib could not compress the image");
  packed.resize(packed_size);

  std::string ihdr;
  put32(ihdr, width);
  put32(ihdr, height);
  ihdr += std::string("\x08\x02\x00\x00\x00",
                      5);  // 8 bits a sample, RGB, deflate, adaptive filters, no interlace
  std::string out("\x89PNG\r\n\x1a\n", 8);
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", packed);
  chunk(out, "IEND", "");
  return out;
}

void write_png(const std::string& path, std::span<const uint8_t> rgb, uint32_t width, uint32_t height) {
  const std::string bytes = encode_png(rgb, width, height);
  std::ofstream file(path, std::ios::binary);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) throw Error("cannot write \"" + path + "\"");
}

}  // namespace lazygrad::cli
