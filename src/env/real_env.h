// RealEnv: the Env of a real process — the real file system, clock, process runner and
// launcher, host operations, systemd notifier and PostgreSQL probe — built once, by main.cc
// or by the embedding API, and owned for the life of the process.
// Thread-safety: the objects are safe for concurrent use.
#pragma once

#include <memory>

#include "skydb/env.h"

namespace skydb {

class RealEnv {
 public:
  RealEnv();
  ~RealEnv();
  RealEnv(const RealEnv&) = delete;
  RealEnv& operator=(const RealEnv&) = delete;

  Env& env() { return env_; }

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
  Env env_;
};

}  // namespace skydb
