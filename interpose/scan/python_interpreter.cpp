// The classification of a Python program before its interpreter finalizes, and whether its
// objects can be read (python_interpreter.h).
#include "python_interpreter.h"

#include <dlfcn.h>
#include <link.h>
#include <unwind.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "heap_tracker.h"
#include "log.h"
#include "python_pools.h"
#include "real_dlsym.h"

namespace leaseguard::interpose::python {
namespace {

// The parts of CPython's C API used here, as its stable ABI defines them: the preload needs
// no Python headers, and serves whichever interpreter the process has loaded.
using PyObject = void;
struct PyMethodDef {
  const char *name;
  PyObject *(*method)(PyObject *self, PyObject *unused);
  int flags;
  const char *doc;
};
constexpr int kMethodWithoutArguments = 0x0004;  // METH_NOARGS
struct PyMemAllocatorEx {
  void *context;
  void *(*malloc)(void *context, size_t bytes);
  void *(*calloc)(void *context, size_t count, size_t bytes);
  void *(*realloc)(void *context, void *pointer, size_t bytes);
  void (*free)(void *context, void *pointer);
};
constexpr int kObjectDomain = 2;  // PYMEM_DOMAIN_OBJ: where objects are allocated

struct Api {
  int (*is_initialized)() = nullptr;
  int (*add_pending_call)(int (*)(void *), void *) = nullptr;
  PyObject *(*import_module)(const char *) = nullptr;
  PyObject *(*new_function)(PyMethodDef *, PyObject *, PyObject *) = nullptr;
  PyObject *(*call_method)(PyObject *, const char *, const char *, ...) = nullptr;
  void (*increment)(PyObject *) = nullptr;
  void (*decrement)(PyObject *) = nullptr;  // Py_DecRef: nullptr is allowed
  void (*clear_error)() = nullptr;
  void (*get_allocator)(int, PyMemAllocatorEx *) = nullptr;
  PyObject *none = nullptr;
  void *run_main = nullptr;  // Py_RunMain: the interpreter's main, which exits once it returns
};

template <typename Slot>
bool find(Slot &slot, const char *name) noexcept {
  return find_symbol(slot, RTLD_DEFAULT, name);
}

bool resolve(Api &api) noexcept {
  return find(api.is_initialized, "Py_IsInitialized") && find(api.add_pending_call, "Py_AddPendingCall") &&
         find(api.import_module, "PyImport_ImportModule") && find(api.new_function, "PyCFunction_NewEx") &&
         find(api.call_method, "PyObject_CallMethod") && find(api.increment, "Py_IncRef") &&
         find(api.decrement, "Py_DecRef") && find(api.clear_error, "PyErr_Clear") &&
         find(api.get_allocator, "PyMem_GetAllocator") && find(api.none, "_Py_NoneStruct") &&
         find(api.run_main, "Py_RunMain");
}

// Whether the calling thread is inside `function` (its symbol's extent), by its unwound stack.
bool called_from(void *function) noexcept {
  Dl_info info{};
  void *entry = nullptr;
  if (dladdr1(function, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) return false;
  const auto *symbol = static_cast<const ElfW(Sym) *>(entry);
  struct Extent {
    uintptr_t begin, end;
    bool inside;
  } extent{reinterpret_cast<uintptr_t>(function), reinterpret_cast<uintptr_t>(function) + symbol->st_size, false};
  _Unwind_Backtrace(
      [](_Unwind_Context *context, void *argument) {
        auto *wanted = static_cast<Extent *>(argument);
        const uintptr_t at = _Unwind_GetIP(context);
        wanted->inside = at > wanted->begin && at <= wanted->end;
        return wanted->inside ? _URC_END_OF_STACK : _URC_NO_REASON;
      },
      &extent);
  return extent.inside;
}

Api g_api;                                // written once, before the pending call that reads it
std::atomic<bool> g_asked{false};         // the pending call was added
std::atomic<bool> g_seen_running{false};  // the interpreter was initialized at the first allocation
std::atomic<void (*)()> g_classify{nullptr};
std::atomic<ObjectHome> g_object_home{ObjectHome::Unknown};
std::atomic<bool> g_debug_hooks{false};  // objects 16 bytes into their blocks

// Classifies where the interpreter finalizes because the process ends: inside Py_RunMain,
// the interpreter's own main (`python3 script.py`, `-c`, `-m`). A program that embeds Python
// and finalizes it early runs on, and is classified at its exit.
PyObject *run_classification(PyObject *, PyObject *) {
  void (*classify)() = g_classify.load(std::memory_order_acquire);
  if (classify != nullptr && called_from(g_api.run_main)) classify();
  else log_debug("Python finalizes outside its main: the classification waits for the process's exit");
  g_api.increment(g_api.none);
  return g_api.none;
}

PyMethodDef g_method{"leaseguard_classify", run_classification, kMethodWithoutArguments, nullptr};

// Where an object the interpreter allocates lives, by one it allocates: a block of the tracked
// heap under PYTHONMALLOC=malloc, 16 bytes into one under malloc_debug (the debug hooks'
// header); a block of one of pymalloc's pools by default (and 16 bytes into one under
// pymalloc_debug), which is read in place: the interpreter's lock is held here.
ObjectHome where_objects_live() noexcept {
  PyMemAllocatorEx allocator{};
  g_api.get_allocator(kObjectDomain, &allocator);
  if (allocator.malloc == nullptr || allocator.free == nullptr) return ObjectHome::Unknown;
  void *probe = allocator.malloc(allocator.context, 64);
  if (probe == nullptr) return ObjectHome::Unknown;
  const auto address = reinterpret_cast<uintptr_t>(probe);
  // The debug hooks (PYTHONMALLOC=*_debug, -X dev) put a header before each object: its size,
  // then the domain's letter ('o' for objects) and seven bytes of 0xfd.
  const auto *header = static_cast<const unsigned char *>(probe) - sizeof(size_t);
  bool debug = header[0] == 'o';
  for (size_t i = 1; i < sizeof(size_t); ++i) debug = debug && header[i] == 0xfd;
  g_debug_hooks.store(debug, std::memory_order_release);
  ObjectHome home = ObjectHome::Unknown;
  if (heap::tracks(address) || heap::tracks(address - 2 * sizeof(size_t))) home = ObjectHome::TrackedHeap;
  else if (python_pools::in_live_block(python_pools::module_of(object_allocator()), address)) home = ObjectHome::Pools;
  allocator.free(allocator.context, probe);
  return home;
}

// Runs on the interpreter's main thread, with its lock held, between two bytecodes. Never
// fails: an exception here would be raised in the program.
int register_at_exit(void *) {
  g_object_home.store(where_objects_live(), std::memory_order_release);
  PyObject *atexit = g_api.import_module("atexit");
  PyObject *function = atexit != nullptr ? g_api.new_function(&g_method, nullptr, nullptr) : nullptr;
  PyObject *result = function != nullptr ? g_api.call_method(atexit, "register", "(O)", function) : nullptr;
  if (result == nullptr) {
    g_api.clear_error();
    log_warning("could not register with Python's atexit: memory only its objects hold may read lost at exit");
  }
  g_api.decrement(result);
  g_api.decrement(function);
  g_api.decrement(atexit);
  return 0;
}

}  // namespace

void classify_before_finalization(void (*classify)()) noexcept {
  if (g_asked.load(std::memory_order_acquire)) return;
  int (*is_initialized)() = nullptr;
  if (!find(is_initialized, "Py_IsInitialized") || is_initialized() == 0) return;
  g_seen_running.store(true, std::memory_order_release);
  if (g_asked.exchange(true, std::memory_order_acq_rel)) return;
  if (!resolve(g_api)) {
    log_debug("a Python interpreter without the calls leaseguard needs: it classifies at C's exit");
    return;
  }
  g_classify.store(classify, std::memory_order_release);
  if (g_api.add_pending_call(register_at_exit, nullptr) != 0)
    log_debug("Python's queue of pending calls is full: the classification runs at C's exit");
}

void int_type(uint64_t &type, reachability::PythonIntLayout &layout, uint64_t &offset) noexcept {
  type = 0;
  layout = reachability::PythonIntLayout::None;
  offset = 0;
  void *long_type = nullptr;
  const char *(*version)() = nullptr;
  if (!find(long_type, "PyLong_Type") || !find(version, "Py_GetVersion")) return;
  // "3.11.2 (main, ...) [GCC 12.2.0]"; a free-threaded build says so in it.
  const char *text = version();
  unsigned major = 0, minor = 0;
  if (text == nullptr || std::sscanf(text, "%u.%u", &major, &minor) != 2 || major != 3 || minor < 8) return;
  if (std::strstr(text, "free-threading") != nullptr) return;
  type = reinterpret_cast<uint64_t>(long_type);
  layout = minor >= 12 ? reachability::PythonIntLayout::TaggedValue : reachability::PythonIntLayout::SizeInHeader;
  offset = g_debug_hooks.load(std::memory_order_acquire) ? 2 * sizeof(size_t) : 0;
}

const void *object_allocator() noexcept {
  void *(*allocate)(size_t) = nullptr;
  return find(allocate, "PyObject_Malloc") ? reinterpret_cast<const void *>(allocate) : nullptr;
}

bool objects_unreadable() noexcept {
  int (*is_initialized)() = nullptr;
  if (!find(is_initialized, "Py_IsInitialized")) return false;  // no interpreter here
  const bool running = is_initialized() != 0;
  // A program that links Python and never starts it (or had finalized it before it allocated
  // device memory) has no objects that could hold any.
  if (!running && !g_seen_running.load(std::memory_order_acquire)) return false;
  return !running || g_object_home.load(std::memory_order_acquire) == ObjectHome::Unknown;
}

ObjectHome object_home() noexcept { return g_object_home.load(std::memory_order_acquire); }

}  // namespace leaseguard::interpose::python
