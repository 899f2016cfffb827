#include "resp/parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

namespace skydb::resp {
namespace {

// Parses a whole decimal integer ("-12"); no sign other than '-', no spaces, no overflow.
// Up to 18 digits (every header in practice) by hand, which cannot overflow; longer through
// from_chars, which detects overflow.
bool ParseWholeInt(std::string_view text, int64_t* out) {
  size_t first = !text.empty() && text[0] == '-' ? 1 : 0;
  size_t digits = text.size() - first;
  if (digits == 0) return false;
  if (digits > 18) {
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, *out);
    return ec == std::errc() && ptr == end;
  }
  int64_t value = 0;
  for (size_t i = first; i < text.size(); ++i) {
    unsigned digit = static_cast<unsigned char>(text[i]) - unsigned{'0'};
    if (digit > 9) return false;
    value = value * 10 + digit;
  }
  *out = first == 1 ? -value : value;
  return true;
}

// A header line must end in CRLF; returns it without the CR.
bool StripCr(std::string_view* line) {
  if (line->empty() || line->back() != '\r') return false;
  line->remove_suffix(1);
  return true;
}

char Printable(char c) { return std::isprint(static_cast<unsigned char>(c)) ? c : ' '; }

}  // namespace

void RespParser::Reset() {
  state_ = State::kStart;
  line_.clear();
  args_.clear();
  args_expected_ = 0;
  bulk_remaining_ = 0;
  command_bytes_ = 0;
  error_.clear();
}

ParseStatus RespParser::Fail(std::string message) {
  state_ = State::kFailed;
  error_ = std::move(message);
  line_.clear();
  args_.clear();
  return ParseStatus::kError;
}

ParseStatus RespParser::Feed(std::string_view& input) {
  for (;;) {
    ParseStatus status = ParseStatus::kNeedMore;
    switch (state_) {
      case State::kFailed:
        return ParseStatus::kError;
      case State::kStart:
        status = StepStart(input);
        break;
      case State::kBulkData:
        status = StepBulkData(input);
        break;
      default:
        status = StepLine(input);
        break;
    }
    // kNeedMore from a step with input left means "state changed, keep going".
    if (status != ParseStatus::kNeedMore || input.empty()) {
      if (status == ParseStatus::kNeedMore && state_ == State::kStart) command_bytes_ = 0;
      return status;
    }
  }
}

// A few short arguments' storage is kept for the next command (a key's, typically): at most
// kSpareArgs strings of at most kSpareArgBytes each and an array of kKeptArgSlots, so an idle
// connection holds little.
constexpr size_t kSpareArgs = 4;
constexpr size_t kSpareArgBytes = 128;
constexpr size_t kKeptArgSlots = 16;

void RespParser::RecycleArgs() {
  const size_t inline_capacity = std::string().capacity();
  for (auto& arg : args_) {
    if (spare_.size() == kSpareArgs) break;
    if (arg.capacity() > inline_capacity && arg.capacity() <= kSpareArgBytes) {
      spare_.push_back(std::move(arg));
    }
  }
  if (args_.capacity() > kKeptArgSlots) {
    args_ = std::vector<std::string>();  // a long command's array is not kept
  } else {
    args_.clear();
  }
}

ParseStatus RespParser::StepStart(std::string_view& input) {
  if (input.empty()) return ParseStatus::kNeedMore;
  RecycleArgs();
  command_bytes_ = 0;
  if (input.front() == '*') {
    input.remove_prefix(1);
    command_bytes_ = 1;
    state_ = State::kArrayHead;
  } else {
    state_ = State::kInline;
  }
  return ParseStatus::kNeedMore;
}

// Takes one '\n'-terminated line (without the '\n'), joining pieces fed earlier. On false,
// every byte of `input` was kept and *too_long says whether the line passed the limit.
bool RespParser::TakeLine(std::string_view& input, std::string_view* line, bool* too_long) {
  size_t newline = input.find('\n');
  size_t piece = newline == std::string_view::npos ? input.size() : newline;
  *too_long = line_.size() + piece > limits_.max_inline_bytes;
  if (*too_long) return false;
  if (newline == std::string_view::npos) {
    line_.append(input);
    input = {};
    return false;
  }
  if (line_.empty()) {
    *line = input.substr(0, newline);
  } else {
    line_.append(input.substr(0, newline));
    *line = line_;
  }
  input.remove_prefix(newline + 1);
  command_bytes_ += newline + 1;
  return true;
}

