// Which of the node's simulated GPUs a process sees, and what names them: CUDA_VISIBLE_DEVICES
// read as the driver reads it, and each GPU's UUID (as cuDeviceGetUuid and NVML give it).
// A process's device ordinals are the positions in its visible list; NVML and the published
// usage (sim_usage.h) speak of the node's GPUs by their index among all of them, so that a
// lease authority or nvidia-smi sees the same GPU whatever each process's list is.
#pragma once

#include <string>
#include <vector>

namespace leaseguard::sim {

// The UUID of the node's GPU `index`: 16 bytes, stable, recognisably the simulator's.
void gpu_uuid(int index, unsigned char uuid[16]);

// The UUID as NVML and nvidia-smi write it: "GPU-" and five groups of hex digits.
std::string gpu_uuid_text(int index);

// The node's GPUs (0 to `node_gpus` - 1) a process sees, in its order, as the driver reads
// CUDA_VISIBLE_DEVICES (`list`; nullptr: all of them): entries separated by commas, each an
// index or a UUID ("GPU-" and a prefix of its hex digits long enough to name one GPU); the
// list ends at the first entry that names no GPU, or one named already. Empty: none.
std::vector<int> visible_gpus(const char *list, int node_gpus);

}  // namespace leaseguard::sim
