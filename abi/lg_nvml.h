/* The part of NVML (the NVIDIA Management Library, libnvidia-ml.so.1) leaseguard uses: which
 * processes hold memory on a device, and how much. Declared here, as lg_cuda.h declares the
 * driver's, so that leaseguard builds without NVIDIA's headers; the layouts and values are
 * the library's ABI (nvml.h, API version 11 and later). Used by the lease authority to
 * verify that a job's memory came back, and implemented by the simulator's stand-in. */
#ifndef LEASEGUARD_LG_NVML_H
#define LEASEGUARD_LG_NVML_H

#ifdef __cplusplus
extern "C" {
#endif

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_UNKNOWN = 999
};

typedef struct nvmlDevice_st *nvmlDevice_t;

/* usedGpuMemory is NVML_VALUE_NOT_AVAILABLE where the driver may not say (a container
 * without the permission, Windows WDDM). */
#define NVML_VALUE_NOT_AVAILABLE (0xFFFFFFFFFFFFFFFFULL)
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef nvmlReturn_t (*PFN_nvmlInit_v2)(void);
typedef nvmlReturn_t (*PFN_nvmlShutdown)(void);
typedef nvmlReturn_t (*PFN_nvmlDeviceGetCount_v2)(unsigned int *deviceCount);
typedef nvmlReturn_t (*PFN_nvmlDeviceGetHandleByIndex_v2)(unsigned int index, nvmlDevice_t *device);
typedef nvmlReturn_t (*PFN_nvmlDeviceGetComputeRunningProcesses_v3)(nvmlDevice_t device, unsigned int *infoCount,
                                                                    nvmlProcessInfo_t *infos);
typedef nvmlReturn_t (*PFN_nvmlDeviceGetUUID)(nvmlDevice_t device, char *uuid, unsigned int length);
typedef const char *(*PFN_nvmlErrorString)(nvmlReturn_t result);

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

#ifdef __cplusplus
}
#endif

#endif