ParseStatus RespParser::StepLine(std::string_view& input) {
  // A bulk header must start with '$': say so at once rather than after a whole line.
  if (state_ == State::kBulkHead && line_.empty() && !input.empty() && input.front() != '$') {
    return Fail(std::string("Protocol error: expected '$', got '") + Printable(input.front()) +
                "'");
  }
  std::string_view line;
  bool too_long = false;
  if (!TakeLine(input, &line, &too_long)) {
    if (!too_long) return ParseStatus::kNeedMore;
    if (state_ == State::kInline) return Fail("Protocol error: too big inline request");
    if (state_ == State::kArrayHead) return Fail("Protocol error: too big mbulk count string");
    return Fail("Protocol error: too big bulk count string");
  }
  if (command_bytes_ > limits_.max_query_buffer) {
    return Fail("Protocol error: command exceeds the query buffer limit");
  }
  ParseStatus status = state_ == State::kInline      ? OnInlineLine(line)
                       : state_ == State::kArrayHead ? OnArrayHead(line)
                                                     : OnBulkHead(line);
  if (state_ != State::kFailed) line_.clear();
  return status;
}

ParseStatus RespParser::OnInlineLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!SplitInlineArgs(line, &args_)) {
    return Fail("Protocol error: unbalanced quotes in request");
  }
  if (args_.size() > limits_.max_multibulk_length) {  // the same cap as for arrays
    return Fail("Protocol error: too many arguments in inline request");
  }
  state_ = State::kStart;
  return args_.empty() ? ParseStatus::kNeedMore : ParseStatus::kCommand;
}

ParseStatus RespParser::OnArrayHead(std::string_view line) {
  int64_t count = 0;
  if (!StripCr(&line) || !ParseWholeInt(line, &count) ||
      count > static_cast<int64_t>(limits_.max_multibulk_length)) {
    return Fail("Protocol error: invalid multibulk length");
  }
  if (count <= 0) {  // "*0" and "*-1" are ignored, as Redis does
    state_ = State::kStart;
    return ParseStatus::kNeedMore;
  }
  args_expected_ = static_cast<size_t>(count);
  args_.reserve(std::min<size_t>(args_expected_, 1024));
  state_ = State::kBulkHead;
  return ParseStatus::kNeedMore;
}

ParseStatus RespParser::OnBulkHead(std::string_view line) {
  int64_t length = 0;
  line.remove_prefix(1);  // the '$', checked in StepLine
  if (!StripCr(&line) || !ParseWholeInt(line, &length) || length < 0 ||
      static_cast<uint64_t>(length) > limits_.max_bulk_bytes) {
    return Fail("Protocol error: invalid bulk length");
  }
  if (command_bytes_ + static_cast<size_t>(length) > limits_.max_query_buffer) {
    return Fail("Protocol error: command exceeds the query buffer limit");
  }
  std::string& arg = args_.emplace_back();
  if (!spare_.empty() && static_cast<size_t>(length) <= kSpareArgBytes) {
    arg = std::move(spare_.back());
    spare_.pop_back();
    arg.clear();
  }
  arg.reserve(static_cast<size_t>(length));
  bulk_remaining_ = static_cast<size_t>(length) + 2;
  state_ = State::kBulkData;
  return ParseStatus::kNeedMore;
}

ParseStatus RespParser::StepBulkData(std::string_view& input) {
  std::string& arg = args_.back();
  size_t data_left = bulk_remaining_ > 2 ? bulk_remaining_ - 2 : 0;
  size_t take = std::min(data_left, input.size());
  arg.append(input.substr(0, take));
  input.remove_prefix(take);
  bulk_remaining_ -= take;
  command_bytes_ += take;
  while (bulk_remaining_ > 0 && bulk_remaining_ <= 2 && !input.empty()) {
    char expected = bulk_remaining_ == 2 ? '\r' : '\n';
    if (input.front() != expected) return Fail("Protocol error: expected CRLF after bulk data");
    input.remove_prefix(1);
    --bulk_remaining_;
    ++command_bytes_;
  }
  if (bulk_remaining_ > 0) return ParseStatus::kNeedMore;
  return FinishArgument();
}

ParseStatus RespParser::FinishArgument() {
  if (args_.size() < args_expected_) {
    state_ = State::kBulkHead;
    return ParseStatus::kNeedMore;
  }
  state_ = State::kStart;
  return ParseStatus::kCommand;
}

}  // namespace skydb::resp
