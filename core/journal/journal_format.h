// The on-disk layout of a leaseguard journal: one file per process, append-only.
//
// The file is an array of 64-byte slots. A record takes 1..255 consecutive slots; each slot
// begins with a 32-bit tag and carries 60 payload bytes, so a record's payload is the
// concatenation of its slots' payload areas. The tag of a record's first slot is
//     kTagMagic | type << 8 | slot_count
// and is stored last, with release ordering, after the payload and the continuation slots
// (tag kContinuationTag) are written. A process killed at any instant therefore leaves each
// record either whole or with a zero first tag; a reader skips zero tags and orphaned
// continuation slots one slot at a time, and nothing that was committed is lost.
//
// Payload structs are little-endian with natural alignment and no hidden padding inside
// (sizes checked by static_assert below); they are copied in and out of slots with memcpy,
// never accessed in place, since a payload starts 4 bytes into its slot. Versioning:
// kVersion changes when a payload changes shape; new record types may be added without a
// version change (readers skip unknown types).
#pragma once

#include <cstddef>
#include <cstdint>

namespace leaseguard::journal {

inline constexpr size_t kSlotBytes = 64;
inline constexpr size_t kSlotPayloadBytes = 60;
inline constexpr size_t kMaxSlotsPerRecord = 255;
inline constexpr size_t kMaxPayloadBytes = kSlotPayloadBytes * kMaxSlotsPerRecord;
inline constexpr uint32_t kTagMagic = 0x4C470000u;  // "LG" in the top half
inline constexpr uint32_t kTagMagicMask = 0xFFFF0000u;
// 2: AllocPayload::freed_in_place; 3: ContextDestroyPayload::begun_at_slot; 4: HeaderPayload::flags
// (a compact journal's records of allocations freed in place may be recycled: Recycled);
// 5: a free in place says where in the journal it happened, no longer when
// (kFreedInPlaceMaxSlots), which a reader of version 4 would take for microseconds.
inline constexpr uint32_t kVersion = 5;
inline constexpr uint32_t kOldestReadableVersion = 1;
inline constexpr char kFileMagic[8] = {'L', 'G', 'J', 'O', 'U', 'R', 'N', 'L'};

enum class RecordType : uint8_t {
  Header = 1,
  Process = 2,
  Module = 3,
  Stack = 4,
  Alloc = 5,
  Free = 6,
  LeaseBegin = 7,
  LeaseEnd = 8,
  ContextDestroy = 9,
  ProcessEnd = 10,
  Continuation = 11,
  PoolDestroy = 12,
  Recycled = 13,
  JournalFull = 14,
  UnjournaledLeaks = 15,
  Signal = 16,            // a SIGTERM or SIGINT arrived (readers before it skip it as unknown)
  Reachability = 17,      // how live allocations were classified (core/reachability/reachability.h)
  AuthorityReclaim = 18,  // the node lease authority's reclaim request was done (after its frees)
  Check = 19,             // a live check's classes (ReachabilityPayload); ends nothing (readers before it skip it)
  Device = 20,            // a device's UUID, before the first allocation on it (readers before it skip it)
  Unused = 21,            // the slots after it were never written: a thread's run given up (journal_writer.h)
};

constexpr uint32_t make_tag(RecordType type, size_t slots) {
  return kTagMagic | (static_cast<uint32_t>(type) << 8) | static_cast<uint32_t>(slots);
}
inline constexpr uint32_t kContinuationTag = make_tag(RecordType::Continuation, 1);

// A slot's first word, decoded (the only decoding of it: the reader and the live view use
// these). 0 is a slot not committed; a word without the magic is not leaseguard's.
constexpr bool is_leaseguard_tag(uint32_t tag) { return (tag & kTagMagicMask) == kTagMagic; }
constexpr RecordType tag_type(uint32_t tag) { return static_cast<RecordType>((tag >> 8) & 0xFF); }
constexpr size_t tag_slots(uint32_t tag) { return tag & 0xFF; }
static_assert(tag_type(make_tag(RecordType::Alloc, 3)) == RecordType::Alloc &&
              tag_slots(make_tag(RecordType::Alloc, 3)) == 3);

constexpr size_t slots_for(size_t payload_bytes) {
  return payload_bytes == 0 ? 1 : (payload_bytes + kSlotPayloadBytes - 1) / kSlotPayloadBytes;
}

struct HeaderPayload {
  char magic[8];
  uint32_t version;
  uint32_t slot_bytes;
  int32_t pid;
  int32_t ppid;
  uint64_t start_realtime_ns;
  uint64_t start_monotonic_ns;
  uint32_t flags;  // kHeader*; 0 before version 4 (the slot's zero bytes)
  // The grain of allocation and free times (event_clock.h): an event's time is up to this
  // much before it happened. 0 if unknown, and in journals whose times were exact to a few
  // microseconds (before it was recorded: read as 0, the field was reserved and zero).
  uint32_t event_time_resolution_ns;
  // The process's PID namespace (core/base/pid_namespace.h): two processes with one pid and
  // one parent pid are one process (an exec'd image after the image it replaced) only where
  // this is the same too. 0 if unknown, and in journals before it was recorded (the slot's
  // zero bytes).
  uint64_t pid_namespace;
};

// A compact journal (LEASEGUARD_JOURNAL=compact): a thread whose last allocation was freed
// in place, with nothing written after its record and no barrier raised since, writes its next
// allocation over that record instead of after it. The overwritten allocation and its free
// are then gone from the journal, counted only in the thread's next Recycled record: a loop
// that allocates and frees keeps one slot instead of growing the file. Leaks are unaffected
// (a recycled allocation was freed before anything that reports); peaks and timelines
// leave out what was recycled.
inline constexpr uint32_t kHeaderCompact = 1;
// Each thread wrote its records into runs of slots of its own (journal_writer.h): a thread's
// records are in the order it made them, and records of different threads are in order to
// the event clock's tick (event_time_resolution_ns). A report says so where it shows a peak.
inline constexpr uint32_t kHeaderThreadRuns = 2;
// The tick that bounds a thread's run: time_ns >> kThreadRunTickShift (~4.2 ms).
inline constexpr unsigned kThreadRunTickShift = 22;

// A thread gave its run of slots up before it was full: the `slots` slots after this one were
// never written (and never will be). Readers skip them whole; readers before it skip the
// record as unknown and the zero slots one by one, as slots not committed.
struct UnusedPayload {
  uint32_t slots;
  uint32_t reserved;
};

// Followed by `command_bytes` bytes: the executable path, then each argument, each NUL-terminated.
struct ProcessPayload {
  int32_t pid;
  int32_t ppid;
  uint32_t argc;
  uint32_t command_bytes;
};

// Followed by `build_id_bytes` bytes of build-id, then `path_bytes` bytes of path (no NUL).
struct ModulePayload {
  uint32_t module_id;
  uint32_t path_bytes;
  uint64_t base;
  uint32_t build_id_bytes;
  uint32_t reserved;
};

inline constexpr uint32_t kNoModule = 0xFFFFFFFFu;

// Followed by `depth` frames.
struct StackPayload {
  uint32_t stack_id;
  uint32_t depth;
};
struct StackFrame {
  uint32_t module_id;  // kNoModule: `offset` is an absolute address in no known module
  uint32_t offset_low;
  uint32_t offset_high;
};

// Packed to 4-byte alignment so that it fills one slot's 60 payload bytes exactly.
struct __attribute__((packed, aligned(4))) AllocPayload {
  uint64_t id;
  uint64_t address;
  uint64_t bytes;
  uint64_t time_ns;  // CLOCK_MONOTONIC
  uint64_t context;
  uint32_t stack_id;
  uint32_t lease_id;
  uint32_t thread;
  uint16_t api;
  uint8_t kind;
  int8_t device;  // -1: unknown
  // 0, or the free of this allocation, stored into the committed record by the free
  // (kFreedInPlace*). Zero in version 1 journals, whose slots end with zero bytes here.
  uint32_t freed_in_place;
};

// A free that comes while no lease ended, no context and no pool was destroyed since its
// allocation was recorded (the replay could not tell it from a free at the allocation's
// place in the journal) is written into the allocation's record instead of a record of its
// own: the most common free then costs no journal space. Bits 31..25: the free's Api; bits
// 24..0: how many slots after the allocation's first slot the free happened: before the
// slot at that distance was taken (1: before any record after the allocation's), after
// every slot before it. Versions 2 to 4 held microseconds from the allocation to the free
// there instead.
//
// Why a place and not a time: the free then reads no clock and not the allocation's record,
// only the journal's slot counter, which its cache line usually holds already. A place is
// also exact where times from different threads are not: the replay applies the free
// between the very records it came between.
inline constexpr uint32_t kFreedInPlaceApiShift = 25;
inline constexpr uint32_t kFreedInPlaceMaxSlots = (1u << 25) - 1;  // also the bits' mask, in every version
inline constexpr uint32_t kFirstVersionWithFreesAtSlots = 5;
inline constexpr size_t kFreedInPlaceOffset = 56;  // in the payload: 4-byte aligned in its slot

enum FreeFlags : uint8_t {
  kFreeUnknown = 1,      // the address was not a live allocation leaseguard knew of
  kFreeImplicit = 2,     // the driver handed the address out again: the old record is gone
  kFreeReclaimed = 4,    // leaseguard freed it when its lease ended (status: the driver's)
  kFreeLate = 8,         // the program freed a reclaimed allocation: not passed to the driver
  kFreeMismatched = 16,  // with kFreeUnknown: a live value, but this entry point does not free
                         // its kind (the driver fails the call; the allocation stays live)
  kFreeOwnerDrop = 32,   // with kFreeLate: the C++ API's handle let go of memory leaseguard
                         // reclaimed (expected after a lease ends; not reported)
};

struct FreePayload {
  uint64_t id;  // 0 when unknown
  uint64_t address;
  uint64_t time_ns;
  uint32_t thread;
  uint16_t api;
  uint8_t flags;
  uint8_t reserved;
  uint32_t stack_id;
  int32_t status;  // kFreeReclaimed: the driver's status for leaseguard's free; kFreeMismatched:
                   // the entry point (Api) of the live allocation at the address, 0 if unknown
};

// Followed by `name_bytes` bytes of name.
struct LeaseBeginPayload {
  uint32_t lease_id;
  uint32_t name_bytes;
  uint64_t ttl_ms;
  uint64_t time_ns;
  uint8_t policy;
  uint8_t reserved[7];
};

// A termination signal's arrival. Leases go on: the program's handler may clean up and exit
// normally; with the default action the process dies next, and its journal, without a
// ProcessEnd, says what was live then.
struct SignalPayload {
  uint64_t time_ns;
  uint8_t signal;          // SIGTERM or SIGINT
  uint8_t default_action;  // 1: the program left the default action: it dies of it next
  uint8_t reserved[6];
};

// The GPU behind a device ordinal of this process: ordinals depend on each process's
// CUDA_VISIBLE_DEVICES, the UUID does not (the lease authority labels its series with it, as
// dcgm-exporter does). All zeros: the driver would not say.
struct DevicePayload {
  int32_t device;
  uint32_t reserved;
  uint8_t uuid[16];  // cuDeviceGetUuid's bytes
};

struct LeaseEndPayload {
  uint32_t lease_id;
  uint8_t ended_by;
  uint8_t signal;  // the termination signal that ended it (SIGTERM, SIGINT), or 0
  uint8_t reserved[2];
  uint64_t time_ns;
  uint64_t leaked_allocations;
  // Of those, the ones allocated while the journal could not take their records (it was
  // full): the replay cannot list them, only count them. Zero in journals from before these
  // fields, whose slots are zero past the fields above.
  uint64_t unjournaled_allocations;
  uint64_t unjournaled_bytes;
};

struct ContextDestroyPayload {
  uint64_t context;
  uint64_t time_ns;
  uint16_t api;
  uint16_t reserved;
  int32_t device;
  // The first slot past what had been written when the destroy began, before the driver was
  // asked. Allocations recorded from there on are not this context's even if they name its
  // handle: the driver may give a destroyed context's handle to a new context at once, and
  // another thread may allocate in it before the destroy is recorded. 0 (journal versions
  // 1 and 2): every earlier allocation of the context went with it.
  uint64_t begun_at_slot;
};

// A memory pool destroyed while allocations from it were outstanding: the driver destroys it
// for the program at once but releases it only when they are freed.
struct PoolDestroyPayload {
  uint64_t pool;
  uint64_t time_ns;
  uint64_t outstanding_bytes;
};

// How many allocations, and bytes, one thread's compact journal records recycled since its
// previous Recycled record. Written when the thread next has to append a new record, every
// kRecycledFlushEvery recycles, and at the process's end for the thread that ends it;
// recycles not yet written when a process is killed are lost, so the counts are lower bounds.
struct RecycledPayload {
  uint64_t allocations;
  uint64_t bytes;
  uint64_t time_ns;
  uint32_t thread;
  uint32_t reserved;
};
inline constexpr uint64_t kRecycledFlushEvery = 1u << 16;

// The journal's file could not grow (its file system is full, or 2^28 records were
// written): nothing but records that end things was written after this one. Written once.
struct JournalFullPayload {
  uint64_t time_ns;  // CLOCK_MONOTONIC
  int32_t error;     // the errno that stopped it (ENOSPC, EFBIG, ...)
  uint32_t reserved;
};

// Written after a ContextDestroy, once for each lease that lost allocations to it that were
// made while the journal was full: they have no Alloc records for the replay to find, so
// they are counted here (LeaseEndPayload counts them for lease endings). Other threads'
// records may come between the two: `context` says which destroy it belongs to.
struct UnjournaledLeaksPayload {
  uint64_t context;
  uint32_t lease_id;
  uint32_t reserved;
  uint64_t allocations;
  uint64_t bytes;
};

// The classes of allocations live when a lease was classified (at the process's end: before
// its static destructors run; see docs/how-it-works.md, "Reachability"). Followed by `count`
// entries, each an allocation id with its class (reachability::Class) in the top two bits.
// A classification takes as many records as it needs; an allocation in none is unchecked.
// A live check (leaseguard_check) journals the classes it found as Check records of the same
// shape, all with the check's time: they say what was lost at that moment and end nothing.
struct ReachabilityPayload {
  uint64_t time_ns;
  uint32_t count;
  uint32_t flags;  // kReachability*
};
inline constexpr uint32_t kReachabilityDeviceBounded = 1;  // some device memory was too large to read
inline constexpr uint32_t kReachabilityThreadsNotStopped =
    2;  // lost ones are unchecked: a thread could not be stopped or read
inline constexpr uint32_t kReachabilityHeapUntracked = 4;  // lost ones are unchecked: the host heap was not tracked
// Lost ones are unchecked: a Python interpreter's objects could not be read (its own allocator,
// or finalized before the classification).
inline constexpr uint32_t kReachabilityPythonObjectsUnread = 8;
// Some device memory could not be read back (the driver refused the copy: a context in an
// error state, memory it no longer has): read as holding no pointers, as bounded memory is.
inline constexpr uint32_t kReachabilityDeviceUnread = 16;
// The program's own mappings past the scan's bound (4 GiB in all) were read as holding no
// pointers.
inline constexpr uint32_t kReachabilityMappingsBounded = 32;
// Not classified: what the classification needed was more than half of the memory the process
// could still use (its cgroup's limit, the machine's free memory), or could not be mapped at all
// (its address-space limit). Every allocation is unchecked.
inline constexpr uint32_t kReachabilityMemoryShort = 64;
// Lost ones are unchecked: memory that may hold pointers could not be read without faulting it
// in (a page swapped out), or the process had more resident runs or mapped pages than the scan
// examines (interpose/scan/resident_pages.h).
inline constexpr uint32_t kReachabilityPagesUnread = 128;
inline constexpr int kReachabilityClassShift = 62;
// The entry's class (reachability::Class): 0 unchecked, 1 direct, 2 indirect, 3 reachable.
inline constexpr uint8_t kReachabilityClassReachable = 3;
inline constexpr size_t kReachabilityEntriesPerRecord = (kMaxPayloadBytes - 16) / 8;

// The node lease authority asked the process to give back what its leases own (its control
// page, tools/authority/protocol/authority_protocol.h): every open lease was ended, its leaks reclaimed whatever
// its policy, and this record follows their LeaseEnd and reclaimed Free records. The daemon
// reads the answer here; the freed bytes count device memory and handles the driver took back.
struct AuthorityReclaimPayload {
  uint64_t time_ns;
  uint64_t freed_bytes;
  uint64_t freed_allocations;
  uint64_t failed_allocations;  // the driver refused to free them; they stay allocated
  uint32_t leases;              // how many leases it ended
  uint32_t request;             // the control page's request word it answers
};

struct ProcessEndPayload {
  uint64_t time_ns;
  uint64_t dropped_records;
  // Which drivers were loaded when the process ended (kDriversKnown and kDriver* bits); 0 if
  // not known (a process ended by a signal, or a journal from before this field: the record
  // was 16 bytes then, and a reader takes a shorter one with this field 0).
  uint32_t drivers;
  uint32_t reserved;
};
inline constexpr uint32_t kDriverCuda = 1, kDriverHip = 2, kDriversKnown = 1u << 31;
inline constexpr size_t kProcessEndFirstBytes = 16;

static_assert(sizeof(HeaderPayload) <= kSlotPayloadBytes && sizeof(RecycledPayload) == 32);
static_assert(sizeof(AllocPayload) <= kSlotPayloadBytes, "an allocation must fit one slot");
static_assert(sizeof(UnusedPayload) == 8);
static_assert(sizeof(HeaderPayload) == 56 && sizeof(ProcessPayload) == 16 && sizeof(ModulePayload) == 24 &&
                  sizeof(StackPayload) == 8 && sizeof(LeaseBeginPayload) == 32 && sizeof(LeaseEndPayload) == 40 &&
                  sizeof(AllocPayload) == 60,
              "payload layouts are part of the journal format");
static_assert(offsetof(AllocPayload, freed_in_place) == kFreedInPlaceOffset && (4 + kFreedInPlaceOffset) % 4 == 0);
static_assert(sizeof(FreePayload) == 40 && sizeof(FreePayload) <= kSlotPayloadBytes);
static_assert(sizeof(LeaseEndPayload) <= kSlotPayloadBytes);
static_assert(sizeof(SignalPayload) == 16);
static_assert(sizeof(ProcessEndPayload) == 24 && offsetof(ProcessEndPayload, drivers) == kProcessEndFirstBytes);
static_assert(sizeof(ContextDestroyPayload) == 32 && sizeof(ContextDestroyPayload) <= kSlotPayloadBytes);
static_assert(sizeof(UnjournaledLeaksPayload) == 32);
static_assert(sizeof(StackFrame) == 12);
static_assert(sizeof(PoolDestroyPayload) == 24);
static_assert(sizeof(JournalFullPayload) == 16);
static_assert(sizeof(ReachabilityPayload) == 16);
static_assert(sizeof(AuthorityReclaimPayload) == 40);

}  // namespace leaseguard::journal
