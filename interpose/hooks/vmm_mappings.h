// The VMM mappings the program has made (the Maps entry points) and not unmapped, so that reclaiming a
// leaked address reservation can unmap what is still mapped in it first: the driver frees
// a range only once it is unmapped, and unmaps only whole mappings.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace leaseguard::interpose {

void note_mapped(uint64_t base, uint64_t size) noexcept;
// Forgets every mapping that starts inside [base, base + size).
void note_unmapped(uint64_t base, uint64_t size) noexcept;
// The mappings (base, size) that start inside [base, base + size).
std::vector<std::pair<uint64_t, uint64_t>> mappings_within(uint64_t base, uint64_t size) noexcept;

}  // namespace leaseguard::interpose
