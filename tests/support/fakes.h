// Fakes for the OS seams: an in-memory file system, a manual clock and a scripted process
// runner. Used by unit tests; never by the daemon. Not thread-safe unless stated.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "skydb/env.h"

namespace skydb::testing {

// An in-memory tree. Parent directories are created implicitly by AddFile/AddDir.
class FakeFileSystem final : public FileSystem {
 public:
  void AddFile(const std::string& path, const std::string& contents, uint32_t mode = 0644);
  void AddExecutable(const std::string& path, const std::string& contents = "") {
    AddFile(path, contents, 0755);
  }
  void AddDir(const std::string& path, uint32_t mode = 0755);
  void SetOwner(const std::string& path, uid_t uid, gid_t gid);
  // Makes `path` resolve to `target` in RealPath (and Stat follows it).
  void AddSymlink(const std::string& path, const std::string& target);

  Result<std::string> ReadFile(const std::string& path) const override;
  Result<FileInfo> Stat(const std::string& path) const override;
  Result<std::vector<std::string>> ListDir(const std::string& path) const override;
  bool IsExecutable(const std::string& path) const override;
  Result<std::string> RealPath(const std::string& path) const override;
  Status WriteFileAtomic(const std::string& path, const std::string& contents,
                         uint32_t mode) override;
  Status MakeDir(const std::string& path, uint32_t mode) override;
  Status Chmod(const std::string& path, uint32_t mode) override;
  Status Rename(const std::string& from, const std::string& to) override;

 private:
  struct Node {
    FileInfo info;
    std::string contents;
  };
  std::string Resolve(const std::string& path) const;
  void EnsureParents(const std::string& path);

  std::map<std::string, Node> nodes_;
  std::map<std::string, std::string> symlinks_;
};

// Time moves only when a test (or SleepFor) advances it. Safe to use from several threads.
class FakeClock final : public Clock {
 public:
  TimePoint Now() const override { return TimePoint(Duration(now_ns_.load())); }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            Duration(now_ns_.load() + wall_offset_ns_)));
  }
  void SleepFor(Duration d) override {
    now_ns_ += d.count();
    slept_ns_ += d.count();
  }
  void Advance(Duration d) { now_ns_ += d.count(); }
  Duration TotalSlept() const { return Duration(slept_ns_.load()); }

 private:
  static constexpr int64_t kStart = 1000LL * 3600 * 1000000000;  // 1000 h after the epoch
  // Wall time starts at 2026-01-01 so Unix-millisecond deadlines look real.
  static constexpr int64_t wall_offset_ns_ = 1767225600LL * 1000000000 - kStart;
  std::atomic<int64_t> now_ns_{kStart};
  std::atomic<int64_t> slept_ns_{0};
};

// Answers commands from a script keyed by the joined argv ("a b c"); unknown commands fail to
// start with NotFound. Records every command it was asked to run.
class FakeProcessRunner final : public ProcessRunner {
 public:
  void Answer(const std::string& command_line, CommandOutput output) {
    answers_[command_line] = std::move(output);
  }
  Result<CommandOutput> Run(const CommandSpec& spec) override;
  const std::vector<std::string>& calls() const { return calls_; }

 private:
  std::map<std::string, CommandOutput> answers_;
  std::vector<std::string> calls_;
};

}  // namespace skydb::testing
