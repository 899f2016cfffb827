// The carrier's wire format: base64, reach, payload packing and reading.
#include "pgconn/pubsub_payload.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <unordered_map>

namespace skydb::pg::pubsub {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kMagic = "skydb1 ";
constexpr uint8_t kNotBase64 = 0xff;

constexpr std::array<uint8_t, 256> DecodeTable() {
  std::array<uint8_t, 256> table{};
  for (auto& v : table) v = kNotBase64;
  for (uint8_t i = 0; i < 64; ++i) table[static_cast<uint8_t>(kAlphabet[i])] = i;
  return table;
}
constexpr std::array<uint8_t, 256> kDecode = DecodeTable();

size_t Base64Size(size_t n) { return (n + 2) / 3 * 4; }

size_t HexSize(uint64_t v) {
  size_t n = 1;
  while ((v >>= 4) != 0) ++n;
  return n;
}

void AppendHex(std::string& out, uint64_t v) {
  char buf[16];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, 16);
  out.append(buf, end);
}

size_t MaskSize(size_t daemons) { return (daemons + 3) / 4; }

// Reads a number in `base` up to (not including) `stop`, advancing `at` past the stop byte.
std::optional<uint64_t> ReadNumber(std::string_view in, size_t* at, char stop, int base) {
  size_t end = in.find(stop, *at);
  if (end == std::string_view::npos || end == *at || end - *at > 20) return std::nullopt;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(in.data() + *at, in.data() + end, v, base);
  if (ec != std::errc() || ptr != in.data() + end) return std::nullopt;
  *at = end + 1;
  return v;
}

