"""A Python service that never exits by itself (tests/integration/live_check_test.cpp), as
tests/victims/leaky_service.c, with device pointers kept as Python ints (ctypes `.value`), as
ctypes and cuda-python code keeps them. It reads commands on stdin, one a line:

  serve N   its four worker threads serve N requests in all; it answers "served TOTAL"
  quit C    it frees its cache, answers "quit: EINTR E", and exits with status C

Each request allocates 4096 bytes; every tenth fails and its error path drops the int (the
leak); the others go to a bounded cache of 16 (a dict), whose oldest entry is freed. Between
requests every worker blocks in read(2) on a pipe, and "served" is answered only once each
is there (/proc/self/task/TID/syscall): a check then finds no thread of it inside the
interpreter. An interrupted system call is retried by Python itself (PEP 475), so E counts
the InterruptedErrors that reach the program anyway. It prints its pid first.
"""
import ctypes
import os
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

cache = {}
lock = threading.Lock()
requests_r, requests_w = os.pipe()  # a byte per request ("r"), or "q" for a worker to leave
served_r, served_w = os.pipe()  # a byte per request served
interrupted = 0
next_request = 0


def handle_request():
    global next_request
    with lock:
        number = next_request
        next_request += 1
    pointer = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(BUFFER_BYTES)))
    address = pointer.value
    del pointer
    if number % DROP_ONE_IN == DROP_ONE_IN - 1:
        return  # the error path forgets to free it
    with lock:
        cache[number] = address
        if len(cache) > CACHE_SIZE:
            check(cuda.cuMemFree_v2(ctypes.c_uint64(cache.pop(min(cache)))))


def worker():
    global interrupted
    check(cuda.cuCtxSetCurrent(context))
    while True:
        try:
            byte = os.read(requests_r, 1)
        except InterruptedError:
            interrupted += 1
            continue
        if byte != b"r":
            return
        handle_request()
        os.write(served_w, b"s")


def workers_waiting(threads):
    """Each worker is blocked in read(2) on the request pipe."""
    for thread in threads:
        with open(f"/proc/self/task/{thread.native_id}/syscall") as status:
            fields = status.read().split()
        if len(fields) < 2 or fields[0] != "0" or int(fields[1], 16) != requests_r:
            return False
    return True


threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
for thread in threads:
    thread.start()
print(f"pid {os.getpid()}", flush=True)
total = 0
for line in sys.stdin:
    words = line.split()
    if len(words) == 2 and words[0] == "serve":
        count = int(words[1])
        os.write(requests_w, b"r" * count)
        done = 0
        while done < count:
            done += len(os.read(served_r, count - done))
        while not workers_waiting(threads):
            os.sched_yield()
        total += count
        print(f"served {total}", flush=True)
    elif len(words) == 2 and words[0] == "quit":
        os.write(requests_w, b"q" * WORKERS)
        for thread in threads:
            thread.join()
        for address in cache.values():
            check(cuda.cuMemFree_v2(ctypes.c_uint64(address)))
        print(f"quit: EINTR {interrupted}", flush=True)
        sys.exit(int(words[1]))
sys.exit(2)
