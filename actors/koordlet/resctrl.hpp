// Resctrl QoS: the L3 cache-way mask (CAT) and the memory-bandwidth limit (MBA) of Koordinator's
// resctrl groups LSR, LS and BE from resourceQOSStrategy.<class>.resctrlQOS and the machine's
// resctrl info, and which group a pod's tasks join.
//
// Koordinator: pkg/koordlet/qosmanager/plugins/resctrl/resctrl_reconcile.go (getPodResctrlGroup,
// calculateMbaPercentForGroup, calculateIntel, calculateAMDMba, reconcileRDTResctrlPolicy),
// pkg/koordlet/util/system/resctrl.go (CalculateCatL3MaskValue, ResctrlSchemataRaw L3String /
// MBString), defaults in pkg/util/sloconfig/nodeslo_config.go (DefaultResctrlQOS).
// Pure; thread-safety: none needed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/koordlet/koordlet_types.hpp"
#include "messages/result.hpp"

namespace colony::koordlet {

// Koordinator's group directory names under the resctrl root (LSRResctrlGroup, ...).
inline constexpr std::string_view resctrl_group_lsr = "LSR";
inline constexpr std::string_view resctrl_group_ls = "LS";
inline constexpr std::string_view resctrl_group_be = "BE";

// <class>.resctrlQOS of ResourceQOSStrategy.
struct resctrl_qos {
  bool enable = false;                       // Default: false (every class)
  std::int64_t cat_range_start_percent = 0;  // Default: 0 (every class)
  std::int64_t cat_range_end_percent = 100;  // Default: LSR 100, LS 100, BE 30
  std::int64_t mba_percent = 100;            // Default: 100 (every class)
  bool operator==(const resctrl_qos&) const = default;
};

struct resource_qos_resctrl_strategy {
  resctrl_qos lsr_class{false, 0, 100, 100};
  resctrl_qos ls_class{false, 0, 100, 100};
  resctrl_qos be_class{false, 0, 30, 100};
  bool operator==(const resource_qos_resctrl_strategy&) const = default;
};

// What <resctrl root>/info and the root group's schemata say about the machine.
struct resctrl_info {
  bool l3 = false;                   // info/L3 exists (CAT)
  std::uint64_t cbm_mask = 0;        // info/L3/cbm_mask, hex: every way of the cache
  std::int64_t min_cbm_bits = 1;     // info/L3/min_cbm_bits
  std::vector<std::int32_t> l3_ids;  // the root schemata's L3 cache ids, ascending
  bool mb = false;                   // info/MB exists (MBA)
  std::int64_t min_bandwidth = 10;   // info/MB/min_bandwidth (percent)
  std::int64_t bandwidth_gran = 10;  // info/MB/bandwidth_gran (percent)
  std::vector<std::int32_t> mb_ids;  // the root schemata's MB domain ids, ascending
  bool amd = false;  // /proc/cpuinfo vendor_id AuthenticAMD: MB values are in 1/8 GB/s
  bool operator==(const resctrl_info&) const = default;
};

// AMD's MB bound (AMDCCDMaxMBGbps: 25 x 8 x 0.8, measured on EPYC Milan) and its "unlimited".
inline constexpr double amd_ccd_max_mb_gbps = 25 * 8 * 0.8;
inline constexpr std::int64_t amd_ccd_unlimited_mb = 2048;

// CalculateCatL3MaskValue: the ways [ceil(ways x start / 100), ceil(ways x end / 100)) of a cache
// with `cbm` (all ways; every bit set, lowest first) as a mask. invalid_input when cbm is not
// 2^n - 1 or the range is not 0 <= start < end <= 100.
[[nodiscard]] result<std::uint64_t> cat_l3_mask(std::uint64_t cbm, std::int64_t start_percent,
                                                std::int64_t end_percent);

// calculateMbaPercentForGroup: nullopt where Koordinator leaves MB alone (percent outside
// [1, 100]). Intel: rounded up to a multiple of bandwidth_gran (Koordinator: of 10, the
// bandwidth_gran of every Intel part), raised to min_bandwidth (the kernel refuses less). AMD:
// 2048 (unlimited) at 100, else max x percent / 100 in 1/8 GB/s, truncated.
[[nodiscard]] std::optional<std::int64_t> mba_value(std::int64_t percent, const resctrl_info& info);

// The group's schemata: "L3:<id>=<mask hex>;..." over the L3 cache ids and "MB:<id>=<value>;..."
// over the MB domains, one line each, joined by '\n', each only where the machine has it (and MB
// only where mba_value gives one). invalid_input naming the group's resctrlQOS field when the
// CAT range or the cbm mask is refused by cat_l3_mask, or the mask has fewer ways than
// min_cbm_bits. Empty when the machine has neither.
[[nodiscard]] result<std::string> group_schemata(std::string_view group, const resctrl_qos& q,
                                                 const resctrl_info& info);

// getPodResctrlGroup over GetPodQoSClassWithDefault: LSE and LSR -> "LSR", LS -> "LS", BE ->
// "BE", else "" (SYSTEM, none: no group).
[[nodiscard]] std::string_view resctrl_group_of(const pod_info& pod) noexcept;

// The class of a group: LSR lsrClass, LS lsClass, BE beClass.
[[nodiscard]] const resctrl_qos& resctrl_qos_of(const resource_qos_resctrl_strategy& s,
                                                std::string_view group) noexcept;

// One group's decision in a reconcile round (reconcileRDTResctrlPolicy, reconcileResctrlGroups).
struct resctrl_group_decision {
  std::string_view group;               // "LSR", "LS", "BE"
  std::optional<std::string> schemata;  // nullopt: no info, or refused (error)
  std::optional<error> schemata_error;  // group_schemata's error
  bool assign_tasks = false;            // the group's class has resctrlQOS.enable
  std::vector<std::string> pod_uids;    // its active pods' uids, ascending
};

// The three groups in Koordinator's order (LSR, LS, BE): every group's schemata where `info` is
// known (Koordinator writes them for every group, enabled or not), and the active pods of each
// enabled class (pods in no group, finished or evicted are left out). REQUIRES: pods' uids set.
[[nodiscard]] std::vector<resctrl_group_decision> resctrl_decisions(
    const resource_qos_resctrl_strategy& s, const std::optional<resctrl_info>& info,
    std::span<const pod_info> pods);

// Whether any class enables resctrlQOS.
[[nodiscard]] bool resctrl_enabled(const resource_qos_resctrl_strategy& s) noexcept;

// A schemata file's lines parsed: resource ("L3", "MB") -> (domain id -> value as written,
// lower-case), as ParseResctrlSchemataMap. invalid_input naming `where` and the line on a
// malformed line.
struct schemata_line {
  std::string resource;
  std::vector<std::pair<std::int32_t, std::string>> domains;  // by id, ascending
  bool operator==(const schemata_line&) const = default;
};
[[nodiscard]] result<std::vector<schemata_line>> parse_schemata(std::string_view text,
                                                                std::string_view where);

// Whether two schemata values of one resource are the same: L3 masks as hex numbers (the kernel
// pads them to the mask's width), others as decimal numbers.
[[nodiscard]] bool same_schemata_value(std::string_view resource, std::string_view a,
                                       std::string_view b) noexcept;

}  // namespace colony::koordlet
