// The sim's report folded from the written log: a metrics observer.
//
// Fed every event of a log in offset order, and told when a metrics instant comes, it produces
// the sim's report (metrics.csv rows, quota.csv rows and every section of summary.json that
// describes the run) from the events alone: counters by payload, cluster totals folded from
// bindings, releases, NodeMetric reports and batch allocatable updates, FGD fragmentation from the
// nodes' GPUs and requests, quota rows from QuotaRuntimeUpdated and the specs of QuotaUpserted.
// What the log cannot say is an input: the usage model's "used = allocated" rule, the trace's FGD
// task classes and pod count, and the descriptions of the config and trace (summary_header).
// Nothing reads a clock.
//
// Cost: per event, a switch on the payload type and, for pod and node events, one hash lookup
// by key (no allocation once a pod or node is known); per pod ~150 bytes, per node its GPUs.
// Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/trace/openb.hpp"
#include "bridges/trace/trace_set.hpp"
#include "colony_generated.h"
#include "sim/driver.hpp"

namespace colony::sim {

// An FGD (Weng et al., ATC'23) task class: the trace's pods grouped by (num_gpu, gpu_milli),
// with their share of the pod list and median cpu / memory request.
struct fgd_task_class {
  std::int32_t num_gpu = 0, gpu_milli = 0;
  std::int64_t cpu = 0, mem = 0;
  double weight = 0;
};
// The classes of a pod list, ordered by (num_gpu, gpu_milli).
[[nodiscard]] std::vector<fgd_task_class> fgd_task_classes(std::span<const trace::openb_pod> pods);

struct observer_options {
  // Usage model none: pods use what they request, so cpu/memory used = allocated and batch used
  // = batch allocated (the log then holds no NodeMetric to read usage from).
  bool usage_is_allocation = false;
  std::vector<fgd_task_class> task_classes;
  std::uint64_t pods_in_trace = 0;  // summary pods.in_trace (the trace's pod list)
};

// What summary.json says that is not in the log: the run's inputs and the entity fold.
// summary.json's "trace" section: the trace's files, sizes and the bad rows skipped (at most 50
// warnings listed), with the run's node, pod and usage-curve counts.
[[nodiscard]] nlohmann::ordered_json trace_section(const trace::trace_set& t, std::size_t nodes,
                                                   std::size_t pods, std::size_t usage_curves);

struct summary_header {
  nlohmann::ordered_json config;  // summary "config"
  nlohmann::ordered_json trace;   // summary "trace"
  std::uint64_t state_digest = 0;
  std::uint64_t entities = 0;
};

class metrics_observer {
 public:
  explicit metrics_observer(observer_options opt);
  ~metrics_observer();
  metrics_observer(const metrics_observer&) = delete;
  metrics_observer& operator=(const metrics_observer&) = delete;
  metrics_observer(metrics_observer&&) noexcept;
  metrics_observer& operator=(metrics_observer&&) noexcept;

  // One event, in offset order. REQUIRES: env passed messages::decode() (verified).
  void on_event(const wire::Envelope& env);
  // The same from the record's bytes, which also counts them into the log's size and byte digest
  // (summary events.bytes / log_byte_digest). REQUIRES: record verified.
  void on_record(std::span<const std::uint8_t> record);

  // A metrics instant: appends a metrics row and one quota row per quota with a status. The row
  // reflects every event fed so far (feed the quota controller's QuotaRuntimeUpdated of this
  // instant first).
  void sample(std::int64_t time_ms);

  [[nodiscard]] const std::vector<metrics_row>& rows() const;
  // quota.csv order: quota-major (by name), each quota's rows in time order.
  [[nodiscard]] std::vector<quota_row> quota_rows() const;
  // summary.json: the header's parts, and every other section folded from the log.
  [[nodiscard]] nlohmann::ordered_json summary(const summary_header& h) const;
  [[nodiscard]] std::uint64_t events() const;

 private:
  struct impl;
  std::unique_ptr<impl> d_;
};

}  // namespace colony::sim
