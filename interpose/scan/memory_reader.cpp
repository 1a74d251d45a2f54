// Copies of the process's own memory (memory_reader.h).
#include "memory_reader.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace leaseguard::interpose::memory {

size_t copy_ranges(const iovec *local, const iovec *remote, size_t count) noexcept {
  if (count == 0) return 0;
  // The raw call: no errno-setting wrapper is needed, and one stays usable while every other
  // thread is stopped (it takes no lock).
  const long got = syscall(SYS_process_vm_readv, getpid(), local, count, remote, count, 0);
  return got > 0 ? static_cast<size_t>(got) : 0;
}

size_t copy(void *to, uintptr_t from, size_t bytes) noexcept {
  const iovec local{to, bytes}, remote{reinterpret_cast<void *>(from), bytes};
  return copy_ranges(&local, &remote, 1);
}

}  // namespace leaseguard::interpose::memory
