#include "lease_state.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace leaseguard::authority {
namespace {

constexpr std::array<std::string_view, 6> kStageNames = {"live", "reclaim", "sigterm", "sigkill", "verify", "done"};
constexpr std::array<std::string_view, 4> kEndReasonNames = {"none", "expiry", "end", "exit"};

// Takes the next space-separated word off `rest`.
std::string_view word(std::string_view &rest) {
  const size_t space = rest.find(' ');
  const std::string_view taken = rest.substr(0, space);
  rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  return taken;
}

template <typename Number>
bool number(std::string_view text, Number &value) {
  if (text.empty()) return false;
  auto [end, problem] = std::from_chars(text.data(), text.data() + text.size(), value);
  return problem == std::errc() && end == text.data() + text.size();
}

template <size_t N>
std::optional<size_t> index_of(const std::array<std::string_view, N> &names, std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name) return i;
  return std::nullopt;
}

}  // namespace

std::string_view stage_name(Stage stage) noexcept {
  const auto index = static_cast<size_t>(stage);
  return index < kStageNames.size() ? kStageNames[index] : "unknown";
}

std::optional<Stage> stage_from_name(std::string_view name) noexcept {
  if (auto index = index_of(kStageNames, name)) return static_cast<Stage>(*index);
  return std::nullopt;
}

std::string_view end_reason_name(EndReason reason) noexcept {
  const auto index = static_cast<size_t>(reason);
  return index < kEndReasonNames.size() ? kEndReasonNames[index] : "unknown";
}

namespace {

// One event each: `rest` is what follows "key="; false (the state unchanged) if malformed.
bool apply_granted(LeaseState &state, std::string_view rest) {
  LeaseState fresh;
  uint64_t owner_uid = 0;
  const std::string_view id_text = word(rest), lease_name = word(rest), owner_text = word(rest), grace = word(rest),
                         teardown_text = word(rest);
  const std::optional<Teardown> parsed_teardown = teardown_from_name(teardown_text);
  if (!number(id_text, fresh.id) || fresh.id == 0 || !valid_lease_name(lease_name) || !number(owner_text, owner_uid) ||
      owner_uid > UINT32_MAX || !number(grace, fresh.grace_ms) || !parsed_teardown || !rest.empty())
    return false;
  fresh.name = lease_name;
  fresh.owner = static_cast<uid_t>(owner_uid);
  fresh.teardown = *parsed_teardown;
  state = std::move(fresh);
  return true;
}

bool apply_holder(LeaseState &state, std::string_view rest) {
  pid_t pid = 0;
  uint64_t start = 0;
  if (!number(word(rest), pid) || pid < 0 || !number(rest, start)) return false;
  state.holder_pid = pid;
  state.holder_start_time = start;
  return true;
}

bool apply_deadline(LeaseState &state, std::string_view rest) {
  uint64_t deadline = 0;
  if (!number(rest, deadline)) return false;
  state.deadline_ms = deadline;
  return true;
}

bool apply_process(LeaseState &state, std::string_view rest) {
  LeaseProcess process;
  const std::string_view pid = word(rest), start = word(rest);
  if (!number(pid, process.pid) || process.pid <= 0 || !number(start, process.start_time) ||
      (rest != "-" && (rest.empty() || rest[0] != '/')))
    return false;
  process.journal = rest;
  for (LeaseProcess &known : state.processes)
    if (known.pid == process.pid && known.start_time == process.start_time) {
      if (process.journal != "-") known.journal = process.journal;  // registered again (an exec)
      return true;
    }
  state.processes.push_back(std::move(process));
  return true;
}

bool apply_ending(LeaseState &state, std::string_view rest) {
  const std::optional<size_t> reason = index_of(kEndReasonNames, word(rest));
  uint64_t when = 0;
  if (!reason || *reason == 0 || !number(rest, when) || state.ended_by != EndReason::None) return false;
  state.ended_by = static_cast<EndReason>(*reason);
  state.ending_ms = when;
  return true;
}

bool apply_stage(LeaseState &state, std::string_view rest) {
  const std::optional<Stage> next = stage_from_name(word(rest));
  uint64_t when = 0;
  if (!next || !number(rest, when) || state.ended_by == EndReason::None || *next <= state.stage) return false;
  state.stage = *next;
  state.stages.push_back({*next, when});
  return true;
}

bool apply_freed(LeaseState &state, std::string_view rest) {
  pid_t pid = 0;
  uint64_t bytes = 0;
  if (!number(word(rest), pid) || !number(rest, bytes)) return false;
  for (LeaseProcess &process : state.processes)
    if (process.pid == pid) process.freed_bytes += bytes;
  return true;
}

bool apply_held(LeaseState &state, std::string_view rest) {
  pid_t pid = 0;
  int device = 0;
  uint64_t bytes = 0;
  if (!number(word(rest), pid) || !number(word(rest), device) || !number(rest, bytes)) return false;
  for (LeaseProcess &process : state.processes)
    if (process.pid == pid) process.held[device] = bytes;
  return true;
}

bool apply_verified(LeaseState &state, std::string_view rest) {
  if (rest.empty()) return false;
  state.verification = rest;
  return true;
}

bool apply_survived(LeaseState &state, std::string_view rest) {
  ProcessName process;
  if (!number(word(rest), process.pid) || process.pid <= 0 || !number(rest, process.start_time)) return false;
  if (std::find(state.survived.begin(), state.survived.end(), process) == state.survived.end())
    state.survived.push_back(process);
  return true;
}

bool apply_ended(LeaseState &state, std::string_view rest) {
  uint64_t when = 0;
  if (!number(rest, when) || state.ended_by == EndReason::None) return false;
  state.stage = Stage::Done;
  state.ended_ms = when;
  return true;
}

using EventApplier = bool (*)(LeaseState &, std::string_view);

// Every event but the grant follows a grant.
constexpr std::pair<std::string_view, EventApplier> kEventsAfterGrant[] = {
    {"holder", apply_holder}, {"deadline", apply_deadline}, {"process", apply_process}, {"ending", apply_ending},
    {"stage", apply_stage},   {"freed", apply_freed},       {"held", apply_held},       {"verified", apply_verified},
    {"ended", apply_ended},   {"survived", apply_survived},
};

}  // namespace

