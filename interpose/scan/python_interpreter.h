// A Python interpreter in the process: its objects hold device memory too (a module global, a
// dict, a pool's chunks), and the scan can read them only while they exist and only where they
// live in the tracked heap.
//
// They exist until the interpreter finalizes (Py_FinalizeEx clears the modules and frees their
// objects), which happens before C's exit handlers run: at the exit classification that
// leaseguard registers with libc, whatever only Python objects held reads lost. Python's own
// `atexit` callbacks run first in its finalization, with every module intact, so the preload
// asks the interpreter to run the classification as one of them: Py_AddPendingCall, which any
// thread may call without holding the interpreter's lock, has the main thread register it at
// its next check between bytecodes. It classifies only where the interpreter finalizes because
// the process ends (inside Py_RunMain, the interpreter's own main): a program that embeds
// Python and finalizes it early runs on, and is classified at its exit.
//
// Small objects live in Python's own allocator (pymalloc: pools in arenas it maps itself),
// unless the program runs with PYTHONMALLOC=malloc. The scan reads them block by block, live
// ones only (python_pools.h). Where the interpreter's objects cannot be read (another
// allocator, or one not recognised), a classification says so
// (journal::kReachabilityPythonObjectsUnread) and what it did not find reachable is unchecked,
// never guessed lost.
#pragma once

#include <cstdint>

#include "python_ints.h"

namespace leaseguard::interpose::python {

// Where the interpreter's objects live, learnt from one it allocates as it registers the
// classification: Unknown until then, and where neither is recognised.
enum class ObjectHome : uint8_t { Unknown, TrackedHeap, Pools };
ObjectHome object_home() noexcept;

// Where an initialized interpreter is in the process, asks it to call `classify` from an
// `atexit` callback. Never blocks and takes no interpreter lock; does nothing without one.
void classify_before_finalization(void (*classify)()) noexcept;

// True if a Python interpreter is in the process and its objects cannot be read now: it
// has finalized since it ran at the first allocation, or its object allocator is not the
// tracked malloc, or that is not known yet (the callback above was not registered). A
// program that links Python and never starts it has no objects to read. Resolves symbols:
// call it before the world stop.
bool objects_unreadable() noexcept;

// The interpreter's int type object and how its ints are laid out (core/reachability/
// python_ints.h), so that ints holding device pointers are read as pointers: `layout` None
// without an interpreter, or for one whose ints are not read (before 3.8, free-threaded).
// `offset`: where objects begin in their blocks (16 bytes in, under the debug hooks).
// Resolves symbols: call it before the world stop.
void int_type(uint64_t &type, reachability::PythonIntLayout &layout, uint64_t &offset) noexcept;

// An address inside the module that holds Python's object allocator (PyObject_Malloc), or
// nullptr without one: the arenas it maps hold freed objects' stale words beside live ones.
const void *object_allocator() noexcept;

}  // namespace leaseguard::interpose::python
