// Gives reclaimed allocations back to the device through the real driver or runtime (the
// contract is in core/session/reclaim_backend.h), CUDA and HIP alike.
//
// Which entry point gives back what is the table's `release` column (core/base/entry_points.h),
// called with its own parameter types (its ABI declaration): the value, plus for the two
// shapes that need more
//   - a stream-ordered free (value, stream): on the default stream of the same generation,
//     then that stream synchronized, so the memory is back in its pool when the lease is over;
//   - a reserved range's free (value, size): what the program left mapped in it unmapped
//     first, since the driver frees only an unmapped range.
// The allocation's context is made current for the call (CUDA; HIP: its device), and the
// caller's restored afterwards: the watchdog thread that ends an expired lease has none.
#include "reclaim.h"

#include <type_traits>

#include "driver_queries.h"
#include "hook_table.h"
#include "resource_rules.h"
#include "vmm_mappings.h"

namespace leaseguard::interpose {
namespace {

// A record's value as parameter type T: a pointer, a handle or an integer.
template <typename T>
T as(uint64_t value) {
  if constexpr (std::is_pointer_v<T>) return reinterpret_cast<T>(value);
  else return static_cast<T>(value);
}

// The driver's own function for entry point `name` (or any other), from the object that
// holds the allocating entry point's real function: never a hook.
template <typename Function>
Function driver_function(void *anchor, std::string_view name) {
  return reinterpret_cast<Function>(driver_symbol(anchor, name.data()));  // the table's names are literals
}

template <Vendor V>
int synchronize_default_stream(void *anchor, bool per_thread) {
  if constexpr (V == Vendor::Cuda) {
    auto sync = driver_function<lg_pfn_cuStreamSynchronize>(
        anchor, per_thread ? "cuStreamSynchronize_ptsz" : "cuStreamSynchronize");
    return sync != nullptr ? sync(nullptr) : CUDA_ERROR_NOT_FOUND;
  } else {
    auto sync = driver_function<lg_pfn_hipStreamSynchronize>(anchor, "hipStreamSynchronize");
    return sync != nullptr ? sync(nullptr) : hipErrorNotFound;
  }
}

// Unmaps what the program left mapped in a reserved range, with the vendor's Unmaps entry point.
template <Vendor V>
int unmap_within(void *anchor, const HandleRecord &record) {
  constexpr Api unmap = first_with(Role::Unmaps, V);
  static_assert(unmap != Api::Unknown, "every vendor with reservations has an unmap");
  auto function = driver_function<typename Abi<unmap>::Function>(anchor, api_name(unmap));
  if (function == nullptr) return VendorAbi<V>::kNotFound;
  auto unmap_one = [&]<typename Status, typename Pointer>(Status (*f)(Pointer, size_t), uint64_t base, uint64_t size) {
    return static_cast<int>(f(as<Pointer>(base), size));
  };
  for (const auto &[base, size] : mappings_within(record.address, record.bytes)) {
    const int status = unmap_one(function, base, size);
    if (status != 0) return status;
    note_unmapped(base, size);
  }
  return 0;
}

// Calls release entry point R (a Releases row) for `record`.
template <Api R>
int call_release(void *anchor, const HandleRecord &record) {
  using Function = typename Abi<R>::Function;
  constexpr Vendor vendor = Abi<R>::kVendor;
  // Through what the program's own release would go through: a shim between leaseguard and
  // the driver (HAMi-core's libvgpu.so) that counts the device's memory must see it back.
  auto release = reinterpret_cast<Function>(forwarded_function(R));
  if (release == nullptr || is_wrapper(reinterpret_cast<void *>(release)))
    release = driver_function<Function>(anchor, api_name(R));
  if (release == nullptr) return VendorAbi<vendor>::kNotFound;
  return [&]<typename Status, typename Value, typename... More>(Status (*function)(Value, More...)) -> int {
    const Value value = as<Value>(record.address);
    if constexpr (sizeof...(More) == 0) {
      return function(value);
    } else if constexpr ((std::is_pointer_v<More> && ...)) {  // (value, stream)
      const int status = function(value, nullptr);
      return status == 0 ? synchronize_default_stream<vendor>(anchor, entry_point(R)->per_thread) : status;
    } else {  // (value, size)
      const int status = unmap_within<vendor>(anchor, record);
      return status == 0 ? function(value, record.bytes) : status;
    }
  }(release);
}

template <Api A>
int release_through(void *anchor, const HandleRecord &record) {
  if constexpr (entry_point(A)->role == Role::Releases) return call_release<A>(anchor, record);
  else return CUDA_ERROR_NOT_FOUND;  // the table names only releases in its release column
}

// The release of `record`'s allocating entry point, by the table (an id no row has, from a
// damaged record: device memory's).
int release_by_table(void *anchor, const HandleRecord &record) {
  const EntryPoint *allocated_by = entry_point(record.api);
  switch (allocated_by != nullptr ? allocated_by->release : kDeviceFree[static_cast<size_t>(Vendor::Cuda)]) {
#define LG_RELEASE_CASE(name, ...) \
  case Api::name: return release_through<Api::name>(anchor, record);
    LG_ENTRY_POINTS(LG_RELEASE_CASE)
#undef LG_RELEASE_CASE
    default: return CUDA_ERROR_NOT_FOUND;
  }
}

// `call` with the record's context current (CUDA; HIP: its device), the caller's restored
// after.
template <Vendor V, typename Call>
int in_place_of(void *anchor, const HandleRecord &record, Call call) {
  if constexpr (V == Vendor::Cuda) {
    auto push = driver_function<typename Abi<kPushContext>::Function>(anchor, api_name(kPushContext));
    auto pop = driver_function<typename Abi<kPopContext>::Function>(anchor, api_name(kPopContext));
    const bool pushed = record.context != 0 && push != nullptr && pop != nullptr &&
                        push(reinterpret_cast<CUcontext>(record.context)) == CUDA_SUCCESS;
    const int status = call();
    if (pushed) {
      CUcontext ignored = nullptr;
      pop(&ignored);
    }
    return status;
  } else {
    auto get_device = driver_function<lg_pfn_hipGetDevice>(anchor, "hipGetDevice");
    auto set_device = driver_function<lg_pfn_hipSetDevice>(anchor, "hipSetDevice");
    int saved = -1;
    const bool switched = record.device >= 0 && get_device != nullptr && set_device != nullptr &&
                          get_device(&saved) == hipSuccess && saved != record.device &&
                          set_device(record.device) == hipSuccess;
    const int status = call();
    if (switched) set_device(saved);
    return status;
  }
}

}  // namespace

int DriverReclaimBackend::release(const HandleRecord &record) noexcept {
  // The driver is found through the allocating entry point's real function.
  void *anchor = real_function(entry_point(record.api) != nullptr ? record.api : kDeviceAlloc[0]);
  if (anchor == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  auto call = [&] { return release_by_table(anchor, record); };
  return vendor_of(record.api) == Vendor::Hip ? in_place_of<Vendor::Hip>(anchor, record, call)
                                              : in_place_of<Vendor::Cuda>(anchor, record, call);
}

}  // namespace leaseguard::interpose
