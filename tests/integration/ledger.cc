#include "ledger.h"

#include <algorithm>

#include "resp_client.h"

namespace skydb::testing {

using std::chrono::milliseconds;

Ledger::Ledger(LedgerOptions options)
    : options_(std::move(options)),
      keys_(new KeyState[static_cast<size_t>(options_.writers * options_.keys_per_writer)]) {}

Ledger::~Ledger() { Stop(); }

void Ledger::Start() {
  stop_ = false;
  for (int w = 0; w < options_.writers; ++w) threads_.emplace_back([this, w] { WriterLoop(w); });
}

void Ledger::Stop() {
  stop_ = true;
  for (auto& t : threads_) t.join();
  threads_.clear();
}

std::string Ledger::KeyName(int writer, int key) const {
  return options_.key_prefix + ":" + std::to_string(writer) + ":" + std::to_string(key);
}

std::string Ledger::Value(int writer, int key, long seq) const {
  std::string v =
      "L|" + std::to_string(writer) + "|" + std::to_string(key) + "|" + std::to_string(seq) + "|";
  for (size_t i = 0; v.size() < options_.value_bytes; ++i) {
    v.push_back(static_cast<char>('a' + (static_cast<size_t>(seq) + i) % 26));
  }
  return v;
}

std::optional<long> Ledger::SeqOf(const std::string& value, int writer, int key) const {
  std::string head = "L|" + std::to_string(writer) + "|" + std::to_string(key) + "|";
  if (value.compare(0, head.size(), head) != 0) return std::nullopt;
  size_t end = value.find('|', head.size());
  if (end == std::string::npos || end == head.size()) return std::nullopt;
  long seq = 0;
  for (size_t i = head.size(); i < end; ++i) {
    if (value[i] < '0' || value[i] > '9') return std::nullopt;
    seq = seq * 10 + (value[i] - '0');
  }
  if (Value(writer, key, seq) != value) return std::nullopt;
  return seq;
}

Ledger::KeyState& Ledger::State(int writer, int key) const {
  return keys_[static_cast<size_t>(writer * options_.keys_per_writer + key)];
}

void Ledger::WriterLoop(int writer) {
  std::optional<RespClient> client;
  for (long round = 0; !stop_.load(); ++round) {
    if (!client) {
      auto connected = RespClient::Connect(options_.socket, options_.command_timeout);
      if (!connected.ok()) {
        std::this_thread::sleep_for(options_.reconnect_every);
        continue;
      }
      client.emplace(std::move(connected).value());
    }
    int key = static_cast<int>(round % options_.keys_per_writer);
    if (options_.pipeline > 1) {
      if (!PipelinedRound(*client, writer, key)) {
        client.reset();
        std::this_thread::sleep_for(options_.reconnect_every);
      }
      continue;
    }
    KeyState& state = State(writer, key);
    long seq;
    {
      std::lock_guard<std::mutex> lock(state.mu);
      seq = ++state.attempted;
    }
    auto reply =
        client->Command({"SET", KeyName(writer, key), Value(writer, key, seq), "EX", "3600"});
    if (reply.ok() && reply->IsOk()) {
      std::lock_guard<std::mutex> lock(state.mu);
      state.acks.push_back({seq, std::chrono::steady_clock::now()});
      ++acked_;
      continue;
    }
    ++failed_;
    if (!reply.ok()) client.reset();
    std::this_thread::sleep_for(options_.reconnect_every);  // no retry storm against a full queue
  }
}

bool Ledger::PipelinedRound(RespClient& client, int writer, int key) {
  KeyState& state = State(writer, key);
  long first, acked_before = 0;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    first = state.attempted + 1;
    state.attempted += options_.pipeline;
    if (!state.acks.empty()) acked_before = state.acks.back().seq;
  }
  std::vector<std::vector<std::string>> commands;
  for (int i = 0; i < options_.pipeline; ++i) {
    commands.push_back({"SET", KeyName(writer, key), Value(writer, key, first + i), "EX", "3600"});
    if (i % 2 == 0) commands.back().push_back("GET");
  }
  auto replies = client.Pipeline(commands);
  if (!replies.ok()) {
    ++failed_;
    return false;
  }
  for (int i = 0; i < options_.pipeline; ++i) {
    const RespReply& reply = (*replies)[static_cast<size_t>(i)];
    bool ok = i % 2 == 0
                  ? reply.type == RespReply::Type::kBulk || reply.type == RespReply::Type::kNull
                  : reply.IsOk();
    if (!ok) {
      ++failed_;
      continue;
    }
    if (i % 2 == 0) {
      // What the key held just before: the previous write of this pipeline, or (the first) a
      // write at least as new as the last acknowledged one.
      std::optional<long> old;
      if (reply.type == RespReply::Type::kBulk) old = SeqOf(reply.text, writer, key);
      bool right = i > 0 ? old == first + i - 1
                         : (reply.type == RespReply::Type::kNull
                                ? acked_before == 0
                                : old && *old >= acked_before && *old < first);
      if (!right) {
        std::lock_guard<std::mutex> lock(wrong_mu_);
        wrong_old_values_.push_back(KeyName(writer, key) + ": SET #" + std::to_string(first + i) +
                                    " GET answered " +
                                    (old ? "#" + std::to_string(*old) : std::string("nil/other")));
      }
    }
    std::lock_guard<std::mutex> lock(state.mu);
    state.acks.push_back({first + i, std::chrono::steady_clock::now()});
    ++acked_;
  }
  return true;
}

