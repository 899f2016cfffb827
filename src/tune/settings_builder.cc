#include "tune/settings_builder.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "tune/pg_values.h"

namespace skydb::tune_internal {
namespace {

std::string FormatNumber(double number) {
  if (number == std::floor(number)) return std::to_string(static_cast<long long>(number));
  std::string text = std::to_string(number);  // "0.900000": trim the trailing zeros
  text.erase(text.find_last_not_of('0') + 1);
  return text;
}

Setting MakeSetting(const std::string& name, std::string value, std::string derivation) {
  Setting setting;
  setting.name = name;
  setting.value = std::move(value);
  setting.derivation = std::move(derivation);
  return setting;
}

// Far above any real setting, far below what the conversions below can hold.
constexpr double kMaxEffectiveBytes = 1e18;
constexpr double kMaxEffectiveCount = 1e9;

}  // namespace

uint64_t SettingsBuilder::Effective::Bytes() const {
  return static_cast<uint64_t>(std::clamp(number, 0.0, kMaxEffectiveBytes));
}

int SettingsBuilder::Effective::Count() const {
  return static_cast<int>(std::clamp(number, -kMaxEffectiveCount, kMaxEffectiveCount));
}

SettingsBuilder::SettingsBuilder(Profile profile, const std::map<std::string, std::string>& pins)
    : pins_(pins) {
  settings_.profile = profile;
}

void SettingsBuilder::AddMemory(const std::string& name, uint64_t bytes, std::string derivation,
                                double unitless_bytes) {
  derived_numbers_[name] = static_cast<double>(bytes);
  Setting setting = MakeSetting(name, FormatMemory(bytes), std::move(derivation));
  setting.numeric = static_cast<double>(bytes);
  Add(std::move(setting), unitless_bytes);
}

void SettingsBuilder::AddNumber(const std::string& name, double number, std::string derivation) {
  derived_numbers_[name] = number;
  Setting setting = MakeSetting(name, FormatNumber(number), std::move(derivation));
  setting.numeric = number;
  Add(std::move(setting), 1.0);
}

void SettingsBuilder::AddWord(const std::string& name, std::string value, std::string derivation) {
  Add(MakeSetting(name, std::move(value), std::move(derivation)), std::nullopt);
}

void SettingsBuilder::AddOwn(const std::string& name, int count, std::string derivation) {
  own_names_.insert(name);
  Setting setting = MakeSetting(name, std::to_string(count), std::move(derivation));
  setting.postgres = false;
  setting.numeric = count;
  settings_.items.push_back(std::move(setting));
}

void SettingsBuilder::Add(Setting setting, std::optional<double> unitless_bytes) {
  auto pin = pins_.find(setting.name);
  if (pin != pins_.end()) {
    setting.derived_value = std::move(setting.value);
    setting.value = pin->second;
    setting.derivation = "pinned in config";
    setting.pinned = true;
    setting.numeric.reset();
    if (unitless_bytes) setting.numeric = ParseSettingNumber(pin->second, *unitless_bytes);
    pins_.erase(pin);
  }
  settings_.items.push_back(std::move(setting));
}

SettingsBuilder::Effective SettingsBuilder::EffectiveValue(const std::string& name) const {
  const Setting* setting = settings_.Find(name);
  if (setting == nullptr) return {};
  if (setting->pinned && setting->numeric) {
    return {*setting->numeric, "pinned " + setting->value};
  }
  auto derived = derived_numbers_.find(name);
  double number = derived == derived_numbers_.end() ? 0 : derived->second;
  return {number, setting->pinned ? setting->derived_value : setting->value};
}

void SettingsBuilder::AddUnderivedPins() {
  for (auto& [name, value] : pins_) {
    if (own_names_.count(name) != 0) {
      settings_.warnings.push_back("ignored [postgres.settings] " + name +
                                   ": it is skydb's own value, not a PostgreSQL setting");
    } else if (!IsValidSettingName(name)) {
      settings_.warnings.emplace_back(
          "ignored a [postgres.settings] key that is not a valid PostgreSQL setting name");
    } else {
      Setting setting = MakeSetting(name, value, "pinned in config");
      setting.pinned = true;
      setting.numeric = ParseSettingNumber(value, 1.0);
      settings_.items.push_back(std::move(setting));
    }
  }
  pins_.clear();
}

// A pinned max_connections (or reserve) may starve skydb's own pools: say so.
void SettingsBuilder::CheckConnections() {
  Pools pools = settings_.pools;
  pools.reserved = EffectiveValue("superuser_reserved_connections").Count();
  auto max_connections = EffectiveValue("max_connections");
  if (ConnectionsCoverPools(max_connections.Count(), pools)) return;
  int needed = pools.app_pool + 3 * pools.aux_pool + pools.store_pool + kConnectionHeadroom;
  settings_.warnings.push_back(
      "max_connections " + max_connections.label + " minus " + std::to_string(pools.reserved) +
      " reserved is below the " + std::to_string(needed) +
      " connections skydb and its app need (app_pool " + std::to_string(pools.app_pool) +
      " + 3 x aux_pool " + std::to_string(pools.aux_pool) + " + store_pool " +
      std::to_string(pools.store_pool) + " + headroom " + std::to_string(kConnectionHeadroom) +
      ")");
}

Settings SettingsBuilder::Finish(const Pools& pools) && {
  settings_.pools = pools;
  AddUnderivedPins();
  CheckConnections();
  return std::move(settings_);
}

}  // namespace skydb::tune_internal