// The field up to (not including) `stop`, advancing `at` past the stop byte.
std::optional<std::string_view> ReadField(std::string_view in, size_t* at, char stop) {
  size_t end = in.find(stop, *at);
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view field = in.substr(*at, end - *at);
  *at = end + 1;
  return field;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// One payload being packed: the daemons its header lists and its records (each a kind, the
// header indexes it is for, and its text after the mask).
class PayloadBuilder {
 public:
  explicit PayloadBuilder(uint64_t publisher) : publisher_(publisher) {}

  bool empty() const { return records_.empty(); }

  // Would a record of `body` bytes (after its mask) for `daemons` still fit?
  bool Fits(const std::vector<uint64_t>& daemons, size_t body) const {
    size_t listed = daemons_.size(), header = header_bytes_;
    for (uint64_t d : daemons) {
      if (index_.count(d) != 0) continue;
      header += HexSize(d) + (listed == 0 ? 0 : 1);
      ++listed;
    }
    size_t records = records_bytes_ + body + (records_.size() + 1) * (1 + MaskSize(listed));
    return kMagic.size() + HexSize(publisher_) + 2 + header + records <= kMaxPayloadBytes;
  }

  void Add(char kind, const std::vector<uint64_t>& daemons, std::string body) {
    Pending record{kind, {}, std::move(body)};
    for (uint64_t d : daemons) {
      auto [it, added] = index_.emplace(d, daemons_.size());
      if (added) {
        header_bytes_ += HexSize(d) + (daemons_.empty() ? 0 : 1);
        daemons_.push_back(d);
      }
      record.indexes.push_back(it->second);
    }
    records_bytes_ += record.body.size();
    records_.push_back(std::move(record));
  }

  std::string Finish() {
    std::string out;
    out.reserve(kMaxPayloadBytes);
    out.append(kMagic);
    AppendHex(out, publisher_);
    out.push_back(' ');
    for (size_t i = 0; i < daemons_.size(); ++i) {
      if (i > 0) out.push_back(',');
      AppendHex(out, daemons_[i]);
    }
    out.push_back('\n');
    std::string mask(MaskSize(daemons_.size()), '0');
    for (const auto& record : records_) {
      std::fill(mask.begin(), mask.end(), 0);
      for (size_t i : record.indexes) mask[i / 4] = static_cast<char>(mask[i / 4] | (1 << (i % 4)));
      out.push_back(record.kind);
      for (char nibble : mask) out.push_back("0123456789abcdef"[static_cast<int>(nibble)]);
      out.append(record.body);
    }
    *this = PayloadBuilder(publisher_);
    return out;
  }

 private:
  struct Pending {
    char kind;
    std::vector<size_t> indexes;
    std::string body;
  };
  uint64_t publisher_;
  std::vector<uint64_t> daemons_;
  std::unordered_map<uint64_t, size_t> index_;
  size_t header_bytes_ = 0;  // the daemon list, commas included
  std::vector<Pending> records_;
  size_t records_bytes_ = 0;  // the records' bodies
};

std::string InlineBody(std::string_view channel, std::string_view message) {
  std::string body;
  body.reserve(3 + Base64Size(channel.size()) + Base64Size(message.size()));
  body.push_back(' ');
  body.append(Base64(channel));
  body.push_back(' ');
  body.append(Base64(message));
  body.push_back('\n');
  return body;
}

std::string TableBody(uint64_t seq, uint64_t bytes) {
  std::string body = " ";
  AppendHex(body, seq);
  body += " " + std::to_string(bytes) + "\n";
  return body;
}

// `daemons` in parts that each fit an empty payload with a record of `body` bytes (a table
// record for more daemons than one payload can list).
std::vector<std::vector<uint64_t>> SplitToFit(uint64_t publisher,
                                              const std::vector<uint64_t>& daemons, size_t body) {
  PayloadBuilder empty(publisher);
  if (daemons.size() <= 1 || empty.Fits(daemons, body)) return {daemons};
  auto middle = daemons.begin() + static_cast<std::ptrdiff_t>(daemons.size() / 2);
  auto parts = SplitToFit(publisher, {daemons.begin(), middle}, body);
  for (auto& part : SplitToFit(publisher, {middle, daemons.end()}, body)) {
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace

std::string Base64(std::string_view in) {
  std::string out(Base64Size(in.size()), '=');
  char* o = out.data();
  size_t i = 0;
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t n = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    *o++ = kAlphabet[(n >> 18) & 63];
    *o++ = kAlphabet[(n >> 12) & 63];
    *o++ = kAlphabet[(n >> 6) & 63];
    *o++ = kAlphabet[n & 63];
  }
  if (i < in.size()) {
    uint32_t n = uint32_t{p[i]} << 16;
    if (i + 1 < in.size()) n |= uint32_t{p[i + 1]} << 8;
    *o++ = kAlphabet[(n >> 18) & 63];
    *o++ = kAlphabet[(n >> 12) & 63];
    if (i + 1 < in.size()) *o = kAlphabet[(n >> 6) & 63];
  }
  return out;
}

std::optional<std::string> Unbase64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  if (!in.empty() && in.back() == '=') pad = in[in.size() - 2] == '=' ? 2 : 1;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    bool last = i + 4 == in.size();
    uint32_t n = 0;
    for (size_t j = 0; j < 4; ++j) {
      bool padding = last && j >= 4 - pad;
      uint8_t v = padding ? 0 : kDecode[static_cast<uint8_t>(in[i + j])];
      if (v == kNotBase64) return std::nullopt;
      n = (n << 6) | v;
    }
    out.push_back(static_cast<char>(n >> 16));
    if (!last || pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (!last || pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

std::vector<Reach> ComputeReach(const std::vector<RegistryRow>& rows,
                                const std::vector<std::string_view>& channels,
                                const Matcher& matches) {
  std::unordered_map<std::string_view, std::vector<const RegistryRow*>> by_channel;
  std::vector<const RegistryRow*> patterns;
  for (const auto& row : rows) {
    if (row.pattern) {
      patterns.push_back(&row);
    } else {
      by_channel[row.name].push_back(&row);
    }
  }
  std::vector<Reach> out;
  out.reserve(channels.size());
  for (std::string_view channel : channels) {
    std::map<uint64_t, uint64_t> per_daemon;
    auto it = by_channel.find(channel);
    if (it != by_channel.end()) {
      for (const RegistryRow* row : it->second) per_daemon[row->daemon] += row->subscribers;
    }
    for (const RegistryRow* row : patterns) {
      if (matches(row->name, channel)) per_daemon[row->daemon] += row->subscribers;
    }
    Reach reach;
    for (auto [daemon, subscribers] : per_daemon) {
      if (subscribers == 0) continue;
      reach.receivers += subscribers;
      reach.daemons.push_back(daemon);
    }
    out.push_back(std::move(reach));
  }
  return out;
}

EncodedBatch EncodeBatch(uint64_t publisher, uint64_t* next_seq,
                         const std::vector<OutMessage>& messages) {
  EncodedBatch batch;
  PayloadBuilder current(publisher);
  auto add = [&](char kind, const std::vector<uint64_t>& daemons, std::string body) {
    if (!current.empty() && !current.Fits(daemons, body.size())) {
      batch.payloads.push_back(current.Finish());
    }
    current.Add(kind, daemons, std::move(body));
  };
  const PayloadBuilder empty(publisher);
  for (const auto& m : messages) {
    const std::vector<uint64_t>& daemons = *m.daemons;
    size_t inline_bytes = 3 + Base64Size(m.channel.size()) + Base64Size(m.message.size());
    if (empty.Fits(daemons, inline_bytes)) {
      add('m', daemons, InlineBody(m.channel, m.message));
      continue;
    }
    uint64_t seq = (*next_seq)++;
    batch.rows.push_back({seq, daemons.size(), m.channel, m.message});
    std::string body = TableBody(seq, m.channel.size() + m.message.size());
    for (const auto& part : SplitToFit(publisher, daemons, body.size())) add('t', part, body);
  }
  if (!current.empty()) batch.payloads.push_back(current.Finish());
  return batch;
}

std::optional<Notification> DecodePayload(std::string_view payload, uint64_t me) {
  if (payload.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  size_t at = kMagic.size();
  Notification out;
  auto publisher = ReadNumber(payload, &at, ' ', 16);
  if (!publisher) return std::nullopt;
  out.publisher = *publisher;
  auto list = ReadField(payload, &at, '\n');
  if (!list) return std::nullopt;
  size_t daemons = 0, mine = SIZE_MAX;
  std::string listed(*list);
  listed.push_back(',');
  for (size_t from = 0; from < listed.size();) {
    auto id = ReadNumber(listed, &from, ',', 16);
    if (!id) return std::nullopt;
    if (*id == me) mine = daemons;
    ++daemons;
  }
  while (at < payload.size()) {
    char kind = payload[at++];
    auto mask = ReadField(payload, &at, ' ');
    if ((kind != 'm' && kind != 't') || !mask || mask->size() != MaskSize(daemons)) {
      return std::nullopt;
    }
    for (char c : *mask) {
      if (HexDigit(c) < 0) return std::nullopt;
    }
    bool for_me = mine != SIZE_MAX && (HexDigit((*mask)[mine / 4]) & (1 << (mine % 4))) != 0;
    Record record;
    record.in_table = kind == 't';
    if (kind == 'm') {
      auto channel = ReadField(payload, &at, ' ');
      auto message = channel ? ReadField(payload, &at, '\n') : std::nullopt;
      if (!message) return std::nullopt;
      if (!for_me) continue;
      auto c = Unbase64(*channel);
      auto m = c ? Unbase64(*message) : std::nullopt;
      if (!m) return std::nullopt;
      record.channel = std::move(*c);
      record.message = std::move(*m);
    } else {
      auto seq = ReadNumber(payload, &at, ' ', 16);
      auto bytes = seq ? ReadNumber(payload, &at, '\n', 10) : std::nullopt;
      if (!bytes) return std::nullopt;
      record.seq = *seq;
      record.bytes = *bytes;
    }
    if (for_me) out.records.push_back(std::move(record));
  }
  return out;
}

}  // namespace skydb::pg::pubsub