std::vector<std::string> Ledger::WrongOldValues() const {
  std::lock_guard<std::mutex> lock(wrong_mu_);
  return wrong_old_values_;
}

std::optional<milliseconds> Ledger::WaitForAcks(long more, milliseconds timeout) const {
  auto start = std::chrono::steady_clock::now();
  long target = acked_.load() + more;
  while (std::chrono::steady_clock::now() - start < timeout) {
    if (acked_.load() >= target) {
      return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  return std::nullopt;
}

std::optional<milliseconds> Ledger::LongestAckGap(TimePoint from, TimePoint to) const {
  std::optional<TimePoint> before;
  std::vector<TimePoint> after;
  for (int i = 0; i < options_.writers * options_.keys_per_writer; ++i) {
    KeyState& state = keys_[static_cast<size_t>(i)];
    std::lock_guard<std::mutex> lock(state.mu);
    for (const Ack& ack : state.acks) {
      if (ack.at < from && (!before || ack.at > *before)) before = ack.at;
      if (ack.at >= from && ack.at <= to) after.push_back(ack.at);
    }
  }
  if (!before) return std::nullopt;
  std::sort(after.begin(), after.end());
  after.push_back(to);  // an outage still going on at `to` counts up to it
  milliseconds longest{0};
  TimePoint last = *before;
  for (TimePoint at : after) {
    longest = std::max(longest, std::chrono::duration_cast<milliseconds>(at - last));
    last = at;
  }
  return longest;
}

std::vector<std::optional<long>> Ledger::ReadAll(const std::string& socket,
                                                 std::vector<std::string>& problems) const {
  std::vector<std::optional<long>> seqs;
  auto client = RespClient::Connect(socket, milliseconds(30000));
  if (!client.ok()) {
    problems.push_back("cannot connect to verify: " + client.error().message);
    return seqs;
  }
  for (int w = 0; w < options_.writers; ++w) {
    for (int k = 0; k < options_.keys_per_writer; ++k) {
      auto reply = client->Command({"GET", KeyName(w, k)});
      if (!reply.ok() || reply->type == RespReply::Type::kError) {
        problems.push_back(KeyName(w, k) +
                           ": GET failed: " + (reply.ok() ? reply->text : reply.error().message));
        seqs.push_back(std::nullopt);
        continue;
      }
      if (reply->type == RespReply::Type::kNull) {
        seqs.push_back(0L);
        continue;
      }
      auto seq = SeqOf(reply->text, w, k);
      if (!seq) {
        problems.push_back(KeyName(w, k) + ": served a value no writer wrote (" +
                           std::to_string(reply->text.size()) + " bytes, starts \"" +
                           reply->text.substr(0, 24) + "\")");
      }
      seqs.push_back(seq);
    }
  }
  return seqs;
}

std::vector<std::string> Ledger::Verify(const std::string& socket,
                                        std::optional<TimePoint> acked_before) const {
  std::vector<std::string> problems;
  auto seqs = ReadAll(socket, problems);
  if (seqs.empty()) return problems;
  for (int w = 0; w < options_.writers; ++w) {
    for (int k = 0; k < options_.keys_per_writer; ++k) {
      auto read = seqs[static_cast<size_t>(w * options_.keys_per_writer + k)];
      if (!read) continue;  // already reported
      KeyState& state = State(w, k);
      std::lock_guard<std::mutex> lock(state.mu);
      long required = 0;
      for (const Ack& ack : state.acks) {
        if (!acked_before || ack.at < *acked_before) required = std::max(required, ack.seq);
      }
      if (*read < required) {
        problems.push_back(KeyName(w, k) + ": reads write #" + std::to_string(*read) +
                           " but write #" + std::to_string(required) + " was acknowledged");
      } else if (*read > state.attempted) {
        problems.push_back(KeyName(w, k) + ": reads write #" + std::to_string(*read) +
                           ", never sent (last sent #" + std::to_string(state.attempted) + ")");
      }
    }
  }
  return problems;
}

std::vector<Ledger::TimePoint> Ledger::LostAcks(const std::string& socket) const {
  std::vector<std::string> problems;
  auto seqs = ReadAll(socket, problems);
  std::vector<TimePoint> lost;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (!seqs[i]) continue;
    KeyState& state = keys_[i];
    std::lock_guard<std::mutex> lock(state.mu);
    for (const Ack& ack : state.acks) {
      if (ack.seq > *seqs[i]) lost.push_back(ack.at);
    }
  }
  return lost;
}

milliseconds Ledger::OldestLostAckAge(const std::string& socket, TimePoint moment) const {
  milliseconds oldest{0};
  for (TimePoint at : LostAcks(socket)) {
    if (at <= moment) {
      oldest = std::max(oldest, std::chrono::duration_cast<milliseconds>(moment - at));
    }
  }
  return oldest;
}

}  // namespace skydb::testing
