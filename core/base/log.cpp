// Implementation of leaseguard's stderr diagnostics.
#include "log.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "lg_assert.h"

namespace leaseguard {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};

void emit(const char *format, va_list args) noexcept {
  char line[1024];
  int prefix = std::snprintf(line, sizeof line, "leaseguard: ");
  int body = std::vsnprintf(line + prefix, sizeof line - static_cast<size_t>(prefix) - 1, format, args);
  if (body < 0) return;
  size_t length = static_cast<size_t>(prefix) + static_cast<size_t>(body);
  if (length > sizeof line - 2) length = sizeof line - 2;
  line[length++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, length);
  (void)ignored;
}

}  // namespace

void set_log_level(LogLevel level) noexcept { g_level.store(static_cast<int>(level)); }
LogLevel log_level() noexcept { return static_cast<LogLevel>(g_level.load()); }

// Warnings are shown at the default level and hidden only by LEASEGUARD_LOG=quiet.
void log_warning(const char *format, ...) noexcept {
  if (g_level.load() < static_cast<int>(LogLevel::Info)) return;
  va_list args;
  va_start(args, format);
  emit(format, args);
  va_end(args);
}

void log_info(const char *format, ...) noexcept {
  if (g_level.load() < static_cast<int>(LogLevel::Info)) return;
  va_list args;
  va_start(args, format);
  emit(format, args);
  va_end(args);
}

void log_debug(const char *format, ...) noexcept {
  if (g_level.load() < static_cast<int>(LogLevel::Debug)) return;
  va_list args;
  va_start(args, format);
  emit(format, args);
  va_end(args);
}

}  // namespace leaseguard

namespace leaseguard::detail {

void assertion_failed(const char *condition, const char *file, int line) noexcept {
  char text[512];
  const int length =
      std::snprintf(text, sizeof text, "leaseguard: internal check failed: %s (%s:%d)\n", condition, file, line);
  if (length > 0)
    (void)!write(STDERR_FILENO, text, static_cast<size_t>(length) < sizeof text ? length : sizeof text - 1);
  std::abort();
}

}  // namespace leaseguard::detail
