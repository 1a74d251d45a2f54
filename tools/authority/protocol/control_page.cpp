#include "control_page.h"

namespace leaseguard::authority {
namespace {

// STEM + `to` for STEM + `from`; empty where the path does not end in `from` after a stem.
std::string replace_suffix(std::string_view path, std::string_view from, std::string_view to) {
  if (path.size() <= from.size() || path.substr(path.size() - from.size()) != from) return "";
  return std::string(path.substr(0, path.size() - from.size())) + std::string(to);
}

}  // namespace

std::string control_path_of_journal(std::string_view journal_path) {
  return replace_suffix(journal_path, ".journal", ".control");
}

std::string journal_path_of_control(std::string_view control_path) {
  return replace_suffix(control_path, ".control", ".journal");
}

}  // namespace leaseguard::authority
