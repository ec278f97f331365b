// worker_pool: a small fixed pool. run(n, fn) calls fn(i) for i in [0, n) on the workers and
// the caller, and returns when every call is done. Which thread runs which i does not matter:
// fn writes only to slot i, so results never depend on the thread count.
//
// Jobs come often and are short (one virtual instant's node-scoped component steps, a
// scheduling cycle's Filter fan-out), so the hand-off avoids sleeping where it can: a job is
// one atomic ticket (generation, task count, next index) that threads claim tasks from by
// compare-and-swap; idle workers spin for spin_us before they sleep; the caller works too
// and then waits only for tasks already claimed, never for a worker that has not woken up. A
// claim names the generation, so a worker late from an earlier job never takes a task of the
// next one.
//
// Thread-safety: run(), start() and wait() are called by one thread (the owner).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace colony::entities {

class worker_pool {
 public:
  // threads: total threads including the caller (1 = no worker: run() is a plain loop).
  explicit worker_pool(std::size_t threads);
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  // A run() between start() and wait() first finishes the started job (the caller works on it
  // with the workers), then runs its own: a cluster-scoped component on the owner thread (the
  // scheduler's Filter fan-out) may use the pool while the node components' job is in flight.
  void run(std::size_t n, const std::function<void(std::size_t)>& fn);
  // run() in two halves, so the caller can do other work while the workers start on the job:
  // start() hands the job to the workers (fn must stay valid until wait() returns), wait() has
  // the caller work on what is left and returns when every call is done. Without workers,
  // or for a job under inline_below tasks, wait() runs the whole job. Every start() is
  // followed by one wait() before the next job.
  void start(std::size_t n, const std::function<void(std::size_t)>& fn);
  void wait();
  // Jobs of fewer tasks run on the caller alone: waking a worker costs more than a few tasks.
  static constexpr std::size_t inline_below = 8;
  // How long an idle worker spins for the next job before it sleeps. A scheduling cycle's
  // Filter job comes every few tens of microseconds while pods are placed, and a worker woken
  // from sleep arrives after the caller has done the job alone; longer spins only burn a core
  // the log's appender may want (docs/results.md has the measurements).
  static constexpr unsigned spin_us = 500;
  [[nodiscard]] std::size_t threads() const { return workers_.size() + 1; }

 private:
  void work(std::uint64_t gen);
  void loop();

  std::size_t pending_n_ = 0;  // the job between start() and wait() (its fn is fn_)
  bool started_ = false;       // handed to the workers (else wait() runs it)
  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t sleepers_ = 0;  // guarded by m_
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> ticket_{0};
  std::atomic<std::size_t> done_{0};
  const std::function<void(std::size_t)>* fn_ = nullptr;
  std::uint64_t gen_ = 0;  // the caller's
};

}  // namespace colony::entities
