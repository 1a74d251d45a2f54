// Questions the hooks ask the real driver: which context and device an allocation belongs
// to, and whether a primary context still exists. Driver functions are looked up in the
// loaded driver, found by its soname (or else in the object of the hooked function being
// called, the "anchor"), never through the global scope, so they cannot land on a hook.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lg_cuda.h"
#include "tracker.h"

namespace leaseguard::interpose {

struct ContextInfo {
  uint64_t context = 0;
  int32_t device = -1;  // -1: unknown
};

// The calling thread's current context and its device. Asked of the driver once, then kept
// for the thread until it changes its current context through an entry point that does
// (the table's SetsContext rows: current_context_changed) or any context may have been
// destroyed (context_handles_may_be_reused): the driver changes a thread's current context
// only when that thread asks it to, or when a context is destroyed.
ContextInfo current_context(void *anchor) noexcept;

// Journals the UUID of device `device` (the driver's cuDeviceGetUuid_v2) with `tracker`,
// which the hooks call before the process's first allocation on it (Tracker::device_noted).
void note_device_uuid(Tracker &tracker, int32_t device, void *anchor) noexcept;

// Called by the hooks of the SetsContext entry points after the driver's call: the calling
// thread's next allocation asks the driver which context is current.
void current_context_changed() noexcept;

// Called before and after the driver destroys a context (or may: releasing or resetting a
// primary one): the context's handle may be handed out again, for another device, so what
// each thread remembers of a handle's device is forgotten.
void context_handles_may_be_reused() noexcept;

// The primary context of `device` if it is active (refcount unchanged), else nullptr.
// `release` is the driver's own release of a primary context's reference, which the
// question needs (a retain and a release that leave its count as it was).
CUcontext active_primary_context(void *anchor, CUdevice device, CUresult (*release)(CUdevice)) noexcept;

// Whether the primary context of `device` is active.
bool primary_context_active(void *anchor, CUdevice device) noexcept;

// The driver's id for `context` (cuCtxGetId: unique for the process's life, so a context
// made again under the same handle has a new one); 0 if the driver cannot say.
uint64_t context_id(void *anchor, CUcontext context) noexcept;

// Whether a release of the primary context of `device`, which was `primary` with id
// `id_before` (0: unknown) before it, destroyed it. The driver destroys the primary context
// with its last reference; another thread may retain it again, making a new one, before
// this is asked. Then the primary is active again but not the same context: its handle or
// its id differs. Without an id only an inactive primary counts as destroyed.
bool primary_context_destroyed(void *anchor, CUdevice device, CUcontext primary, uint64_t id_before) noexcept;

// The driver's own function `name`, from the object that contains `anchor` (not cached:
// for rare calls such as reclaiming).
void *driver_symbol(void *anchor, const char *name) noexcept;

// The load bases (link_map l_addr) of the drivers loaded under their own names: their
// memory is the driver's even where a shim between leaseguard and the driver is what the
// hooks forward to. Takes the loader's lock.
size_t loaded_driver_bases(uintptr_t *bases, size_t capacity) noexcept;

// Which drivers are loaded now, for the journal's process end: journal::kDriversKnown with
// journal::kDriverCuda and kDriverHip bits. Takes the loader's lock: not for signal handlers.
uint32_t loaded_drivers() noexcept;

}  // namespace leaseguard::interpose
