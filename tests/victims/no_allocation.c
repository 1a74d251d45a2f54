/* Loads the driver, initializes it, and allocates nothing: its report must say that no
 * allocation was recorded, never that nothing leaked as if something had been checked. */
#include "victim.h"

int main(void) {
  CUdevice device;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  return 0;
}
