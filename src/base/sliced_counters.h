// SlicedCounters: counters that a few threads add to very often and that are read rarely (a
// command's calls and time, once per command on a loop thread).
//
// A locked read-modify-write costs more than the rest of such bookkeeping, most of all right
// after a reply's bytes were copied (it waits for those stores to drain). So a thread that binds
// a slice adds to it with a plain load and store; no other thread writes that slice. A thread
// that has no slice (a store thread answering a reply, or one past the kSlices that bind) adds
// to the shared slice atomically. A read sums every slice; it may miss additions in flight.
//
// Thread-safety: Add and the reads from any thread; Bind/Unbind from the thread they concern.
// A thread keeps one binding per N (a loop thread serves one server): binding another object
// moves it there. A bound thread unbinds before the object is destroyed.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace skydb {

// Adds `n` to `counter`, which only the caller writes (its own slice, or one guarded by a lock
// it holds): a plain load and store, which readers on other threads see whole.
inline void AddAsOnlyWriter(std::atomic<uint64_t>& counter, uint64_t n) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

template <size_t N>
class SlicedCounters {
 public:
  static constexpr size_t kSlices = 16;

  // The calling thread adds to a slice of its own from now on, while one is free; false when
  // none is (it then adds to the shared slice). A slice is not reused after Unbind.
  bool BindThisThread() {
    size_t index = next_slice_.fetch_add(1, std::memory_order_relaxed);
    if (index >= kSlices) return false;
    bound_owner_ = this;
    bound_slice_ = &slices_[index];
    return true;
  }
  void UnbindThisThread() {
    if (bound_owner_ != this) return;
    bound_owner_ = nullptr;
    bound_slice_ = nullptr;
  }
  bool BoundHere() const { return bound_owner_ == this; }

  void Add(size_t i, uint64_t n) {
    if (bound_owner_ == this) return AddAsOnlyWriter(bound_slice_->values[i], n);
    shared_.values[i].fetch_add(n, std::memory_order_relaxed);
  }

  uint64_t Sum(size_t i) const {
    uint64_t sum = shared_.values[i].load(std::memory_order_relaxed);
    for (const Slice& slice : slices_) sum += slice.values[i].load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(64) Slice {
    std::array<std::atomic<uint64_t>, N> values{};
  };

  static inline thread_local const SlicedCounters* bound_owner_ = nullptr;
  static inline thread_local Slice* bound_slice_ = nullptr;

  std::array<Slice, kSlices> slices_{};
  Slice shared_{};
  std::atomic<size_t> next_slice_{0};
};

}  // namespace skydb
