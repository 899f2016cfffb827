// Reply budgets: lock-free counters shared by a connection's loop and the store's threads.
#include "resp/reply.h"

namespace skydb::resp {
namespace {

// Adds `bytes` to `held` unless the sum would pass `limit`.
bool AddWithin(std::atomic<size_t>& held, size_t bytes, size_t limit) {
  size_t current = held.load(std::memory_order_relaxed);
  do {
    if (current > limit || bytes > limit - current) return false;
  } while (!held.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  return true;
}

}  // namespace

bool ReplyMemory::TryAdd(size_t bytes) { return AddWithin(held_, bytes, limit_); }

void ReplyMemory::Sub(size_t bytes) {
  size_t before = held_.fetch_sub(bytes, std::memory_order_relaxed);
  if (before - bytes < limit_ / 2 && over_.load(std::memory_order_relaxed)) over_.store(false);
}

bool ReplyBudget::TryClaim(size_t bytes) {
  if (!AddWithin(held_, bytes, limit_)) {
    Refuse(ReplyLimit::kConnection, bytes);
    return false;
  }
  if (server_ != nullptr && !server_->TryAdd(bytes)) {
    held_.fetch_sub(bytes, std::memory_order_relaxed);
    Refuse(ReplyLimit::kServer, bytes);
    return false;
  }
  return true;
}

void ReplyBudget::Add(size_t bytes) {
  held_.fetch_add(bytes, std::memory_order_relaxed);
  if (server_ != nullptr) server_->Add(bytes);
}

void ReplyBudget::Release(size_t bytes) {
  held_.fetch_sub(bytes, std::memory_order_relaxed);
  if (server_ != nullptr) server_->Sub(bytes);
}

void ReplyBudget::Refuse(ReplyLimit limit, size_t bytes) {
  ReplyLimit none = ReplyLimit::kNone;
  refused_bytes_.store(bytes, std::memory_order_relaxed);  // for the log line only
  refused_.compare_exchange_strong(none, limit, std::memory_order_acq_rel);
}

ReplyClaim& ReplyClaim::operator=(ReplyClaim&& other) noexcept {
  if (this != &other) {
    Reset();
    budget_ = std::move(other.budget_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

bool ReplyClaim::Extend(size_t more) {
  if (budget_ == nullptr) return true;
  if (!budget_->TryClaim(more)) return false;
  bytes_ += more;
  return true;
}

void ReplyClaim::Resize(size_t bytes) {
  if (budget_ == nullptr) return;
  if (bytes > bytes_) budget_->Add(bytes - bytes_);
  if (bytes < bytes_) budget_->Release(bytes_ - bytes);
  bytes_ = bytes;
}

void ReplyClaim::Reset() {
  if (budget_ != nullptr && bytes_ > 0) budget_->Release(bytes_);
  bytes_ = 0;
  budget_.reset();
}

std::optional<ReplyClaim> ReplyFn::Claim(size_t bytes) const {
  const std::shared_ptr<ReplyBudget>& budget = this->budget();
  if (budget == nullptr) return ReplyClaim();
  if (!budget->TryClaim(bytes)) return std::nullopt;
  return ReplyClaim(budget, bytes);
}

void ReplyFn::operator()(std::string reply) const {
  if (tally_) CountReply(*tally_, reply);
  ReplyClaim claim;
  if (const std::shared_ptr<ReplyBudget>& budget = this->budget(); budget != nullptr) {
    budget->Add(reply.size());
    claim = ReplyClaim(budget, reply.size());
  }
  Hand(std::move(reply), std::move(claim));
}

void ReplyFn::operator()(std::string reply, ReplyClaim claim) const {
  if (!claim.has_budget()) return (*this)(std::move(reply));
  if (tally_) CountReply(*tally_, reply);
  claim.Resize(reply.size());
  Hand(std::move(reply), std::move(claim));
}

ReplyFn ReplyFn::Observed(std::function<void(std::string_view reply)> observe) && {
  return std::move(*this).Through(
      [observe = std::move(observe)](std::string& reply) { observe(reply); });
}

ReplyFn ReplyFn::Muted() && {
  return std::move(*this).Through([](std::string& reply) { reply.clear(); });
}

ReplyFn ReplyFn::Through(std::function<void(std::string& reply)> step) && {
  std::shared_ptr<ReplyBudget> budget = this->budget();
  auto inner = std::make_shared<ReplyFn>(std::move(*this));
  return ReplyFn(std::move(budget),
                 [inner, step = std::move(step)](std::string reply, ReplyClaim claim) {
                   step(reply);
                   (*inner)(std::move(reply), std::move(claim));
                 });
}

bool ReplyFn::BuildInPlace(ReplyClaim& claim, FunctionRef<void(std::string& out)> build) const {
  if (target_ == nullptr) return false;
  std::optional<std::string_view> built = target_->BuildInPlace(seq_, claim, build);
  if (!built) return false;
  if (tally_) CountReply(*tally_, *built);
  return true;
}

void ReplyFn::Hand(std::string reply, ReplyClaim claim) const {
  if (target_ != nullptr) return target_->Deliver(seq_, std::move(reply), std::move(claim));
  sink_(std::move(reply), std::move(claim));
}

size_t BulkReplySize(size_t n) { return n + std::to_string(n).size() + 5; }

std::string ReplyTooLarge(size_t limit, std::string_view hint) {
  std::string text =
      "ERR the reply would exceed the output buffer limit (resp.max_output_buffer = " +
      std::to_string(limit) + " bytes)";
  if (!hint.empty()) text += "; " + std::string(hint);
  return text;
}

}  // namespace skydb::resp
