// Small string helpers shared by every subsystem. Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skydb {

std::string_view Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, char sep);  // keeps empty fields
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
std::string ToLower(std::string_view s);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// "1975 MiB", "1.5 GiB", "512 B": for humans, not for config files.
std::string HumanBytes(unsigned long long bytes);

}  // namespace skydb
