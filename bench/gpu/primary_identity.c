/* What a real driver does when a device's primary context is made again after its last
 * release: whether the new one keeps the handle, and whether cuCtxGetId tells the two apart.
 * leaseguard's release hook relies on one of them differing when another thread retains the
 * primary again before the hook asks (interpose/hooks/driver_queries.h). Prints one line:
 *   handle: same|new  id: new|same  old handle after release: <status>
 * and exits 0 when the handle or the id differs, 1 when neither does, 3 on a driver error. */
#include "victim.h" /* built with VICTIM_USE_TOOLKIT: the toolkit's cuda.h; CHECK exits 3 */

int main(void) {
  CUdevice device;
  CUcontext first, again;
  unsigned long long first_id = 0, again_id = 0, gone_id = 0;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&first, device));
  CHECK(cuCtxGetId(first, &first_id));
  CHECK(cuDevicePrimaryCtxRelease(device));
  const CUresult gone_status = cuCtxGetId(first, &gone_id);
  CHECK(cuDevicePrimaryCtxRetain(&again, device));
  CHECK(cuCtxGetId(again, &again_id));
  CHECK(cuDevicePrimaryCtxRelease(device));
  printf("handle: %s  id: %s  old handle after release: %d\n", again == first ? "same" : "new",
         again_id != first_id ? "new" : "same", (int)gone_status);
  return again != first || again_id != first_id ? 0 : 1;
}
