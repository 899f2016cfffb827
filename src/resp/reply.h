// Where a request's reply goes, and the budget of reply bytes a connection may hold.
//
// A client that asks for replies and does not read them would make the server hold them all.
// So every byte a connection holds for replies is counted: claimed for a reply being built,
// built and waiting for its turn, on its way from a store thread to the loop, and unsent in the
// output buffer. One connection may hold at most RespServerOptions::max_output_buffer bytes
// (resp.max_output_buffer) and all connections together at most max_reply_memory
// (resp.max_reply_memory). A command whose reply carries stored values (GET, MGET, SET GET...)
// learns their size from the store and claims it *before* it builds the reply; a refused claim
// means the reply is never built and the connection is closed, the cause named in the log. Small
// replies (status, integers, errors, ECHO) are counted as they are handed over; the connection
// stops reading while it holds more than a soft limit, which keeps them small.
//
// Thread-safety: ReplyMemory, ReplyBudget and ReplyFn may be used from any thread (store
// callbacks run on store threads); the counters are atomics. A ReplyClaim belongs to one thread
// at a time.
// Ownership: a budget is shared by its connection and every ReplyClaim made for it; a ReplyFn
// reaches it through the connection it holds (ReplyTarget). The server owns the ReplyMemory
// and outlives every budget.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "skydb/env.h"
#include "skydb/function_ref.h"

namespace skydb::resp {

// The reply bytes all connections hold, against the server-wide limit.
class ReplyMemory {
 public:
  explicit ReplyMemory(size_t limit) : limit_(limit) {}
  size_t limit() const { return limit_; }
  size_t held() const { return held_.load(std::memory_order_relaxed); }
  // True for the first refusal of an episode over the limit, so it is logged once; the episode
  // ends when the held bytes fall below half the limit.
  bool BeginEpisode() { return !over_.exchange(true); }

 private:
  friend class ReplyBudget;
  bool TryAdd(size_t bytes);
  void Add(size_t bytes) { held_.fetch_add(bytes, std::memory_order_relaxed); }
  void Sub(size_t bytes);

  const size_t limit_;
  std::atomic<size_t> held_{0};
  std::atomic<bool> over_{false};
};

// Which limit refused a claim.
enum class ReplyLimit : uint8_t {
  kNone,        // nothing was refused
  kConnection,  // max_output_buffer: this client does not read its replies
  kServer,      // max_reply_memory: all clients together hold too much
};

// One connection's reply bytes.
class ReplyBudget {
 public:
  ReplyBudget(size_t limit, ReplyMemory* server) : limit_(limit), server_(server) {}

  // Counts `bytes` if the connection and the server both stay within their limits. Otherwise
  // counts nothing, records the limit and the size (the first refusal is kept) and returns false.
  bool TryClaim(size_t bytes);
  void Add(size_t bytes);  // counted whatever the limits (replies built before they are known)
  void Release(size_t bytes);

  size_t held() const { return held_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }
  const ReplyMemory* server() const { return server_; }
  ReplyLimit refused() const { return refused_.load(std::memory_order_acquire); }
  size_t refused_bytes() const { return refused_bytes_.load(std::memory_order_relaxed); }

 private:
  void Refuse(ReplyLimit limit, size_t bytes);

  const size_t limit_;
  ReplyMemory* const server_;  // may be null (no server-wide limit)
  std::atomic<size_t> held_{0};
  std::atomic<size_t> refused_bytes_{0};
  std::atomic<ReplyLimit> refused_{ReplyLimit::kNone};
};

// Bytes counted in a budget for one reply; released when the claim is destroyed unless the
// holder took them over (Take). An empty claim (no budget) counts nothing and always grows.
class ReplyClaim {
 public:
  ReplyClaim() = default;
  ReplyClaim(std::shared_ptr<ReplyBudget> budget, size_t bytes)  // `bytes` already counted
      : budget_(std::move(budget)), bytes_(bytes) {}
  ReplyClaim(ReplyClaim&& other) noexcept
      : budget_(std::move(other.budget_)), bytes_(std::exchange(other.bytes_, 0)) {}
  ReplyClaim& operator=(ReplyClaim&& other) noexcept;
  ReplyClaim(const ReplyClaim&) = delete;
  ReplyClaim& operator=(const ReplyClaim&) = delete;
  ~ReplyClaim() { Reset(); }

  bool Extend(size_t more);   // claims `more` as well; false (nothing changed) when refused
  void Resize(size_t bytes);  // to the size of the reply built, whatever the limits
  size_t Take() { return std::exchange(bytes_, 0); }  // the caller now owns the count
  size_t bytes() const { return bytes_; }
  bool has_budget() const { return budget_ != nullptr; }

 private:
  void Reset();

