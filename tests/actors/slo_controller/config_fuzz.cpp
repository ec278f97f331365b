// libFuzzer target for the slo-controller-config ConfigMap parser (built only with -DCOLONY_FUZZ=ON
// and clang: -fsanitize=fuzzer,address,undefined). Invariants: no crash or sanitizer report; every
// input yields a config in force plus either no error or an error naming at least one rejected key;
// what is in force for colocation-config is always a valid strategy.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "actors/slo_controller/node_resource.hpp"
#include "actors/slo_controller/slo_controller_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace colony::slo_controller;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto u = update(std::nullopt, text);
  if (u.error && u.rejected_keys.empty()) std::abort();
  if (!u.error && !u.rejected_keys.empty()) std::abort();
  if (u.in_force.colocation && !validate(u.in_force.colocation->cluster, "fuzz")) std::abort();
  // The same bytes as a single key's value, and as node annotations.
  (void)parse_colocation_config(text);
  (void)parse_resource_qos_config(text);
  (void)parse_node_reservation(text);
  (void)parse_third_party_allocations(text);
  (void)parse_quantity_milli(text);
  (void)cpuset_size(text);
  colocation_config cfg;
  node_labels labels{{"node.koordinator.sh/cpu-reclaim-ratio", std::string(text.substr(0, 32))}};
  (void)node_colocation_strategy(cfg, {&labels, text});
  return 0;
}
