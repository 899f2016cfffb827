// libFuzzer target for the configuration file loader: the bytes are a TOML file handed to
// LoadConfigWithOrigins exactly as `skydb --config FILE` hands it (read, parsed by toml++,
// walked against the key table, checked, merged). Beyond "never crash, never hang", it checks:
//   1. a failure is one message that names the file;
//   2. a file that loads renders (`skydb config show`) to TOML that loads back to the same
//      Config, with secrets redacted in the rendering.
// The file lives in a memfd, so a run writes nothing to disk. The same file is built without
// libFuzzer as a corpus replayer (SKYDB_FUZZ_REPLAY_MAIN).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "skydb/config.h"

namespace {

void Check(bool condition, const char* what, const std::string& detail) {
  if (!condition) {
    std::fprintf(stderr, "config_file_fuzz: property violated: %s\n%s\n", what, detail.c_str());
    std::abort();
  }
}

// One memfd reused for every input; its /proc path is the "file" the loader reads.
class MemFile {
 public:
  MemFile() : fd_(::memfd_create("skydb-config-fuzz", MFD_CLOEXEC)) {
    Check(fd_ >= 0, "memfd_create failed", "");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& Write(const char* data, size_t size) {
    Check(::ftruncate(fd_, 0) == 0, "ftruncate failed", "");
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      Check(n > 0, "pwrite failed", "");
      done += static_cast<size_t>(n);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

skydb::Result<skydb::LoadedConfig> Load(MemFile& file, const std::string& text) {
  skydb::ConfigInputs inputs;
  inputs.file = file.Write(text.data(), text.size());
  return skydb::LoadConfigWithOrigins(inputs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static MemFile file;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto loaded = Load(file, text);
  if (!loaded.ok()) {
    const std::string& message = loaded.error().message;
    Check(message.rfind("/proc/self/fd/", 0) == 0, "error does not name the file", message);
    return 0;
  }
  std::string shown = skydb::RenderConfigToml(*loaded);
  const std::string& secret = loaded->config.resp.requirepass;
  if (!secret.empty()) {
    Check(shown.find("requirepass = \"<redacted>\"") != std::string::npos,
          "requirepass was not redacted", shown);
  }
  auto again = Load(file, shown);
  Check(again.ok(), "config show output did not load back",
        (again.ok() ? "" : again.error().message) + "\n" + shown);
  skydb::Config reloaded = again->config;
  if (!secret.empty()) reloaded.resp.requirepass = secret;  // rendered as "<redacted>"
  Check(reloaded == loaded->config, "config show output loaded back to a different Config", shown);
  return 0;
}

#include "corpus_replay_main.h"  // main() for the corpus replayer build
