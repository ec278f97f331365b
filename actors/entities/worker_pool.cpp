#include "actors/entities/worker_pool.hpp"

#include <chrono>

#include <pthread.h>

namespace colony::entities {

namespace {

constexpr std::uint64_t gen_mask = (1ull << 24) - 1;
constexpr std::uint64_t max_tasks = (1ull << 20) - 1;

std::uint64_t make_ticket(std::uint64_t gen, std::uint64_t n, std::uint64_t next) {
  return (gen << 40) | (n << 20) | next;
}

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

worker_pool::worker_pool(std::size_t threads) {
  for (std::size_t i = 1; i < threads; ++i)
    workers_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "colony-worker");  // for top/perf
      loop();
    });
}

worker_pool::~worker_pool() {
  stop_.store(true);
  {
    std::lock_guard lk(m_);
    cv_.notify_all();
  }
  for (auto& t : workers_) t.join();
}

void worker_pool::run(std::size_t n, const std::function<void(std::size_t)>& fn) {
  if (pending_n_ != 0) wait();
  start(n, fn);
  wait();
}

void worker_pool::start(std::size_t n, const std::function<void(std::size_t)>& fn) {
  pending_n_ = n;
  fn_ = &fn;  // stays valid until wait() returns
  started_ = !workers_.empty() && n >= inline_below && n <= max_tasks;
  if (!started_) return;  // wait() runs it on the caller
  done_.store(0, std::memory_order_relaxed);
  gen_ = (gen_ + 1) & gen_mask;
  if (gen_ == 0) gen_ = 1;  // 0 = "no job yet" for the workers
  ticket_.store(make_ticket(gen_, n, 0), std::memory_order_release);
  std::lock_guard lk(m_);
  if (sleepers_ > 0) cv_.notify_all();
}

void worker_pool::wait() {
  const std::size_t n = pending_n_;
  if (!started_) {
    for (std::size_t i = 0; i < n; ++i) (*fn_)(i);
  } else {
    work(gen_);
    for (unsigned spins = 0; done_.load(std::memory_order_acquire) != n; ++spins) {
      if (spins < 4096)
        pause();
      else
        std::this_thread::yield();
    }
  }
  pending_n_ = 0;
  started_ = false;
}

// Claims and runs tasks of job `gen` until none is left.
void worker_pool::work(std::uint64_t gen) {
  for (;;) {
    std::uint64_t t = ticket_.load(std::memory_order_acquire);
    if ((t >> 40) != gen) return;
    const std::uint64_t n = (t >> 20) & max_tasks, i = t & max_tasks;
    if (i >= n) return;
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) continue;
    (*fn_)(static_cast<std::size_t>(i));
    done_.fetch_add(1, std::memory_order_release);
  }
}

void worker_pool::loop() {
  using steady = std::chrono::steady_clock;
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t gen = seen;
    // Spin for the next job, then sleep.
    const auto until = steady::now() + std::chrono::microseconds(spin_us);
    for (unsigned k = 0; gen == seen; ++k) {
      if (stop_.load(std::memory_order_relaxed)) return;
      gen = ticket_.load(std::memory_order_acquire) >> 40;
      if (gen != seen) break;
      // Yield now and then: on a machine with as many threads busy as cores (the log appender,
      // RocksDB's flush), a spinning worker would keep them off the core it holds.
      if ((k & 15) == 15)
        std::this_thread::yield();
      else
        pause();
      if ((k & 63) == 63 && steady::now() > until) {
        std::unique_lock lk(m_);
        ++sleepers_;
        cv_.wait(lk, [&] {
          return stop_.load() || (ticket_.load(std::memory_order_acquire) >> 40) != seen;
        });
        --sleepers_;
        if (stop_.load()) return;
        gen = ticket_.load(std::memory_order_acquire) >> 40;
      }
    }
    seen = gen;
    work(gen);
  }
}

}  // namespace colony::entities
