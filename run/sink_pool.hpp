// sink_pool: decision records carried out on several API connections at once.
//
// One decision_sink writes one request at a time; each binding then waits for the
// apiserver's answer (~1.5 ms here) before the next starts. The writes of different objects
// are independent, so the pool runs n sinks, each on its own thread and connection, and gives
// every record to the sink the object it writes hashes to (the pod of a PodScheduled, which the
// log keys by its node; the entity otherwise, so a node's NodeBatchResourceUpdated and
// NodeSLOUpdated go by the node's name): the records of one object (a pod's binding, then its
// eviction; a node's NodeSLO writes) stay in log order on one connection, the others overlap.
// kube-scheduler binds in goroutines for the same reason (pkg/scheduler/schedule_one.go,
// bindingCycle runs asynchronously).
//
//   auto pool = run::sink_pool::open(conn, 16, {});
//   auto outcomes = pool->apply(batch);  // every record carried out, outcomes in record order
//
// Thread-safety: apply() from one thread at a time; it returns when every record of the batch
// has been carried out.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "bridges/kubernetes/sink.hpp"
#include "messages/result.hpp"

namespace colony::run {

class sink_pool {
 public:
  // n >= 1 sinks on n connections.
  [[nodiscard]] static result<std::unique_ptr<sink_pool>> open(const kube::connection& conn,
                                                               std::size_t n,
                                                               const kube::sink_options& opt);
  ~sink_pool();
  sink_pool(const sink_pool&) = delete;
  sink_pool& operator=(const sink_pool&) = delete;

  // Carries out the records (verified-on-entry log records). The result has one entry per
  // record, in record order: its outcomes, or the error that kept it from being read.
  [[nodiscard]] std::vector<result<std::vector<kube::write_outcome>>> apply(
      std::span<const std::span<const std::uint8_t>> records);

  // Counters summed over the sinks.
  [[nodiscard]] kube::sink_counters counters() const;

 private:
  struct impl;
  explicit sink_pool(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace colony::run
