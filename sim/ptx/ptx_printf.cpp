#include "ptx_printf.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace leaseguard::sim::ptx {
namespace {

// The longest string a %s reads, and the longest format.
constexpr size_t kMaxString = 4096;

// Where `address` lies in memory the warp may read: a host pointer and how many bytes on.
const unsigned char *readable(Warp &warp, uint64_t address, size_t &available) {
  const uint64_t shared = reinterpret_cast<uint64_t>(warp.shared);
  if (address >= shared && address < shared + warp.shared_size) {
    available = shared + warp.shared_size - address;
    return reinterpret_cast<const unsigned char *>(address);
  }
  const uint64_t frames = reinterpret_cast<uint64_t>(warp.block_frames);
  if (address >= frames && address < frames + warp.block_frames_size) {
    available = frames + warp.block_frames_size - address;
    return reinterpret_cast<const unsigned char *>(address);
  }
  available = std::min<uint64_t>(warp.ranges->extent(address), kMaxString);
  return available == 0 ? nullptr : reinterpret_cast<const unsigned char *>(address);
}

}  // namespace

std::string device_string(Warp &warp, uint64_t address) {
  if (address == 0) return "(null)";
  size_t available = 0;
  const unsigned char *at = readable(warp, address, available);
  if (at == nullptr) return "(unreadable)";
  const auto *text = reinterpret_cast<const char *>(at);
  return std::string(text, strnlen(text, available));
}

namespace {

// The arguments a thread packed, read one by one at their alignment.
struct Arguments {
  Warp &warp;
  uint64_t address;
  size_t offset = 0;
  int count = 0;

  bool next(size_t bytes, uint64_t &value) {
    offset = (offset + bytes - 1) / bytes * bytes;
    value = 0;
    size_t available = 0;
    const unsigned char *at = address == 0 ? nullptr : readable(warp, address + offset, available);
    if (at == nullptr || available < bytes) return false;
    std::memcpy(&value, at, bytes);
    offset += bytes;
    ++count;
    return true;
  }
};

// One conversion: `flags` is the specification without its length modifiers (the value is
// passed as the host's widest of its kind); `longs` counts them.
std::string convert(Warp &warp, const std::string &flags, char conversion, int longs, bool half, Arguments &arguments) {
  char buffer[512];
  uint64_t value = 0;
  switch (conversion) {
    case 'd':
    case 'i': {
      if (!arguments.next(longs > 0 ? 8 : 4, value)) return {};
      long long v = longs > 0 ? static_cast<long long>(value) : static_cast<long long>(static_cast<int32_t>(value));
      if (half) v = static_cast<int16_t>(v);
      std::snprintf(buffer, sizeof buffer, (flags + "lld").c_str(), v);
      return buffer;
    }
    case 'u':
    case 'x':
    case 'X':
    case 'o':
    case 'c': {
      if (!arguments.next(longs > 0 ? 8 : 4, value)) return {};
      const unsigned long long v = longs > 0 ? value : static_cast<uint32_t>(value);
      if (conversion == 'c') std::snprintf(buffer, sizeof buffer, (flags + "c").c_str(), static_cast<int>(v));
      else std::snprintf(buffer, sizeof buffer, (flags + "ll" + conversion).c_str(), v);
      return buffer;
    }
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
    case 'a':
    case 'A': {
      if (!arguments.next(8, value)) return {};
      double v;
      std::memcpy(&v, &value, sizeof v);
      std::snprintf(buffer, sizeof buffer, (flags + conversion).c_str(), v);
      return buffer;
    }
    case 'p':
      if (!arguments.next(8, value)) return {};
      std::snprintf(buffer, sizeof buffer, (flags + "p").c_str(), reinterpret_cast<void *>(value));
      return buffer;
    case 's':
      if (!arguments.next(8, value)) return {};
      std::snprintf(buffer, sizeof buffer, (flags + "s").c_str(), device_string(warp, value).c_str());
      return buffer;
    default: return flags + conversion;
  }
}

std::string format(Warp &warp, const std::string &text, Arguments &arguments) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '%') {
      out += '%';
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < text.size() && std::strchr("-+ #0123456789.", text[j]) != nullptr) ++j;
    const std::string flags = text.substr(i, j - i);
    int longs = 0;
    bool half = false;
    while (j < text.size() && std::strchr("hlLqjzt", text[j]) != nullptr) {
      if (text[j] == 'h') half = true;
      else ++longs;
      ++j;
    }
    if (j >= text.size()) break;
    out += convert(warp, flags, text[j], longs, half, arguments);
    i = j;
  }
  return out;
}

}  // namespace

void print(Warp &warp, const Instruction &in, uint32_t lanes) {
  each_lane(lanes, [&](unsigned l) {
    unsigned char *frame = warp.frames + l * warp.frame_size;
    uint64_t format_address = 0, argument_address = 0;
    std::memcpy(&format_address, frame + in.copies[0].from, sizeof format_address);
    std::memcpy(&argument_address, frame + in.copies[0].to, sizeof argument_address);
    Arguments arguments{warp, argument_address};
    *warp.printed += format(warp, device_string(warp, format_address), arguments);
    if (in.mode == 1) std::memcpy(frame + in.copies[1].from, &arguments.count, sizeof arguments.count);
  });
}

}  // namespace leaseguard::sim::ptx
