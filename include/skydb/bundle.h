// PostgreSQL bundles: stage a relocatable copy of an installation into one archive, verify it,
// and extract it under DIR/runtime for binary discovery (skydb/discovery.h, source 2).
//
// A bundle is a zstd-compressed ustar archive whose first entry is manifest.json (version,
// architecture, glibc baseline, source, every file's SHA-256, mode and size). The files keep
// the installation's relative layout (lib/postgresql/15/bin, share/postgresql/15, …) so
// PostgreSQL finds its share and lib directories relative to its own binary; the shared
// libraries they need beyond glibc sit in skydb-libs/, found through an $ORIGIN RUNPATH.
// docs/bundles.md describes the format and the operator's view.
//
// Thread-safety: free functions and value types; a BundleSlot is used by one thread.
// Failure: every function returns a Result whose message names the file and the fix.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/discovery.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb {

struct BundleFile {
  std::string path;    // relative to the bundle root: "lib/postgresql/15/bin/postgres"
  std::string sha256;  // lowercase hex
  uint32_t mode = 0;   // permission bits: 0755 or 0644
  uint64_t size = 0;
};

struct BundleManifest {
  int format = 1;
  std::string pg_version;       // "15.20"
  std::string pg_version_line;  // what `postgres --version` printed
  std::string arch;             // "x86_64", "aarch64"
  std::string glibc_baseline;   // newest GLIBC_x.y symbol version any file needs: "2.34"
  std::string source;           // the --from directory it was staged from
  std::string bin_dir;          // relative: "lib/postgresql/15/bin"
  // Where the binaries read time zone data when the build uses the system's
  // (--with-system-tzdata); a compiled-in absolute path the bundle cannot relocate.
  std::string system_tzdata;
  std::vector<BundleFile> files;  // sorted by path
  uint64_t total_size = 0;        // sum of file sizes, uncompressed
};

std::string RenderManifest(const BundleManifest& manifest);
Result<BundleManifest> ParseManifest(std::string_view json);
// The manifest's own consistency: sorted unique safe relative paths, total_size, bin_dir.
Status CheckManifest(const BundleManifest& manifest);

// Whether this host can run the bundle: its architecture is `host_arch` (uname -m) and its glibc
// at least the manifest's baseline. VersionMismatch names both and what to do.
Status CheckHostCompatible(const BundleManifest& manifest, const std::string& host_arch,
                           const std::string& host_glibc);

// One archive's bytes, embedded in the binary or read from a file.
class BundleArchive {
 public:
  static BundleArchive Embedded(std::span<const unsigned char> bytes);
  static Result<BundleArchive> FromFile(const FileSystem& fs, const std::string& path);

  std::string_view bytes() const { return bytes_; }
  const std::string& name() const { return name_; }      // "embedded bundle" or the file path
  const std::string& Sha256() const { return sha256_; }  // of the whole archive, hex

 private:
  std::shared_ptr<const std::string> storage_;
  std::string_view bytes_;
  std::string name_;
  std::string sha256_;  // computed once, when the archive is opened
};

// The bundle compiled into this binary (cmake -DSKYDB_EMBED_BUNDLE=FILE); empty otherwise.
std::span<const unsigned char> EmbeddedBundle();

struct StageProgress {
  std::string phase;  // "collect", "patch", "hash", "archive"
  size_t done = 0;
  size_t total = 0;
};

struct StageOptions {
  // An installation (DIR/bin/postgres and DIR/bin/pg_config), or a relocatable tree without
  // pg_config: bin/ (postgres, initdb, pg_ctl at least), lib/ and share/.
  std::string from;
  std::string out;  // the archive to write (replaced atomically)
  int zstd_level = 12;
  std::function<void(const StageProgress&)> progress;  // optional
  // Optional: receives each module left out because a library it needs is not on this host
  // ("plperl.so (needs libperl.so.5.26)"); it could not be loaded here either.
  std::vector<std::string>* left_out = nullptr;
};

// Collects, patches (patchelf --set-rpath), hashes and archives. Deterministic: the same
// installation gives a byte-identical archive.
// Staging happens in a temporary directory beside `out`, removed afterwards; patchelf must be
// on PATH. NotFound names a missing binary, library or tool and what to install.
class BundleOutput;
Result<BundleManifest> StageBundle(const StageOptions& options, const FileSystem& fs,
                                   BundleOutput& out, ProcessRunner& runner);

// The first entry only; cheap. Fails when it is missing or malformed.
Result<BundleManifest> ReadBundleManifest(const BundleArchive& archive);
// Reads every entry and checks it against the manifest (presence, size, mode, SHA-256).
Result<BundleManifest> VerifyBundle(const BundleArchive& archive);

// Where extraction writes; the real one works on disk, tests inject failures.
class BundleOutput {
 public:
  virtual ~BundleOutput() = default;
  virtual Status MakeDirs(const std::string& path, uint32_t mode) = 0;  // like mkdir -p
  virtual Result<std::string> MakeTempDir(const std::string& parent, const std::string& prefix) = 0;
  virtual Status WriteFile(const std::string& path, std::string_view data, uint32_t mode) = 0;
  // A file that lives only while staging (removed afterwards): not fsynced.
  virtual Status WriteScratchFile(const std::string& path, std::string_view data, uint32_t mode) {
    return WriteFile(path, data, mode);
  }
  virtual Status SyncDir(const std::string& path) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status RemoveTree(const std::string& path) = 0;
  // An exclusive flock on `path` held until the returned object is destroyed.
  virtual Result<std::shared_ptr<void>> Lock(const std::string& path,
                                             std::chrono::milliseconds timeout) = 0;
};
std::unique_ptr<BundleOutput> NewRealBundleOutput();

struct Extraction {
  std::string dir;         // runtime/<version>-<sha12>
  std::string bin_dir;     // dir + "/" + manifest.bin_dir
  bool extracted = false;  // false: a verified earlier extraction was reused
  BundleManifest manifest;
};

// The directory name under runtime/: "<version>-<first 12 hex of the archive's SHA-256>".
std::string ExtractionName(const BundleManifest& manifest, const std::string& archive_sha256);

// Extracts into runtime_dir/<version>-<sha12> via a temporary directory in runtime_dir, under
// an flock on runtime_dir/.extract.lock, after CheckHostCompatible for this host. Reuses an earlier
// extraction whose files are all present with the manifest's sizes and modes. On any failure
// nothing partial remains.
Result<Extraction> ExtractBundle(const BundleArchive& archive, const std::string& runtime_dir,
                                 BundleOutput& out, const FileSystem& fs);

// The bundle discovery source, reading through `fs`. `out` null (doctor): verifies and
// reports, extracts nothing, and offers an earlier extraction if one is intact; otherwise it
// extracts through `out`. Both are borrowed and must outlive the slot.
std::unique_ptr<BundleSlot> NewBundleSlot(BundleArchive archive, std::string runtime_dir,
                                          FileSystem& fs, BundleOutput* out);

// The bundle discovery should use: postgres.bundle when configured (an operator's explicit
// choice, so it wins), else the embedded one, else none (nullptr).
Result<std::unique_ptr<BundleSlot>> BundleSlotFor(const std::string& configured_file,
                                                  const std::string& data_dir, FileSystem& fs,
                                                  BundleOutput* out);

}  // namespace skydb
