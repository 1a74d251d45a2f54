// Module lookup with the dynamic loader's own tables (dladdr1, dl_iterate_phdr).
#include "module_map.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstring>

#include "code_generation.h"

namespace leaseguard {
namespace {

struct ObjectInfo {
  uintptr_t lookup = 0;
  uintptr_t base = 0;
  uintptr_t begin = 0;
  uintptr_t end = 0;
  std::string name;
  std::string build_id;
  bool found = false;
};

// Finds the loaded object whose PT_LOAD segments contain `lookup`.
int find_object(struct dl_phdr_info *info, size_t, void *argument) {
  auto *object = static_cast<ObjectInfo *>(argument);
  uintptr_t low = UINTPTR_MAX, high = 0;
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD) continue;
    uintptr_t start = info->dlpi_addr + header.p_vaddr;
    uintptr_t stop = start + header.p_memsz;
    if (start < low) low = start;
    if (stop > high) high = stop;
    if (object->lookup >= start && object->lookup < stop) contains = true;
  }
  if (!contains) return 0;
  object->found = true;
  object->base = info->dlpi_addr;
  object->begin = low;
  object->end = high;
  object->name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &header = info->dlpi_phdr[i];
    if (header.p_type != PT_NOTE) continue;
    const auto *note = reinterpret_cast<const unsigned char *>(info->dlpi_addr + header.p_vaddr);
    size_t position = 0;
    while (position + sizeof(ElfW(Nhdr)) <= header.p_memsz) {
      ElfW(Nhdr) entry;
      std::memcpy(&entry, note + position, sizeof entry);
      size_t name_at = position + sizeof entry;
      size_t desc_at = name_at + ((entry.n_namesz + 3) & ~size_t{3});
      size_t next = desc_at + ((entry.n_descsz + 3) & ~size_t{3});
      if (next > header.p_memsz) break;
      if (entry.n_type == NT_GNU_BUILD_ID && entry.n_namesz == 4 && std::memcmp(note + name_at, "GNU", 4) == 0) {
        object->build_id.assign(reinterpret_cast<const char *>(note + desc_at), entry.n_descsz);
        return 1;
      }
      position = next;
    }
  }
  return 1;
}

std::string executable_path() {
  char path[4096];
  ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return "";
  return std::string(path, static_cast<size_t>(length));
}

}  // namespace

CodeRange ModuleMap::module_range(uintptr_t address) {
  ObjectInfo object;
  object.lookup = address;
  dl_iterate_phdr(find_object, &object);
  if (!object.found) return {};
  return {object.begin, object.end};
}

void ModuleMap::forget_unloaded_locked() {
  const uint64_t now = code_generation();
  if (now == generation_) return;
  // A library was unloaded: another may now sit at its addresses. Modules are looked up
  // again (and get new ids and records); earlier records keep describing earlier stacks.
  modules_.clear();
  generation_ = now;
}

ModuleLocation ModuleMap::locate(uintptr_t address, journal::JournalWriter &journal) {
  {
    std::lock_guard lock(mutex_);
    forget_unloaded_locked();
    for (const Module &module : modules_)
      if (address >= module.begin && address < module.end) return {module.id, address - module.base};
  }
  // Outside our lock: dl_iterate_phdr takes the loader's lock, and a thread inside dlopen
  // (running a constructor that allocates) may be waiting for ours.
  ObjectInfo object;
  object.lookup = address;
  dl_iterate_phdr(find_object, &object);
  if (!object.found) return {journal::kNoModule, address};
  if (object.name.empty()) object.name = executable_path();

  std::lock_guard lock(mutex_);
  forget_unloaded_locked();
  for (const Module &module : modules_)
    if (module.base == object.base && module.begin == object.begin) return {module.id, address - module.base};
  Module module{object.base, object.begin, object.end, next_id_++};
  modules_.push_back(module);

  std::vector<unsigned char> payload(sizeof(journal::ModulePayload) + object.build_id.size() + object.name.size());
  journal::ModulePayload header{};
  header.module_id = module.id;
  header.base = object.base;
  header.build_id_bytes = static_cast<uint32_t>(object.build_id.size());
  header.path_bytes = static_cast<uint32_t>(object.name.size());
  size_t limit = journal::kMaxPayloadBytes - sizeof header - object.build_id.size();
  if (header.path_bytes > limit) header.path_bytes = static_cast<uint32_t>(limit);
  std::memcpy(payload.data(), &header, sizeof header);
  std::memcpy(payload.data() + sizeof header, object.build_id.data(), object.build_id.size());
  std::memcpy(payload.data() + sizeof header + object.build_id.size(), object.name.data(), header.path_bytes);
  journal.append(journal::RecordType::Module, payload.data(),
                 sizeof header + object.build_id.size() + header.path_bytes);
  return {module.id, address - module.base};
}

}  // namespace leaseguard
