// Readers for Alibaba cluster-trace-gpu-v2023 "openb" node and pod lists (CSV with header).
//
// Source: github.com/alibaba/clusterdata cluster-trace-gpu-v2023/csv/ (see
// traces/alibaba-gpu-v2023-openb/PROVENANCE.md). Units out are Colony's: CPU in milli-cores
// (openb already uses them), memory in bytes (openb MiB x 1 MiB), times in milliseconds of
// event time (openb seconds x 1000). Every pod-list variant has the same columns and is read by
// the same function, except the multigpuNN lists of the FGD authors' repository
// (hkust-adsl/kubernetes-scheduler-simulator data/csv/), which stop after gpu_milli: a header
// that is the first 5 or more columns of openb_pod_header is read with what it has, and
// trace_table::assumed says what was assumed for the rest (parse_openb_pods).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridges/trace/read_options.hpp"
#include "messages/resources.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::trace {

inline constexpr std::string_view openb_node_header = "sn,cpu_milli,memory_mib,gpu,model";
inline constexpr std::string_view openb_pod_header =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time";
inline constexpr std::size_t openb_pod_columns = 11;
// The fewest leading columns a pod list may have (name, cpu_milli, memory_mib, num_gpu,
// gpu_milli).
inline constexpr std::size_t openb_pod_min_columns = 5;

// openb qos column. LS ~ Koordinator LS (online), BE ~ Koordinator BE (batch); Burstable and
// Guaranteed are plain Kubernetes classes (the sim maps them by policy).
enum class openb_qos : std::uint8_t { ls, be, burstable, guaranteed };
// openb pod_phase column: the final phase seen in the trace.
enum class openb_phase : std::uint8_t { pending, running, succeeded, failed };

[[nodiscard]] std::string_view to_string(openb_qos q) noexcept;    // "LS", "BE", ...
[[nodiscard]] std::string_view to_string(openb_phase p) noexcept;  // "Running", ...

struct openb_node {
  std::string name;               // sn
  std::int64_t cpu_milli = 0;     // cpu_milli
  std::int64_t memory_bytes = 0;  // memory_mib x 1 MiB
  std::int32_t gpu = 0;           // number of GPU devices
  std::string gpu_model;          // model; empty for CPU-only nodes
  std::uint32_t line = 0;         // source line (diagnostics)

  // cpu, memory, and GPU as koordinator.sh/gpu (x100 per device) plus gpu-core and
  // gpu-memory-ratio (100 per device), as Koordinator's device plugin reports them.
  [[nodiscard]] resource_list capacity() const;
};

struct openb_pod {
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;  // memory_mib x 1 MiB
  std::int32_t num_gpu = 0;       // GPUs requested (0-8)
  // Share of each requested GPU in 1/1000 of a device (gpu_milli): 1000 = whole device.
  std::int32_t gpu_milli = 0;
  std::vector<std::string> gpu_spec;  // allowed GPU models (split on '|'); empty = any
  openb_qos qos = openb_qos::ls;
  openb_phase phase = openb_phase::pending;
  event_time creation{};                // creation_time x 1000
  event_time deletion{};                // deletion_time x 1000 (left the trace)
  std::optional<event_time> scheduled;  // scheduled_time x 1000; empty = never bound
  std::uint32_t line = 0;

  // Per-GPU share as a fraction of one device (gpu_milli / 1000).
  [[nodiscard]] double gpu_share() const { return gpu_milli / 1000.0; }
  // cpu, memory, and the GPU request in koordinator.sh/gpu units: num_gpu x gpu_milli / 10
  // (100 = one device), rounded up to a whole percent so a share is never under-requested;
  // gpu_core and gpu_memory_ratio carry the same value (Koordinator's GPU-share semantics).
  [[nodiscard]] resource_list requests() const;
};

// Parses from memory; file names the source in diagnostics.
[[nodiscard]] result<trace_table<openb_node>> parse_openb_nodes(std::string_view text,
                                                                std::string_view file,
                                                                const read_options& opt = {});
[[nodiscard]] result<trace_table<openb_pod>> parse_openb_pods(std::string_view text,
                                                              std::string_view file,
                                                              const read_options& opt = {});
[[nodiscard]] result<trace_table<openb_node>> read_openb_nodes(const std::string& path,
                                                               const read_options& opt = {});
[[nodiscard]] result<trace_table<openb_pod>> read_openb_pods(const std::string& path,
                                                             const read_options& opt = {});

}  // namespace colony::trace
