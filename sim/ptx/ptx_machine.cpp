// The interpreter's scheduler: blocks on host threads, warps in turn, lanes in lockstep
// (ptx_machine.h says how), and the instructions that change where lanes are.
#include "ptx_machine.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "ptx_printf.h"
#include "ptx_warp.h"

namespace leaseguard::sim::ptx {

void Warp::raise(LaunchStatus status, const Instruction &instruction, const char *what, uint64_t address) {
  if (fault != LaunchStatus::Done) return;
  fault = status;
  char text[160];
  std::snprintf(text, sizeof text, "%s 0x%" PRIx64 " at `", what, address);
  fault_message = text + instruction.text + "` (line " + std::to_string(instruction.line) + " of its PTX)";
}

unsigned char *Warp::reach(uint64_t address, uint32_t bytes, Space space, unsigned lane,
                           const Instruction &instruction) {
  if ((address & (std::min<uint32_t>(bytes, 16) - 1)) != 0) {
    raise(LaunchStatus::MisalignedAddress, instruction, "misaligned address", address);
    return nullptr;
  }
  switch (space) {
    case Space::Shared:
      if (address <= shared_size && bytes <= shared_size - address) return shared + address;
      break;
    case Space::Local:
      if (address <= frame_size && bytes <= frame_size - address) return frames + lane * frame_size + address;
      break;
    case Space::Param:
      if (address <= arguments_size && bytes <= arguments_size - address)
        return const_cast<unsigned char *>(arguments) + address;
      break;
    case Space::Generic: {
      const uint64_t shared_base = reinterpret_cast<uint64_t>(shared);
      if (address >= shared_base && address - shared_base + bytes <= shared_size)
        return shared + (address - shared_base);
      const uint64_t frames_base = reinterpret_cast<uint64_t>(block_frames);
      if (address >= frames_base && address - frames_base + bytes <= block_frames_size)
        return block_frames + (address - frames_base);
      const uint64_t arguments_base = reinterpret_cast<uint64_t>(arguments);
      if (address >= arguments_base && address - arguments_base + bytes <= arguments_size)
        return const_cast<unsigned char *>(arguments) + (address - arguments_base);
      [[fallthrough]];
    }
    case Space::Global:
    case Space::Const:
      if (ranges->contains(address, bytes)) return reinterpret_cast<unsigned char *>(address);
      break;
  }
  raise(LaunchStatus::IllegalAddress, instruction, "illegal address", address);
  return nullptr;
}

namespace {

uint32_t align_up(uint32_t value, uint32_t alignment) { return (value + alignment - 1) / alignment * alignment; }

struct Shared {
  const Program &program;
  const Kernel &kernel;
  const LaunchShape &shape;
  const std::vector<unsigned char> &arguments;
  const LaunchSymbols &symbols;
  const DeviceMemory &memory;
  uint64_t blocks = 0;
  unsigned workers = 1;
  std::atomic<uint64_t> next_block{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  LaunchOutcome outcome;
  uint64_t fault_block = UINT64_MAX;
  std::map<uint64_t, std::string> printed;  // by block
  std::atomic<uint64_t> executed{0};        // thread-instructions, summed as workers end
};

// One host thread's blocks: its warps and buffers are made once and reused block after block.
class Worker {
 public:
  Worker(Shared &shared, unsigned index) : s_(shared), index_(index) {}
  void run();

 private:
  void run_blocks();
  void start_block(uint64_t block);
  void fill_registers(Warp &warp, bool whole);
  bool run_warp(Warp &warp);  // false: the block faulted
  enum class Step { Continue, Regroup, Fault };
  Step execute(Warp &warp, uint32_t &pc, uint32_t &group);
  void arrive_reducing(Warp &warp, const Instruction &in, uint32_t lanes);
  void release_barrier();
  uint32_t guard_lanes(const Warp &warp, const Instruction &in, uint32_t group) const;
  void call(Warp &warp, const Instruction &in, uint32_t lanes, uint32_t pc);
  void ret(Warp &warp, uint32_t lanes);
  void trap(Warp &warp, const Instruction &in, uint32_t lanes);

