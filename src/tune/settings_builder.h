// SettingsBuilder: collects derived settings in render order and lets the operator's pins
// ([postgres.settings]) win. Internal to src/tune. Not thread-safe; one per Tune() call.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "skydb/tune.h"

namespace skydb::tune_internal {

class SettingsBuilder {
 public:
  SettingsBuilder(Profile profile, const std::map<std::string, std::string>& pins);

  // A derived memory setting. `unitless_bytes` is PostgreSQL's unit for a bare number in this
  // setting (8kB for shared_buffers, kB for work_mem), used to read a pinned value back.
  void AddMemory(const std::string& name, uint64_t bytes, std::string derivation,
                 double unitless_bytes);
  // A derived count (connections) or plain number ("0.9").
  void AddNumber(const std::string& name, double number, std::string derivation);
  // A derived word or literal with no numeric meaning: "on", "try", "''", "0700".
  void AddWord(const std::string& name, std::string value, std::string derivation);
  // skydb's own value: not rendered into postgresql.conf and not pinnable from
  // [postgres.settings] (a pin of that name is reported as a warning instead).
  void AddOwn(const std::string& name, int count, std::string derivation);

  // What a later derivation builds on: the pin when it parses as a number, else the derived
  // value. `label` is "296MB" or "pinned 1GB", for derivation text.
  struct Effective {
    double number = 0;
    std::string label;

    // The number clamped into range, so a pin like "1e30" cannot overflow a conversion.
    uint64_t Bytes() const;
    int Count() const;
  };
  Effective EffectiveValue(const std::string& name) const;

  // Appends pins tuning does not derive, records warnings, and returns the settings.
  Settings Finish(const Pools& pools) &&;

 private:
  void Add(Setting setting, std::optional<double> unitless_bytes);
  void AddUnderivedPins();
  void CheckConnections();

  Settings settings_;
  std::map<std::string, std::string> pins_;  // pins not yet matched to a derived setting
  std::map<std::string, double> derived_numbers_;
  std::set<std::string> own_names_;
};

}  // namespace skydb::tune_internal