bool LeaseState::apply(std::string_view line) {
  const size_t equals = line.find('=');
  if (equals == std::string_view::npos) return false;
  const std::string_view key = line.substr(0, equals);
  const std::string_view rest = line.substr(equals + 1);
  if (key == "granted") return apply_granted(*this, rest);
  if (id == 0) return false;
  for (const auto &[event, applier] : kEventsAfterGrant)
    if (key == event) return applier(*this, rest);
  return false;
}

std::string granted_line(uint64_t id, std::string_view name, uid_t owner, uint64_t grace_ms, Teardown teardown) {
  return "granted=" + std::to_string(id) + " " + std::string(name) + " " + std::to_string(owner) + " " +
         std::to_string(grace_ms) + " " + std::string(teardown_name(teardown));
}
std::string holder_line(pid_t pid, uint64_t start_time) {
  return "holder=" + std::to_string(pid) + " " + std::to_string(start_time);
}
std::string deadline_line(uint64_t deadline_ms) { return "deadline=" + std::to_string(deadline_ms); }
std::string process_line(pid_t pid, uint64_t start_time, std::string_view journal) {
  return "process=" + std::to_string(pid) + " " + std::to_string(start_time) + " " + std::string(journal);
}
std::string ending_line(EndReason reason, uint64_t now_ms) {
  return "ending=" + std::string(end_reason_name(reason)) + " " + std::to_string(now_ms);
}
std::string stage_line(Stage stage, uint64_t now_ms) {
  return "stage=" + std::string(stage_name(stage)) + " " + std::to_string(now_ms);
}
std::string freed_line(pid_t pid, uint64_t bytes) {
  return "freed=" + std::to_string(pid) + " " + std::to_string(bytes);
}
std::string held_line(pid_t pid, int device, uint64_t bytes) {
  return "held=" + std::to_string(pid) + " " + std::to_string(device) + " " + std::to_string(bytes);
}
std::string survived_line(const ProcessName &process) {
  return "survived=" + std::to_string(process.pid) + " " + std::to_string(process.start_time);
}
std::string verified_line(std::string_view result) { return "verified=" + std::string(result); }
std::string ended_line(uint64_t now_ms) { return "ended=" + std::to_string(now_ms); }

uint64_t boottime_ms() noexcept {
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000 + static_cast<uint64_t>(now.tv_nsec) / 1'000'000;
}

}  // namespace leaseguard::authority
