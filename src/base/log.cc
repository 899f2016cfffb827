#include "skydb/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "base/strings.h"

namespace skydb {
namespace {

// %* → "<N>", the syslog priority journald reads from the start of a line.
class SyslogPriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    int priority = 6;
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug:
        priority = 7;
        break;
      case spdlog::level::info:
        priority = 6;
        break;
      case spdlog::level::warn:
        priority = 4;
        break;
      case spdlog::level::err:
        priority = 3;
        break;
      case spdlog::level::critical:
        priority = 2;
        break;
      default:
        break;
    }
    char buf[8];
    int n = std::snprintf(buf, sizeof buf, "<%d>", priority);
    dest.append(buf, buf + n);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

// The fields of the record the calling thread is logging (Log sets them around its call;
// skydb's loggers format on the logging thread), or none.
thread_local const LogFields* current_fields = nullptr;

const LogFields& CurrentFields() {
  static const LogFields kNone;
  return current_fields != nullptr ? *current_fields : kNone;
}

std::string_view Payload(const spdlog::details::log_msg& msg) {
  return {msg.payload.data(), msg.payload.size()};
}

// `text` as a JSON string body (quotes, backslashes and controls escaped). Messages name paths
// a user chose; bytes that are not UTF-8 become \ufffd so the line stays JSON.
void AppendJsonEscaped(std::string_view text, spdlog::memory_buf_t& dest) {
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      dest.push_back('\\');
      dest.push_back(c);
    } else if (u < 0x20) {
      char buf[8];
      int n = std::snprintf(buf, sizeof buf, "\\u%04x", u);
      dest.append(buf, buf + n);
    } else if (u < 0x80) {
      dest.push_back(c);
    } else if (size_t len = Utf8SequenceAt(text, i); len > 0) {
      dest.append(text.data() + i, text.data() + i + len);
      i += len - 1;
    } else {
      dest.append(std::string_view("\\ufffd"));
    }
  }
}

// %~ → the message as a JSON string body, without the prefix its fields name.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    AppendJsonEscaped(SplitLogMessage(Payload(msg), CurrentFields()).message, dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

// %& → the record's fields as JSON members, each followed by a comma: "component" always,
// "pid" and "peer" when set.
class JsonFieldsFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const LogFields& fields = CurrentFields();
    dest.append(std::string_view("\"component\":\""));
    AppendJsonEscaped(SplitLogMessage(Payload(msg), fields).component, dest);
    dest.append(std::string_view("\","));
    if (fields.pid > 0) {
      std::string pid = "\"pid\":" + std::to_string(fields.pid) + ",";
      dest.append(pid.data(), pid.data() + pid.size());
    }
    if (!fields.peer.empty()) {
      dest.append(std::string_view("\"peer\":\""));
      AppendJsonEscaped(fields.peer, dest);
      dest.append(std::string_view("\","));
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonFieldsFlag>();
  }
};

// %V → the message on one line: a message of several lines (libpq's, a file's errors) would
// otherwise continue on lines of the journal without a priority.
class OneLineMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string_view text = Payload(msg);
    if (text.find_first_of("\r\n") == std::string_view::npos) {
      dest.append(text.data(), text.data() + text.size());
      return;
    }
    std::string folded = FoldLines(text);
    dest.append(folded.data(), folded.data() + folded.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<OneLineMessageFlag>();
  }
};

// Clears the thread's fields when the record is written, or when spdlog throws.
class FieldsScope {
 public:
  explicit FieldsScope(const LogFields& fields) { current_fields = &fields; }
  ~FieldsScope() { current_fields = nullptr; }
  FieldsScope(const FieldsScope&) = delete;
  FieldsScope& operator=(const FieldsScope&) = delete;
};

}  // namespace

void Log(spdlog::level::level_enum level, const LogFields& fields, std::string_view message) {
  FieldsScope scope(fields);
  spdlog::default_logger_raw()->log(level, spdlog::string_view_t(message.data(), message.size()));
}

const std::vector<std::string_view>& LogComponents() {
  static const std::vector<std::string_view> kComponents = {
      "postgres", "resp", "store", "pubsub", "backup", "http", "systemd", "metrics"};
  return kComponents;
}

LogBody SplitLogMessage(std::string_view message, const LogFields& fields) {
  std::string_view component = fields.component;
  if (component.empty()) {
    std::string_view word = message.substr(0, message.find(": "));
    for (std::string_view known : LogComponents()) {
      if (word.size() < message.size() && word == known) component = known;
    }
  }
  LogBody body{component.empty() ? std::string_view("skydb") : component, message};
  if (!component.empty() && StartsWith(body.message, component) &&
      body.message.substr(component.size(), 2) == ": ") {
    body.message.remove_prefix(component.size() + 2);
  }
  if (fields.pid > 0) {
    std::string tag = "[" + std::to_string(fields.pid) + "] ";
    if (StartsWith(body.message, tag)) body.message.remove_prefix(tag.size());
  }
  return body;
}

bool JournalStreamMatches(std::string_view value, uint64_t dev, uint64_t ino) {
  size_t colon = value.find(':');
  if (colon == std::string_view::npos) return false;
  uint64_t want_dev = 0, want_ino = 0;
  auto parse = [](std::string_view digits, uint64_t& out) {
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return ec == std::errc() && end == digits.data() + digits.size() && !digits.empty();
  };
  return parse(value.substr(0, colon), want_dev) && parse(value.substr(colon + 1), want_ino) &&
         want_dev == dev && want_ino == ino;
}

Status InitLogging(const std::string& level, const std::string& format) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return Error::InvalidArgument("log level '" + level +
                                  "' is not one of trace, debug, info, warn, error, off");
  }
  std::string chosen = format;
  if (chosen == "auto") {
    const char* journal = std::getenv("JOURNAL_STREAM");
    struct stat err {};
    bool to_journal = journal != nullptr && ::fstat(STDERR_FILENO, &err) == 0 &&
                      JournalStreamMatches(journal, err.st_dev, err.st_ino);
    chosen = to_journal ? "journal" : "text";
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<SyslogPriorityFlag>('*');
  formatter->add_flag<JsonMessageFlag>('~');
  formatter->add_flag<JsonFieldsFlag>('&');
  formatter->add_flag<OneLineMessageFlag>('V');
  if (chosen == "journal") {
    formatter->set_pattern("%*%V");
  } else if (chosen == "json") {
    formatter->set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l",%&"msg":"%~"})");
  } else if (chosen == "text") {
    formatter->set_pattern("%Y-%m-%d %H:%M:%S.%e %-5l %V");
  } else {
    return Error::InvalidArgument("log format '" + format + "' is not one of auto, text, json");
  }
  auto logger = spdlog::get("skydb");
  if (!logger) logger = spdlog::stderr_logger_mt("skydb");
  logger->set_formatter(std::move(formatter));
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return Ok();
}

}  // namespace skydb
