#include "embed/log_sinks.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <string_view>

#include "skydb/log.h"

namespace skydb::embed {
namespace {

LogLevel LevelOf(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return LogLevel::kTrace;
    case spdlog::level::debug:
      return LogLevel::kDebug;
    case spdlog::level::info:
      return LogLevel::kInfo;
    case spdlog::level::warn:
      return LogLevel::kWarn;
    default:
      return LogLevel::kError;
  }
}

class ForwardingSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ForwardingSink(LogSink forward) : sink_(std::move(forward)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    sink_(LevelOf(msg.level), std::string_view(msg.payload.data(), msg.payload.size()));
  }
  void flush_() override {}

 private:
  LogSink sink_;
};

constexpr char kSinkLogger[] = "skydb-app-sink";

class LastErrorSink final : public spdlog::sinks::base_sink<std::mutex>, public LastError {
 public:
  std::string Get() const override {
    std::lock_guard<std::mutex> lock(last_mu_);
    return last_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (msg.level < spdlog::level::err) return;
    std::lock_guard<std::mutex> lock(last_mu_);
    last_.assign(msg.payload.data(), msg.payload.size());
  }
  void flush_() override {}

 private:
  mutable std::mutex last_mu_;  // base_sink's mutex is not taken by Get
  std::string last_;
};

}  // namespace

Result<std::shared_ptr<LastError>> InstallLogging(const Config& config, const LogSink& sink) {
  // InitLogging validates the level and format for both paths and builds the stderr logger.
  SKYDB_RETURN_IF_ERROR(InitLogging(config.log_level, config.log_format));
  auto last = std::make_shared<LastErrorSink>();
  if (sink) {
    auto logger = std::make_shared<spdlog::logger>(
        kSinkLogger, spdlog::sinks_init_list{std::make_shared<ForwardingSink>(sink), last});
    logger->set_level(spdlog::level::from_str(config.log_level));
    spdlog::set_default_logger(std::move(logger));
  } else {
    // Start runs this before skydb's thread exists, so no line is logged while it changes.
    spdlog::default_logger()->sinks().push_back(last);
  }
  return std::shared_ptr<LastError>(last);
}

void ReleaseLogSink() {
  if (spdlog::default_logger()->name() != kSinkLogger) return;
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("skydb", std::make_shared<spdlog::sinks::stderr_sink_mt>()));
}

}  // namespace skydb::embed
