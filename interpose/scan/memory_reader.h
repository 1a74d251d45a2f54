// Reading the process's own memory without touching it in place: process_vm_readv on the
// process itself copies what is readable and stops, with an error, where nothing readable is
// (unmapped, PROT_NONE, a guard page), where a load would have faulted in the program
// (SIGSEGV, SIGBUS). What the scan reads of memory that may go away under it (a running
// thread's stack, another allocator's arenas) is read this way.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace leaseguard::interpose::memory {

// Copies up to `bytes` from `from` into `to`: how many bytes were copied, from the start on
// (0 where the first byte cannot be read; fewer than asked where a later page cannot).
size_t copy(void *to, uintptr_t from, size_t bytes) noexcept;

// The same for `count` ranges in one system call, each remote[i] into local[i]: the bytes
// copied, in order, up to the first range that cannot be read whole (0 if none).
size_t copy_ranges(const iovec *local, const iovec *remote, size_t count) noexcept;

}  // namespace leaseguard::interpose::memory
