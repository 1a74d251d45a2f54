// leaseguard's own diagnostics on stderr: one line each, prefixed "leaseguard: ".
//
// Safe to call from hooks: formats into a stack buffer and writes with one write(2).
#pragma once

#include "options.h"

namespace leaseguard {

void set_log_level(LogLevel level) noexcept;
LogLevel log_level() noexcept;

void log_warning(const char *format, ...) noexcept __attribute__((format(printf, 1, 2)));
void log_info(const char *format, ...) noexcept __attribute__((format(printf, 1, 2)));
void log_debug(const char *format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace leaseguard
