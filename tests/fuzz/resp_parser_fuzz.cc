// libFuzzer target for the RESP parser. Beyond "never crash, never hang", it checks two
// properties on every input:
//   1. feeding the input whole and in pieces (sizes drawn from the input) gives the same
//      commands and the same error;
//   2. every parsed command, re-encoded as a RESP array, parses back to the same arguments.
// The same file is built without libFuzzer as a corpus replayer (SKYDB_FUZZ_REPLAY_MAIN).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "resp/parser.h"

namespace {

using skydb::resp::ParserLimits;
using skydb::resp::ParseStatus;
using skydb::resp::RespParser;

struct Parsed {
  std::vector<std::vector<std::string>> commands;
  std::string error;
};

ParserLimits FuzzLimits() {
  ParserLimits limits;
  limits.max_bulk_bytes = 4096;
  limits.max_multibulk_length = 64;
  limits.max_query_buffer = 16384;
  limits.max_inline_bytes = 1024;
  return limits;
}

// Feeds `input` in pieces whose sizes cycle through `sizes` (0 = the rest at once).
Parsed Parse(std::string_view input, const std::vector<size_t>& sizes) {
  RespParser parser(FuzzLimits());
  Parsed out;
  size_t turn = 0;
  while (!input.empty() && out.error.empty()) {
    size_t size = sizes.empty() ? 0 : sizes[turn++ % sizes.size()];
    if (size == 0 || size > input.size()) size = input.size();
    std::string_view piece = input.substr(0, size);
    input.remove_prefix(size);
    while (!piece.empty() && out.error.empty()) {
      ParseStatus status = parser.Feed(piece);
      if (status == ParseStatus::kCommand) out.commands.push_back(parser.args());
      if (status == ParseStatus::kError) out.error = parser.error();
    }
  }
  return out;
}

std::string Encode(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

void Check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "resp_parser_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte chooses the split pattern; the rest is the protocol stream.
  std::vector<size_t> sizes = {static_cast<size_t>(data[0] % 7) + 1, 1,
                               static_cast<size_t>(data[0] >> 3) + 1};
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  Parsed whole = Parse(input, {});
  Parsed split = Parse(input, sizes);
  Check(whole.commands == split.commands, "split input gave different commands");
  Check(whole.error == split.error, "split input gave a different error");
  for (const auto& command : whole.commands) {
    Check(!command.empty(), "empty command returned");
    Parsed again = Parse(Encode(command), {});
    Check(again.error.empty() && again.commands.size() == 1 && again.commands[0] == command,
          "re-encoded command did not parse back");
  }
  return 0;
}

#include "corpus_replay_main.h"  // main() for the corpus replayer build
