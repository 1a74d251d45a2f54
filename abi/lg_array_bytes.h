/* The device bytes a CUDA array takes, from its descriptor: what the simulator allocates and
 * what the preload reports for cuArrayCreate, cuArray3DCreate and cuMipmappedArrayCreate.
 * Returns 0 for a descriptor the driver would refuse (no width, a channel count other than
 * 1, 2 or 4, a format without a fixed element size) or whose size overflows. */
#ifndef LEASEGUARD_ABI_LG_ARRAY_BYTES_H
#define LEASEGUARD_ABI_LG_ARRAY_BYTES_H

#include "lg_cuda.h"

#define LG_CUDA_ARRAY3D_LAYERED 0x01u

static inline size_t lg_array_element_bytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

/* levels: 1 for a plain array; each further mipmap level halves width, height and (unless
 * the array is layered) depth, down to 1. */
static inline size_t lg_array_bytes(size_t width, size_t height, size_t depth, CUarray_format format, unsigned channels,
                                    unsigned flags, unsigned levels) {
  size_t element = lg_array_element_bytes(format);
  size_t total = 0;
  unsigned level;
  if (width == 0 || element == 0 || (channels != 1 && channels != 2 && channels != 4) || levels == 0) return 0;
  element *= channels;
  for (level = 0; level < levels; ++level) {
    size_t w = width, h = height ? height : 1, d = depth ? depth : 1, level_bytes;
    if (level > 0) {
      w = level < 64 && (width >> level) ? width >> level : 1;
      h = level < 64 && (height >> level) ? height >> level : 1;
      if (!(flags & LG_CUDA_ARRAY3D_LAYERED)) d = level < 64 && (depth >> level) ? depth >> level : 1;
    }
    if (w > (size_t)-1 / h || w * h > (size_t)-1 / d || w * h * d > (size_t)-1 / element) return 0;
    level_bytes = w * h * d * element;
    if (total > (size_t)-1 - level_bytes) return 0;
    total += level_bytes;
    if (w == 1 && h == 1 && d == 1) break;
  }
  return total;
}

/* Bytes per element of a HIP channel description (bits per channel x, y, z, w), or 0 if the
 * description is not whole bytes. */
static inline size_t lg_channel_element_bytes(int x, int y, int z, int w) {
  int bits;
  if (x < 0 || y < 0 || z < 0 || w < 0) return 0;
  bits = x + y + z + w;
  return bits % 8 == 0 ? (size_t)(bits / 8) : 0;
}

#endif /* LEASEGUARD_ABI_LG_ARRAY_BYTES_H */
