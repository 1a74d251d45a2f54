/* Compile-time check: every HIP prototype in abi/lg_hip.h matches the HIP headers. The
 * prototypes are declared again over the headers' own types; a C compiler rejects any
 * declaration that conflicts ("conflicting types"). Built only where the HIP headers are
 * installed (libamdhip64-dev); abi_check_hip_types.cpp checks the types themselves. */
#define __HIP_PLATFORM_AMD__ 1
#include <hip/hip_runtime_api.h>

#define LG_HIP_EXTERNAL_TYPES 1
#include "lg_hip.h"

int lg_hip_abi_checked = 1;

int lg_hip_launch_markers_match(void) {
  return LG_HIP_LAUNCH_PARAM_END == HIP_LAUNCH_PARAM_END &&
         LG_HIP_LAUNCH_PARAM_BUFFER_SIZE == HIP_LAUNCH_PARAM_BUFFER_SIZE &&
         LG_HIP_LAUNCH_PARAM_BUFFER_POINTER == HIP_LAUNCH_PARAM_BUFFER_POINTER;
}
