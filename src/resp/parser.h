// RespParser: a pure, incremental RESP2 request parser (no I/O).
//
// Accepts what Redis accepts from clients: arrays of bulk strings ("*2\r\n$3\r\nGET\r\n...")
// and inline commands ("GET key\r\n", with Redis's quoting rules). Bytes are fed in any split;
// the parser keeps only the state of the command in progress, so a value longer than
// max_bulk_bytes is refused as soon as its "$<len>" header is seen, never buffered whole.
// Errors carry Redis's text ("Protocol error: invalid bulk length"); after an error the caller
// replies with it and closes the connection (the parser refuses further input until Reset).
//
// Thread-safety: none; one parser per connection, used by its loop thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace skydb::resp {

struct ParserLimits {
  size_t max_bulk_bytes = 512 << 20;
  size_t max_multibulk_length = size_t{1024} * 1024;
  size_t max_query_buffer = 1 << 30;   // bytes of one command, headers included
  size_t max_inline_bytes = 64 << 10;  // an inline line or a header line without its CRLF
};

enum class ParseStatus {
  kNeedMore,  // every byte fed was consumed; feed more
  kCommand,   // a whole command is in args(); unconsumed bytes stay with the caller
  kError,     // malformed input; error() has the reply text (without "-ERR ")
};

class RespParser {
 public:
  explicit RespParser(ParserLimits limits = {}) : limits_(limits) {}

  // Consumes bytes from the front of `input`. Returns kCommand as soon as one command is whole
  // (the rest of `input` is left for the next call), kNeedMore when `input` ran out (all of it
  // consumed: partial lines are kept inside the parser), or kError.
  ParseStatus Feed(std::string_view& input);

  // The arguments of the command just returned; the caller may move them out. Short ones left
  // in place lend their storage to the next command's arguments.
  std::vector<std::string>& args() { return args_; }
  const std::string& error() const { return error_; }
  // Bytes held for the command in progress (partial line, arguments so far).
  size_t buffered_bytes() const {
    return state_ == State::kStart ? 0 : line_.size() + command_bytes_;
  }

  void Reset();

 private:
  enum class State {
    kStart,      // before a command's first byte
    kInline,     // reading an inline command line
    kArrayHead,  // reading "*<n>" after the '*'
    kBulkHead,   // reading "$<len>" (the '$' included)
    kBulkData,   // reading <len> bytes and their CRLF
    kFailed,     // an error was reported; nothing more is accepted
  };

  ParseStatus StepStart(std::string_view& input);
  ParseStatus StepLine(std::string_view& input);
  ParseStatus StepBulkData(std::string_view& input);
  ParseStatus OnInlineLine(std::string_view line);
  ParseStatus OnArrayHead(std::string_view line);
  ParseStatus OnBulkHead(std::string_view line);
  ParseStatus FinishArgument();
  ParseStatus Fail(std::string message);
  void RecycleArgs();
  bool TakeLine(std::string_view& input, std::string_view* line, bool* too_long);

  ParserLimits limits_;
  State state_ = State::kStart;
  std::string line_;  // a line received in pieces
  std::vector<std::string> args_;
  std::vector<std::string> spare_;  // emptied arguments whose heap storage is reused
  size_t args_expected_ = 0;
  size_t bulk_remaining_ = 0;  // of the current bulk, CRLF included
  size_t command_bytes_ = 0;
  std::string error_;
};

// Splits an inline command the way redis-cli and Redis do (sdssplitargs): spaces separate
// arguments; "double quotes" allow \n \r \t \b \a \\ \" and \xHH; 'single quotes' allow \'.
// Returns false on unbalanced quotes (or a closing quote not followed by a space).
bool SplitInlineArgs(std::string_view line, std::vector<std::string>* args);

}  // namespace skydb::resp
