// The messages between the daemon and its app launcher (skydb/process.h), over a stream
// socketpair. A frame is a 4-byte big-endian payload length and the payload: the message's
// fields, each terminated by a NUL byte; the first field names the message.
//
//   daemon → launcher   start ARGC ARGV... ENV...   run the app (ENV as NAME=value)
//                       signal N                   send signal N to the app
//   launcher → daemon   launcher-ready USER         it became the app's user for good
//                       launcher-failed REASON      it could not; it exits
//                       started PID                 the app was exec'd
//                       exec-failed ERRNO REASON    the app could not be started
//                       exited CODE SIGNAL          the app ended (CODE -1 when SIGNAL)
//
// Pure: no I/O. The decoder is incremental: bytes go in as they arrive, whole messages come out.
// Thread-safety: value types; a decoder belongs to one reader.
// Failure: a frame over kMaxAppFrame or a payload that is not NUL-terminated fields is
// kMalformed (the peer is not a launcher of this skydb; the caller ends the conversation).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/process.h"
#include "skydb/result.h"

namespace skydb {

inline constexpr size_t kMaxAppFrame = 4 << 20;  // argv and environment together

using AppFields = std::vector<std::string>;

// One frame for `fields`.
std::string EncodeAppFrame(const AppFields& fields);

class AppFrameDecoder {
 public:
  enum class Next { kNeedMore, kMessage, kMalformed };
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // kMessage fills `fields` and consumes its frame.
  Next Pop(AppFields& fields);

 private:
  std::string buffer_;
};

AppFields RequestFields(const AppRequest& request);
AppFields ReportFields(const AppReport& report);
// InvalidArgument naming what is wrong with the message.
Result<AppRequest> ParseRequest(const AppFields& fields);
Result<AppReport> ParseReport(const AppFields& fields);

}  // namespace skydb
