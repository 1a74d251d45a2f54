"""Device pointers kept as Python ints, as ctypes and cuda-python code keeps them
(tests/integration/reachability_test.cpp): each allocation's address is taken out of its
ctypes object as an `int` (`.value`) and the ctypes object dropped. Held: 1301 bytes in a
dict, 1302 in a list, 1303 in a tuple, 1304 in an object's attribute, 1305 in a closure, 1306
in a module global. Dropped: 3301 (its int discarded). CPython keeps an int's value in 30-bit
digits, never as the pointer-sized word a conservative scan looks for.
"""
import ctypes
import sys

cuda = ctypes.CDLL("libcuda.so.1")


def check(status):
    if status != 0:
        sys.exit(f"CUDA error {status}")


def allocate(size):
    pointer = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size)))
    return pointer.value  # an int; the ctypes object goes


class Holder:
    def __init__(self, address):
        self.address = address


def make_closure(address):
    return lambda: address


check(cuda.cuInit(0))
device = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(device), 0))
context = ctypes.c_void_p()
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
check(cuda.cuCtxSetCurrent(context))

in_dict = {"weights": allocate(1301)}
in_list = [allocate(1302)]
in_tuple = (allocate(1303), "kept")
in_object = Holder(allocate(1304))
in_closure = make_closure(allocate(1305))
in_global = allocate(1306)
allocate(3301)
