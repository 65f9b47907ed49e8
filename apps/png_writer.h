// PNG files of 8-bit RGB images, written with zlib (the format's own compression) and nothing else:
// the signature, IHDR, one IDAT of the rows (each with filter byte 0, "None"), IEND, each chunk with
// its CRC-32 (PNG specification, 3rd edition, sections 5 and 11).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace lazygrad::cli {

// The PNG file's bytes of a width x height image, `rgb` its rows top to bottom, 3 bytes a pixel.
std::string encode_png(std::span<const uint8_t> rgb, uint32_t width, uint32_t height);

// encode_png written to `path` (a lazygrad::Error naming the file if it cannot be written).
void write_png(const std::string& path, std::span<const uint8_t> rgb, uint32_t width, uint32_t height);

}  // namespace lazygrad::cli
