"""A Python service that never exits by itself (tests/integration/live_check_test.cpp), as
tests/victims/leaky_service.c, with device pointers kept as Python ints (ctypes `.value`), as
ctypes and cuda-python code keeps them. It reads commands on stdin, one a line:

  serve N   its four worker threads serve N requests in all; it answers "served TOTAL"
  quit C    it frees its cache, answers "quit: EINTR E", and exits with status C

Each request allocates 4096 bytes; every tenth fails and its error path drops the int (the
leak); the others go to a bounded cache of 16 (a dict), whose oldest entry is freed. An
interrupted system call surfaces in Python as a retried call (PEP 475), never to the program:
E counts the InterruptedErrors that reach it anyway. It prints its pid first.
"""
import collections
import ctypes
import os
import queue
import sys
import threading

cuda = ctypes.CDLL("libcuda.so.1")
WORKERS, CACHE_SIZE, BUFFER_BYTES, DROP_ONE_IN = 4, 16, 4096, 10


def check(status):
    if status != 0:
        sys.exit(f"CUDA error {status}")


check(cuda.cuInit(0))
device = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(device), 0))
context = ctypes.c_void_p()
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
check(cuda.cuCtxSetCurrent(context))

cache = collections.OrderedDict()
cache_lock = threading.Lock()
requests = queue.Queue()
served = queue.Queue()
interrupted = 0
next_request = 0


def handle_request(number):
    pointer = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(BUFFER_BYTES)))
    address = pointer.value
    del pointer
    if number % DROP_ONE_IN == DROP_ONE_IN - 1:
        return  # the error path forgets to free it
    with cache_lock:
        cache[number] = address
        if len(cache) > CACHE_SIZE:
            _, oldest = cache.popitem(last=False)
            check(cuda.cuMemFree_v2(ctypes.c_uint64(oldest)))


def worker():
    global interrupted
    check(cuda.cuCtxSetCurrent(context))
    while True:
        try:
            number = requests.get()
        except InterruptedError:
            interrupted += 1
            continue
        if number is None:
            return
        handle_request(number)
        served.put(number)


threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
for thread in threads:
    thread.start()
print(f"pid {os.getpid()}", flush=True)
total = 0
for line in sys.stdin:
    words = line.split()
    if len(words) == 2 and words[0] == "serve":
        count = int(words[1])
        for _ in range(count):
            requests.put(next_request)
            next_request += 1
        for _ in range(count):
            served.get()
        total += count
        print(f"served {total}", flush=True)
    elif len(words) == 2 and words[0] == "quit":
        for _ in threads:
            requests.put(None)
        for thread in threads:
            thread.join()
        for address in cache.values():
            check(cuda.cuMemFree_v2(ctypes.c_uint64(address)))
        print(f"quit: EINTR {interrupted}", flush=True)
        sys.exit(int(words[1]))
sys.exit(2)
