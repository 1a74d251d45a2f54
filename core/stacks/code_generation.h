// Which generation of loaded code the address-keyed caches describe.
//
// The frame-rule cache, the module ranges and the interned stacks are all keyed by code
// address, and are right only while the code at an address stays the same. A dlclose can
// unmap a library and a later dlopen map another one at the same addresses; without this,
// the second library's frames would be walked with the first one's rules and reported under
// the first one's name. The preload counts the unloads it sees (its dlclose): each one
// clears the rule cache, and the module map and stack table compare generations.
#pragma once

#include <atomic>
#include <cstdint>

namespace leaseguard {

namespace detail {
extern std::atomic<uint64_t> g_code_generation;
}

// Starts at 0; one more after each unload noted.
inline uint64_t code_generation() noexcept { return detail::g_code_generation.load(std::memory_order_acquire); }

// Called after a library was unloaded: forgets every cached frame rule and starts a new
// generation. Not for signal handlers.
void note_code_unloaded() noexcept;

// Drops a reference that dlopen(RTLD_NOLOAD) took of a library already loaded: never its last,
// so nothing is unloaded and no generation begins (a new one would re-record every stack, as
// after each live check's look at which drivers are loaded). Defined beside the front ends'
// dlclose (dlclose_hook.cpp).
int drop_noload_reference(void *handle) noexcept;

}  // namespace leaseguard
