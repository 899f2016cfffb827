#include "os/app_protocol.h"

#include <charconv>

namespace skydb {
namespace {

std::string Int(long long v) { return std::to_string(v); }

bool ParseInt(const std::string& s, long long& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

Error Bad(const AppFields& fields) {
  return Error::InvalidArgument("malformed app launcher message '" +
                                (fields.empty() ? std::string() : fields[0]) + "'");
}

}  // namespace

std::string EncodeAppFrame(const AppFields& fields) {
  std::string payload;
  for (const std::string& field : fields) {
    payload += field;
    payload += '\0';
  }
  uint32_t n = static_cast<uint32_t>(payload.size());
  std::string frame;
  for (int shift : {24, 16, 8, 0}) frame += static_cast<char>((n >> shift) & 0xFF);
  return frame + payload;
}

AppFrameDecoder::Next AppFrameDecoder::Pop(AppFields& fields) {
  if (buffer_.size() < 4) return Next::kNeedMore;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(buffer_[i]);
  if (n > kMaxAppFrame) return Next::kMalformed;
  if (buffer_.size() < 4 + static_cast<size_t>(n)) return Next::kNeedMore;
  std::string_view payload(buffer_.data() + 4, n);
  if (payload.empty() || payload.back() != '\0') return Next::kMalformed;
  fields.clear();
  size_t start = 0;
  for (size_t nul = payload.find('\0'); nul != std::string_view::npos;
       nul = payload.find('\0', start)) {
    fields.emplace_back(payload.substr(start, nul - start));
    start = nul + 1;
  }
  buffer_.erase(0, 4 + static_cast<size_t>(n));
  return Next::kMessage;
}

AppFields RequestFields(const AppRequest& request) {
  if (request.kind == AppRequest::Kind::kSignal) return {"signal", Int(request.signal)};
  AppFields fields = {"start", Int(static_cast<long long>(request.argv.size()))};
  fields.insert(fields.end(), request.argv.begin(), request.argv.end());
  fields.insert(fields.end(), request.env.begin(), request.env.end());
  return fields;
}

AppFields ReportFields(const AppReport& report) {
  switch (report.kind) {
    case AppReport::Kind::kLauncherReady:
      return {"launcher-ready", report.text};
    case AppReport::Kind::kLauncherFailed:
      return {"launcher-failed", report.text};
    case AppReport::Kind::kStarted:
      return {"started", Int(report.pid)};
    case AppReport::Kind::kExecFailed:
      return {"exec-failed", Int(report.error_number), report.text};
    case AppReport::Kind::kExited:
      return {"exited", Int(report.exit_code), Int(report.term_signal)};
  }
  return {};
}

Result<AppRequest> ParseRequest(const AppFields& fields) {
  AppRequest request;
  long long n = 0;
  if (fields.size() == 2 && fields[0] == "signal" && ParseInt(fields[1], n) && n > 0 && n < 65) {
    request.kind = AppRequest::Kind::kSignal;
    request.signal = static_cast<int>(n);
    return request;
  }
  if (fields.size() >= 3 && fields[0] == "start" && ParseInt(fields[1], n) && n >= 1 &&
      static_cast<size_t>(n) <= fields.size() - 2) {
    request.kind = AppRequest::Kind::kStart;
    auto argv_end = fields.begin() + 2 + n;
    request.argv.assign(fields.begin() + 2, argv_end);
    request.env.assign(argv_end, fields.end());
    return request;
  }
  return Bad(fields);
}

Result<AppReport> ParseReport(const AppFields& fields) {
  AppReport report;
  long long a = 0, b = 0;
  const std::string verb = fields.empty() ? "" : fields[0];
  if (verb == "launcher-ready" && fields.size() == 2) {
    report.kind = AppReport::Kind::kLauncherReady;
    report.text = fields[1];
  } else if (verb == "launcher-failed" && fields.size() == 2) {
    report.kind = AppReport::Kind::kLauncherFailed;
    report.text = fields[1];
  } else if (verb == "started" && fields.size() == 2 && ParseInt(fields[1], a) && a > 0) {
    report.kind = AppReport::Kind::kStarted;
    report.pid = static_cast<pid_t>(a);
  } else if (verb == "exec-failed" && fields.size() == 3 && ParseInt(fields[1], a)) {
    report.kind = AppReport::Kind::kExecFailed;
    report.error_number = static_cast<int>(a);
    report.text = fields[2];
  } else if (verb == "exited" && fields.size() == 3 && ParseInt(fields[1], a) &&
             ParseInt(fields[2], b)) {
    report.kind = AppReport::Kind::kExited;
    report.exit_code = static_cast<int>(a);
    report.term_signal = static_cast<int>(b);
  } else {
    return Bad(fields);
  }
  return report;
}

}  // namespace skydb
