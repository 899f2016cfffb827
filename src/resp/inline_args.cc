// Inline-command splitting with the quoting rules redis-cli users type.
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "resp/parser.h"

namespace skydb::resp {
namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char Unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;
  }
}

// Reads a "double-quoted" argument starting after the opening quote; advances `p` past the
// closing quote. False when the quote never closes or is glued to the next argument.
bool ReadDoubleQuoted(std::string_view line, size_t& p, std::string* out) {
  for (; p < line.size(); ++p) {
    char c = line[p];
    if (c == '\\' && p + 3 < line.size() && line[p + 1] == 'x' && HexValue(line[p + 2]) >= 0 &&
        HexValue(line[p + 3]) >= 0) {
      out->push_back(static_cast<char>(HexValue(line[p + 2]) * 16 + HexValue(line[p + 3])));
      p += 3;
    } else if (c == '\\' && p + 1 < line.size()) {
      out->push_back(Unescape(line[++p]));
    } else if (c == '"') {
      ++p;
      return p == line.size() || IsSpace(line[p]);
    } else {
      out->push_back(c);
    }
  }
  return false;
}

bool ReadSingleQuoted(std::string_view line, size_t& p, std::string* out) {
  for (; p < line.size(); ++p) {
    char c = line[p];
    if (c == '\\' && p + 1 < line.size() && line[p + 1] == '\'') {
      out->push_back('\'');
      ++p;
    } else if (c == '\'') {
      ++p;
      return p == line.size() || IsSpace(line[p]);
    } else {
      out->push_back(c);
    }
  }
  return false;
}

// Reads one argument starting at a non-space byte; quotes may start mid-argument (a"b c").
bool ReadArgument(std::string_view line, size_t& p, std::string* out) {
  while (p < line.size()) {
    char c = line[p];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0') return true;
    ++p;
    if (c == '"') return ReadDoubleQuoted(line, p, out);
    if (c == '\'') return ReadSingleQuoted(line, p, out);
    out->push_back(c);
  }
  return true;
}

}  // namespace

bool SplitInlineArgs(std::string_view line, std::vector<std::string>* args) {
  args->clear();
  size_t p = 0;
  for (;;) {
    // NUL separates too (Redis's C-string splitter stops there; we do not drop the rest).
    while (p < line.size() && (IsSpace(line[p]) || line[p] == '\0')) ++p;
    if (p == line.size()) return true;
    std::string arg;
    if (!ReadArgument(line, p, &arg)) {
      args->clear();
      return false;
    }
    args->push_back(std::move(arg));
  }
}

}  // namespace skydb::resp
