"""Device memory held by a Python program's objects (tests/integration/reachability_test.cpp).

Allocates through the driver API with ctypes, keeping each pointer in an object of its own,
as Python's GPU libraries do: 1111 bytes held by a module global, 2222 by an object in a
dict, 3333 dropped. Then it ends normally: the interpreter frees its objects as it
finalizes, before C's exit handlers run.
"""
import ctypes
import sys

cuda = ctypes.CDLL("libcuda.so.1")


def check(status):
    if status != 0:
        sys.exit(f"CUDA error {status}")


class Buffer:
    def __init__(self, size):
        self.pointer = ctypes.c_uint64()
        check(cuda.cuMemAlloc_v2(ctypes.byref(self.pointer), ctypes.c_size_t(size)))


check(cuda.cuInit(0))
device = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(device), 0))
context = ctypes.c_void_p()
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
check(cuda.cuCtxSetCurrent(context))

workspace = Buffer(1111)
cache = {"weights": Buffer(2222)}
Buffer(3333)
