// main() for a libFuzzer harness built without libFuzzer: replays the files named on the command
// line (a committed corpus) through LLVMFuzzerTestOneInput, so every normal build checks the
// harness's properties. Include it at the end of a harness; it defines main() only when
// SKYDB_FUZZ_REPLAY_MAIN is defined.
#pragma once

#ifdef SKYDB_FUZZ_REPLAY_MAIN
#include <cstdint>
#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::FILE* file = std::fopen(argv[i], "rb");
    if (file == nullptr) {
      std::fprintf(stderr, "cannot open %s\n", argv[i]);
      return 1;
    }
    std::string bytes;
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) bytes.append(buffer, n);
    std::fclose(file);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %d inputs\n", argc - 1);
  return 0;
}
#endif