  Shared &s_;
  unsigned index_;
  uint64_t executed_ = 0;  // thread-instructions (each lane of each instruction it ran)
  uint32_t block_threads_ = 0;
  uint32_t ctaid_[3] = {};
  std::vector<Warp> warps_;
  std::vector<uint64_t> registers_;
  std::vector<unsigned char> shared_memory_;
  std::vector<unsigned char> frames_;
  RangeCache ranges_;
  std::string printed_;
  // bar.red: what the block's arriving lanes said.
  uint32_t reduce_count_ = 0;
  bool reduce_all_ = true, reduce_any_ = false;
  std::vector<uint32_t> reduce_register_;  // a warp's bar.red destination
  std::vector<uint8_t> reduce_mode_;
};

void Worker::fill_registers(Warp &warp, bool whole) {
  const Program &program = s_.program;
  const LaunchShape &shape = s_.shape;
  const uint32_t dynamic_offset = align_up(s_.kernel.static_shared, s_.kernel.dynamic_shared_alignment);
  for (const FilledRegister &f : program.filled) {
    const bool per_block = f.fill == Fill::CtaidX || f.fill == Fill::CtaidY || f.fill == Fill::CtaidZ;
    if (!whole && !per_block) continue;
    for (unsigned l = 0; l < kWarpSize; ++l) {
      const uint32_t t = warp.index * kWarpSize + l;
      uint64_t v = 0;
      switch (f.fill) {
        case Fill::Constant: v = f.value; break;
        case Fill::GlobalSymbol: v = s_.symbols.globals[f.value]; break;
        case Fill::TidX: v = t % shape.block[0]; break;
        case Fill::TidY: v = (t / shape.block[0]) % shape.block[1]; break;
        case Fill::TidZ: v = t / (shape.block[0] * shape.block[1]); break;
        case Fill::NtidX: v = shape.block[0]; break;
        case Fill::NtidY: v = shape.block[1]; break;
        case Fill::NtidZ: v = shape.block[2]; break;
        case Fill::CtaidX: v = ctaid_[0]; break;
        case Fill::CtaidY: v = ctaid_[1]; break;
        case Fill::CtaidZ: v = ctaid_[2]; break;
        case Fill::NctaidX: v = shape.grid[0]; break;
        case Fill::NctaidY: v = shape.grid[1]; break;
        case Fill::NctaidZ: v = shape.grid[2]; break;
        case Fill::LaneId: v = l; break;
        case Fill::WarpId: v = warp.index; break;
        case Fill::NWarpId: v = warps_.size(); break;
        case Fill::SmId: v = index_; break;
        case Fill::NSmId: v = s_.workers; break;
        case Fill::GridId: v = 1; break;
        case Fill::LanemaskEq: v = 1u << l; break;
        case Fill::LanemaskLt: v = (1u << l) - 1; break;
        case Fill::LanemaskLe: v = l == 31 ? UINT32_MAX : (2u << l) - 1; break;
        case Fill::LanemaskGt: v = l == 31 ? 0 : ~((2u << l) - 1); break;
        case Fill::LanemaskGe: v = ~((1u << l) - 1); break;
        case Fill::DynamicSharedSize: v = shape.dynamic_shared; break;
        case Fill::TotalSharedSize: v = dynamic_offset + shape.dynamic_shared; break;
        case Fill::DynamicSharedOffset: v = dynamic_offset; break;
      }
      warp.slot(f.index, l) = v;
    }
  }
}

void Worker::start_block(uint64_t block) {
  const LaunchShape &shape = s_.shape;
  ctaid_[0] = static_cast<uint32_t>(block % shape.grid[0]);
  ctaid_[1] = static_cast<uint32_t>((block / shape.grid[0]) % shape.grid[1]);
  ctaid_[2] = static_cast<uint32_t>(block / (uint64_t{shape.grid[0]} * shape.grid[1]));
  const bool first = warps_.empty();
  if (first) {
    block_threads_ = shape.block[0] * shape.block[1] * shape.block[2];
    const uint32_t warps = (block_threads_ + kWarpSize - 1) / kWarpSize;
    warps_.resize(warps);
    registers_.assign(size_t{warps} * s_.program.registers * kWarpSize, 0);
    const uint32_t shared_size =
        align_up(s_.kernel.static_shared, s_.kernel.dynamic_shared_alignment) + shape.dynamic_shared;
    shared_memory_.assign(std::max<uint32_t>(shared_size, 1), 0);
    frames_.assign(std::max<size_t>(size_t{warps} * kWarpSize * s_.kernel.frame_size, 1), 0);
    ranges_.memory = &s_.memory;
    reduce_register_.assign(warps, kNoRegister);
    reduce_mode_.assign(warps, 0);
    for (uint32_t w = 0; w < warps; ++w) {
      Warp &warp = warps_[w];
      warp.index = w;
      warp.registers = registers_.data() + size_t{w} * s_.program.registers * kWarpSize;
      warp.shared = shared_memory_.data();
      warp.shared_size = shared_size;
      warp.frame_size = s_.kernel.frame_size;
      warp.frames = frames_.data() + size_t{w} * kWarpSize * s_.kernel.frame_size;
      warp.block_frames = frames_.data();
      warp.block_frames_size = uint64_t{block_threads_} * s_.kernel.frame_size;
      warp.arguments = s_.arguments.data();
      warp.arguments_size = static_cast<uint32_t>(s_.arguments.size());
      warp.ranges = &ranges_;
      warp.printed = &printed_;
    }
  }
  for (Warp &warp : warps_) {
    const uint32_t first_thread = warp.index * kWarpSize;
    const uint32_t count = std::min<uint32_t>(kWarpSize, block_threads_ - first_thread);
    warp.live = count == kWarpSize ? UINT32_MAX : (1u << count) - 1;
    warp.waiting = 0;
    warp.carry = 0;
    std::fill(std::begin(warp.pc), std::end(warp.pc), s_.kernel.entry);
    std::fill(std::begin(warp.depth), std::end(warp.depth), 0);
    fill_registers(warp, first);
  }
  std::fill(reduce_register_.begin(), reduce_register_.end(), kNoRegister);
  reduce_count_ = 0, reduce_all_ = true, reduce_any_ = false;
}

uint32_t Worker::guard_lanes(const Warp &warp, const Instruction &in, uint32_t group) const {
  if (in.guard == kNoRegister) return group;
  uint32_t lanes = 0;
  each_lane(group, [&](unsigned l) {
    if ((warp.get<uint8_t>(in.guard, l) != 0) != in.guard_negated) lanes |= 1u << l;
  });
  return lanes;
}

void Worker::call(Warp &warp, const Instruction &in, uint32_t lanes, uint32_t pc) {
  each_lane(lanes, [&](unsigned l) {
    if (warp.depth[l] >= kMaxCallDepth) {
      warp.raise(LaunchStatus::IllegalAddress, in, "call stack overflow at depth", warp.depth[l]);
      return;
    }
    warp.returns[l][warp.depth[l]++] = pc + 1;
    unsigned char *frame = warp.frames + l * warp.frame_size;
    for (uint32_t i = 0; i < in.frame_end; ++i)
      std::memmove(frame + in.copies[i].to, frame + in.copies[i].from, in.copies[i].bytes);
    warp.pc[l] = in.target;
  });
}

// Lanes leave a device function: each goes back past its call, with the call's results.
void Worker::ret(Warp &warp, uint32_t lanes) {
  const std::vector<Instruction> &code = s_.program.code;
  each_lane(lanes, [&](unsigned l) {
    if (warp.depth[l] == 0) {  // a return from the kernel itself
      warp.live &= ~(1u << l);
      return;
    }
    const uint32_t back = warp.returns[l][--warp.depth[l]];
    const Instruction &site = code[back - 1];
    unsigned char *frame = warp.frames + l * warp.frame_size;
    for (size_t i = site.frame_end; i < site.copies.size(); ++i)
      std::memmove(frame + site.copies[i].to, frame + site.copies[i].from, site.copies[i].bytes);
    warp.pc[l] = back;
  });
}

void Worker::trap(Warp &warp, const Instruction &in, uint32_t lanes) {
  if (in.mode == 1) {  // __assertfail(message, file, line, function, size)
    const unsigned l = static_cast<unsigned>(__builtin_ctz(lanes));
    const unsigned char *frame = warp.frames + l * warp.frame_size;
    uint64_t message = 0, file = 0, function = 0;
    uint32_t line = 0;
    std::memcpy(&message, frame + in.copies[0].from, sizeof message);
    std::memcpy(&file, frame + in.copies[0].to, sizeof file);
    std::memcpy(&line, frame + in.copies[1].from, sizeof line);
    std::memcpy(&function, frame + in.copies[1].to, sizeof function);
    const uint32_t t = warp.index * kWarpSize + l;
    const LaunchShape &shape = s_.shape;
    char where[160];
    std::snprintf(where, sizeof where, "block: [%u,%u,%u], thread: [%u,%u,%u]", ctaid_[0], ctaid_[1], ctaid_[2],
                  t % shape.block[0], (t / shape.block[0]) % shape.block[1], t / (shape.block[0] * shape.block[1]));
    const std::string text = device_string(warp, file) + ":" + std::to_string(line) + ": " +
                             device_string(warp, function) + ": " + where + " Assertion `" +
                             device_string(warp, message) + "` failed.\n";
    std::fputs(text.c_str(), stderr);
    warp.fault = LaunchStatus::Assert;
    warp.fault_message = "a device assertion failed";
    return;
  }
  warp.fault = LaunchStatus::Trap;
  warp.fault_message = "trap at `" + in.text + "` (line " + std::to_string(in.line) + " of its PTX)";
}

// Runs the group's instruction at `pc` and moves `pc` on. Regroup: the lanes went apart (or
// some ended, called, returned or arrived at a barrier): their pcs are in warp.pc and the
// scheduler picks the next group; Fault: the block stops.
Worker::Step Worker::execute(Warp &warp, uint32_t &pc, uint32_t &group) {
  const Instruction &in = s_.program.code[pc];
  const uint32_t lanes = guard_lanes(warp, in, group);
  executed_ += static_cast<uint64_t>(__builtin_popcount(group));
  switch (in.control) {
    case Control::None:
      if (lanes != 0) in.run(warp, in, lanes);
      ++pc;
      return warp.fault != LaunchStatus::Done ? Step::Fault : Step::Continue;
    case Control::Branch:
      if (lanes == group) {
        pc = in.target;
        return Step::Continue;
      }
      if (lanes == 0) {
        ++pc;
        return Step::Continue;
      }
      each_lane(lanes, [&](unsigned l) { warp.pc[l] = in.target; });
      each_lane(group & ~lanes, [&](unsigned l) { warp.pc[l] = pc + 1; });
      group = 0;
      return Step::Regroup;
    case Control::Exit:
      warp.live &= ~lanes;
      group &= ~lanes;
      ++pc;
      return group == 0 ? Step::Regroup : Step::Continue;
    case Control::Call:
    case Control::Return:
      if (lanes != 0 && in.control == Control::Call) call(warp, in, lanes, pc);
      if (lanes != 0 && in.control == Control::Return) ret(warp, lanes);
      each_lane(group & ~lanes, [&](unsigned l) { warp.pc[l] = pc + 1; });
      group = 0;
      return warp.fault != LaunchStatus::Done ? Step::Fault : Step::Regroup;
    case Control::Barrier:
    case Control::BarrierReduce:
      if (in.control == Control::BarrierReduce) arrive_reducing(warp, in, lanes);
      warp.waiting |= lanes;
      ++pc;
      return Step::Regroup;
    case Control::Trap:
      if (lanes == 0) {
        ++pc;
        return Step::Continue;
      }
      trap(warp, in, lanes);
      return Step::Fault;
    case Control::Printf:
      if (lanes != 0) print(warp, in, lanes);
      ++pc;
      return warp.fault != LaunchStatus::Done ? Step::Fault : Step::Continue;
  }
  return Step::Fault;
}

void Worker::arrive_reducing(Warp &warp, const Instruction &in, uint32_t lanes) {
  const bool negated = (in.mode & 16) != 0;
  each_lane(lanes, [&](unsigned l) {
    const bool p = (warp.get<uint8_t>(in.c, l) != 0) != negated;
    reduce_count_ += p ? 1 : 0;
    reduce_all_ = reduce_all_ && p;
    reduce_any_ = reduce_any_ || p;
  });
  reduce_register_[warp.index] = in.d[0];
  reduce_mode_[warp.index] = in.mode & 15;
}

// Runs the warp until every lane has ended or waits at the barrier. The lanes at the lowest
// instruction index run together; a group runs on while no other lane waits where it goes.
bool Worker::run_warp(Warp &warp) {
  for (;;) {
    const uint32_t ready = warp.live & ~warp.waiting;
    if (ready == 0) return true;
    uint32_t pc = UINT32_MAX;
    each_lane(ready, [&](unsigned l) { pc = std::min(pc, warp.pc[l]); });
    uint32_t group = 0, next_other = UINT32_MAX;
    each_lane(ready, [&](unsigned l) {
      if (warp.pc[l] == pc) group |= 1u << l;
      else next_other = std::min(next_other, warp.pc[l]);
    });
    for (;;) {
      if (s_.stop.load(std::memory_order_relaxed)) return false;
      const Step step = execute(warp, pc, group);
      if (step == Step::Fault) return false;
      if (step == Step::Regroup || pc >= next_other) {
        each_lane(group, [&](unsigned l) { warp.pc[l] = pc; });
        break;
      }
    }
  }
}

void Worker::release_barrier() {
  for (Warp &warp : warps_) {
    if (reduce_register_[warp.index] != kNoRegister) {
      const uint32_t r = reduce_register_[warp.index];
      const uint8_t mode = reduce_mode_[warp.index];
      each_lane(warp.waiting, [&](unsigned l) {
        if (mode == 0) warp.put<uint32_t>(r, l, reduce_count_);
        else warp.put<uint8_t>(r, l, mode == 1 ? reduce_all_ : reduce_any_);
      });
    }
    warp.waiting = 0;
  }
  std::fill(reduce_register_.begin(), reduce_register_.end(), kNoRegister);
  reduce_count_ = 0, reduce_all_ = true, reduce_any_ = false;
}

void Worker::run() {
  run_blocks();
  s_.executed.fetch_add(executed_, std::memory_order_relaxed);
}

void Worker::run_blocks() {
  for (;;) {
    if (s_.stop.load(std::memory_order_relaxed)) return;
    const uint64_t block = s_.next_block.fetch_add(1, std::memory_order_relaxed);
    if (block >= s_.blocks) return;
    start_block(block);
    printed_.clear();
    for (;;) {
      bool faulted = false;
      for (Warp &warp : warps_) {
        if (!run_warp(warp)) {
          faulted = warp.fault != LaunchStatus::Done;
          if (faulted) {
            std::lock_guard lock(s_.mutex);
            if (block < s_.fault_block) {
              s_.fault_block = block;
              s_.outcome.status = warp.fault;
              s_.outcome.message = warp.fault_message;
            }
            warp.fault = LaunchStatus::Done;
          }
          s_.stop.store(true, std::memory_order_relaxed);
          break;
        }
      }
      if (s_.stop.load(std::memory_order_relaxed)) break;
      bool waiting = false, live = false;
      for (const Warp &warp : warps_) {
        waiting = waiting || warp.waiting != 0;
        live = live || warp.live != 0;
      }
      if (!live) break;
      if (waiting) release_barrier();
    }
    if (!printed_.empty()) {
      std::lock_guard lock(s_.mutex);
      s_.printed[block] = printed_;
    }
  }
}

// The cores this process may run on (its affinity: a container's cpuset, taskset), which
// std::thread::hardware_concurrency does not see.
unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

LaunchOutcome run_kernel(const Program &program, const Kernel &kernel, const LaunchShape &shape,
                         const std::vector<unsigned char> &arguments, const LaunchSymbols &symbols,
                         const DeviceMemory &memory) {
  Shared shared{program, kernel, shape, arguments, symbols, memory};
  shared.blocks = uint64_t{shape.grid[0]} * shape.grid[1] * shape.grid[2];
  const unsigned cores = usable_cores();
  shared.workers = static_cast<unsigned>(std::min<uint64_t>(shared.blocks, cores));
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned i = 0; i < shared.workers; ++i) workers.push_back(std::make_unique<Worker>(shared, i));
  // The helper threads take none of the program's signals: they are born with every signal
  // blocked (the launching thread's mask is back as it was before any block runs). A thread
  // the system will not give (RLIMIT_NPROC, memory) leaves its blocks to the others.
  std::vector<std::thread> threads;
  sigset_t every, before;
  sigfillset(&every);
  pthread_sigmask(SIG_SETMASK, &every, &before);
  for (unsigned i = 1; i < shared.workers; ++i) {
    try {
      threads.emplace_back([&, i] { workers[i]->run(); });
    } catch (const std::system_error &) {
      break;
    }
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  workers[0]->run();
  for (std::thread &thread : threads) thread.join();
  for (const auto &[block, text] : shared.printed) shared.outcome.printed += text;
  shared.outcome.thread_instructions = shared.executed.load(std::memory_order_relaxed);
  shared.outcome.workers = static_cast<unsigned>(threads.size()) + 1;
  return shared.outcome;
}

}  // namespace leaseguard::sim::ptx
