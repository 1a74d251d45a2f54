// libFuzzer target: what a client of the lease authority can send it (a request, parsed
// exactly as the daemon parses one) and what its state directory can hold (lease lines), and
// the answers a client reads back. A request that parses must come back the same through
// format_request: the daemon and its clients then agree on every message either accepts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "authority_protocol.h"
#include "lease_state.h"

using namespace leaseguard::authority;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view message(reinterpret_cast<const char *>(data), size);
  Request request;
  std::string error;
  if (parse_request(message, request, error)) {
    const std::string again = format_request(request);
    Request reparsed;
    if (!parse_request(again, reparsed, error) || format_request(reparsed) != again) std::abort();
  } else if (error.empty() || error.find('\n') != std::string::npos) {
    std::abort();  // every refusal is one line for the client
  }
  Answer answer;
  if (parse_answer(message, answer, error)) {
    Answer reparsed;
    if (!parse_answer(format_answer(answer), reparsed, error) || reparsed.fields != answer.fields) std::abort();
  }
  // The same bytes as a lease file's lines.
  LeaseState lease;
  size_t start = 0;
  while (start <= message.size()) {
    const size_t newline = message.find('\n', start);
    lease.apply(message.substr(start, newline == std::string_view::npos ? std::string_view::npos : newline - start));
    if (newline == std::string_view::npos) break;
    start = newline + 1;
  }
  return 0;
}
