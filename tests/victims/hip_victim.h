/* Shared helpers for HIP victim programs, built against the real HIP headers: a CHECK that
 * exits with a message, and the attribute that keeps each leak site its own frame. */
#ifndef LEASEGUARD_TESTS_HIP_VICTIM_H
#define LEASEGUARD_TESTS_HIP_VICTIM_H

#include <hip/hip_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))
#define CHECK(call)                                                                                 \
  do {                                                                                              \
    hipError_t check_status_ = (call);                                                              \
    if (check_status_ != hipSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s failed with %d\n", __FILE__, __LINE__, #call, (int)check_status_); \
      exit(3);                                                                                      \
    }                                                                                               \
  } while (0)

#endif