  std::shared_ptr<ReplyBudget> budget_;
  size_t bytes_ = 0;
};

struct CommandStats;  // commands.h

// How one command's reply is counted for INFO (commandstats, errorstats), kept by value in its
// ReplyFn: no allocation per command.
struct ReplyTally {
  CommandStats* stats = nullptr;
  // Keeps `stats` alive when the reply's target does not: a store may answer after the server
  // is gone.
  std::shared_ptr<CommandStats> keep;
  const Clock* clock = nullptr;  // outlives the store (the daemon owns both)
  size_t slot = 0;
  Clock::TimePoint start{};
  bool ran = false;  // an error before the command ran is a rejection, after it a failure
};
// Counts `reply` (cmd_info.cc).
void CountReply(const ReplyTally& tally, std::string_view reply);

// Where a connection's replies go, each named by its request's sequence number: one object for
// every reply of the connection, so a ReplyFn carries a pointer, not a closure of its own. Every
// reply to it is claimed against `budget` and counted into `stats`; the target keeps both alive,
// so its replies need not hold them too (two reference counts fewer per command).
class ReplyTarget {
 public:
  ReplyTarget(std::shared_ptr<ReplyBudget> budget, std::shared_ptr<CommandStats> stats)
      : budget_(std::move(budget)), stats_(std::move(stats)) {}
  virtual ~ReplyTarget() = default;
  const std::shared_ptr<ReplyBudget>& reply_budget() const { return budget_; }
  const CommandStats* stats() const { return stats_.get(); }

  virtual void Deliver(uint64_t seq, std::string reply, ReplyClaim claim) = 0;
  // Appends reply `seq`, claimed by `claim` (which it takes), with `build` straight to the
  // output when it is next in line and this is the target's thread: the reply built in place.
  // nullopt: nothing was done. Otherwise the reply's bytes, valid until the target runs again.
  virtual std::optional<std::string_view> BuildInPlace(
      uint64_t seq, ReplyClaim& claim, FunctionRef<void(std::string& out)> build) = 0;

 protected:
  const std::shared_ptr<ReplyBudget> budget_;

 private:
  const std::shared_ptr<CommandStats> stats_;
};

// The reply one request owes: called exactly once, from any thread.
class ReplyFn {
 public:
  // Receives the reply and its claim, whose bytes are the reply's size and already counted.
  using Sink = std::function<void(std::string reply, ReplyClaim claim)>;

  ReplyFn() = default;
  ReplyFn(std::shared_ptr<ReplyBudget> budget, Sink sink)
      : budget_(std::move(budget)), sink_(std::move(sink)) {}
  // Reply `seq` of `target` (a connection), on the target's budget.
  ReplyFn(std::shared_ptr<ReplyTarget> target, uint64_t seq)
      : target_(std::move(target)), seq_(seq) {}
  // A reply with no budget (the command layer's own tests): claims always succeed.
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, ReplyFn> &&
                                                    std::is_invocable_v<F&, std::string>>>
  ReplyFn(F plain)  // NOLINT(google-explicit-constructor): any string callback is a reply
      : sink_([plain = std::move(plain)](std::string reply, ReplyClaim) mutable {
          plain(std::move(reply));
        }) {}

  // Claims `bytes` for a reply about to be built. nullopt: a limit was reached; build nothing
  // and reply with a short error (the connection is closed when it arrives).
  std::optional<ReplyClaim> Claim(size_t bytes) const;
  // A claim of nothing on this reply's budget, to Extend as a reply is gathered.
  ReplyClaim EmptyClaim() const { return ReplyClaim(budget(), 0); }
  // The most one reply may hold: a larger one can never be sent, whatever the client reads.
  size_t limit() const { return budget() ? budget()->limit() : std::numeric_limits<size_t>::max(); }

  // This reply, counted by `tally` into `stats` before it is handed over.
  ReplyFn Counted(const std::shared_ptr<CommandStats>& stats, ReplyTally tally) && {
    tally.stats = stats.get();
    if (target_ == nullptr || target_->stats() != stats.get()) tally.keep = stats;
    tally_ = std::move(tally);
    return std::move(*this);
  }

  // This reply, which shows its bytes to `observe` just before they are handed over (keyspace
  // notifications). Never built in place; the budget and the count stay this reply's.
  ReplyFn Observed(std::function<void(std::string_view reply)> observe) &&;
  // This reply, handed over empty whatever it was (CLIENT REPLY OFF / SKIP).
  ReplyFn Muted() &&;
  void operator()(std::string reply) const;                    // counted as it is handed over
  void operator()(std::string reply, ReplyClaim claim) const;  // built under `claim`
  // The reply, built under `claim` straight into its connection's output when that can be done
  // at once (ReplyTarget::BuildInPlace): true, and the reply is given. false: nothing was done;
  // build a string and call this as usual.
  bool BuildInPlace(ReplyClaim& claim, FunctionRef<void(std::string& out)> build) const;

 private:
  void Hand(std::string reply, ReplyClaim claim) const;
  // This reply, through `step` (which may change it) on its way.
  ReplyFn Through(std::function<void(std::string& reply)> step) &&;
  const std::shared_ptr<ReplyBudget>& budget() const {
    return target_ != nullptr ? target_->reply_budget() : budget_;
  }

  std::shared_ptr<ReplyBudget> budget_;  // with sink_; a target has its own
  Sink sink_;                            // or:
  std::shared_ptr<ReplyTarget> target_;  // with the request's number
  uint64_t seq_ = 0;
  std::optional<ReplyTally> tally_;
};

// The encoded size of a bulk string of `n` bytes ("$<n>\r\n...\r\n").
size_t BulkReplySize(size_t n);

// The error replied instead of a reply whose claim was refused; the client never sees it, as
// its connection is closed when the reply arrives.
inline constexpr std::string_view kReplyDropped =
    "ERR the reply was dropped: the reply memory limit was reached";

// The error for a reply that alone exceeds `limit` bytes; `hint` ends it ("" for none).
std::string ReplyTooLarge(size_t limit, std::string_view hint);

}  // namespace skydb::resp
