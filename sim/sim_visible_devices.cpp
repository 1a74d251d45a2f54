// CUDA_VISIBLE_DEVICES and the simulated GPUs' UUIDs (sim_visible_devices.h).
#include "sim_visible_devices.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace leaseguard::sim {
namespace {

// "lg-sim-gpu", zeros, then the index in the last two bytes.
constexpr char kUuidMark[] = "lg-sim-gpu";

std::string trimmed(const std::string &text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

// The GPU `entry` names, or -1.
int named_gpu(const std::string &entry, int node_gpus) {
  if (entry.empty()) return -1;
  if (std::all_of(entry.begin(), entry.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    const long index = entry.size() <= 4 ? std::strtol(entry.c_str(), nullptr, 10) : -1;
    return index >= 0 && index < node_gpus ? static_cast<int>(index) : -1;
  }
  // A UUID's prefix: its hex digits compared with the dashes left out, as the driver does.
  if (entry.rfind("GPU-", 0) != 0) return -1;
  std::string wanted;
  for (char c : entry.substr(4))
    if (c != '-') wanted += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (wanted.empty()) return -1;
  int found = -1;
  for (int index = 0; index < node_gpus; ++index) {
    std::string digits;
    for (char c : gpu_uuid_text(index).substr(4))
      if (c != '-') digits += c;
    if (digits.compare(0, wanted.size(), wanted) != 0) continue;
    if (found >= 0) return -1;  // names more than one
    found = index;
  }
  return found;
}

}  // namespace

void gpu_uuid(int index, unsigned char uuid[16]) {
  std::memset(uuid, 0, 16);
  std::memcpy(uuid, kUuidMark, sizeof kUuidMark - 1);
  uuid[14] = static_cast<unsigned char>(index >> 8);
  uuid[15] = static_cast<unsigned char>(index);
}

std::string gpu_uuid_text(int index) {
  unsigned char bytes[16];
  gpu_uuid(index, bytes);
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10],
                bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

std::vector<int> visible_gpus(const char *list, int node_gpus) {
  std::vector<int> visible;
  if (list == nullptr) {
    for (int index = 0; index < node_gpus; ++index) visible.push_back(index);
    return visible;
  }
  const std::string text = list;
  for (size_t begin = 0; begin <= text.size();) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const int gpu = named_gpu(trimmed(text.substr(begin, comma - begin)), node_gpus);
    if (gpu < 0 || std::find(visible.begin(), visible.end(), gpu) != visible.end()) break;
    visible.push_back(gpu);
    begin = comma + 1;
  }
  return visible;
}

}  // namespace leaseguard::sim
