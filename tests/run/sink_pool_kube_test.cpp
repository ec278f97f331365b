// run::sink_pool against a real kube-apiserver (label kube): a batch whose records alternate
// between objects is carried out on several connections, each object's records in log order.
// The check that can fail: every pod is bound and then evicted; an eviction overtaking its
// binding would evict a pending pod and leave the binding to a pod that is gone (404).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "run/sink_pool.hpp"
#include "tests/bridges/kubernetes/sink_records.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run {
namespace {

class SinkPool : public colony::run::testing::colony_run_test {};

TEST_F(SinkPool, KeepsEachObjectsRecordsInOrderOnEightConnections) {
  constexpr int pods = 40;
  make_node("n0", "64");
  make_node("n1", "64");
  for (int i = 0; i < pods; ++i) make_pod("p" + std::to_string(i));
  // Binding i at offset 2i+1, its eviction at 2i+2 (records of all pods interleaved).
  std::vector<messages::byte_buffer> recs;
  for (int i = 0; i < pods; ++i) {
    const std::string pod = ns + "/p" + std::to_string(i), node = i % 2 == 0 ? "n0" : "n1";
    recs.push_back(kube::testing::pod_scheduled(2 * i + 1, pod, node));
    recs.push_back(kube::testing::pod_evicted(2 * i + 2, pod, node));
  }
  std::vector<std::span<const std::uint8_t>> spans(recs.begin(), recs.end());
  auto pool = sink_pool::open(peer_->conn(), 8, kube::sink_options{});
  ASSERT_TRUE(pool) << pool.error().describe();
  const auto outs = (*pool)->apply(spans);
  ASSERT_EQ(outs.size(), recs.size());
  int bound = 0, evicted = 0;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    ASSERT_TRUE(outs[i]) << outs[i].error().describe();
    ASSERT_EQ(outs[i]->size(), 1u) << i;
    const auto& o = outs[i]->front();
    EXPECT_EQ(o.offset, i + 1);  // outcomes come back in record order
    EXPECT_TRUE(o.ok) << i << ": " << o.message;
    if (i % 2 == 0) {
      EXPECT_EQ(o.kind, kube::write_kind::binding);
      bound += o.ok && o.wrote ? 1 : 0;
    } else {
      EXPECT_EQ(o.kind, kube::write_kind::eviction);
      evicted += o.ok && o.wrote ? 1 : 0;
    }
  }
  EXPECT_EQ(bound, pods);
  EXPECT_EQ(evicted, pods);
  // Each pod carries the node its binding named, and is being deleted (no kubelet confirms).
  const auto l = get("/api/v1/namespaces/" + ns + "/pods");
  int terminating_on_node = 0;
  for (const auto& p : l.value("items", json::array())) {
    const auto name = p["metadata"]["name"].get<std::string>();
    const int i = std::stoi(name.substr(1));
    const bool on_node = p["spec"].value("nodeName", std::string{}) == (i % 2 == 0 ? "n0" : "n1");
    terminating_on_node += on_node && p["metadata"].contains("deletionTimestamp") ? 1 : 0;
  }
  EXPECT_EQ(terminating_on_node, pods);
  const auto c = (*pool)->counters();
  EXPECT_EQ(c.records, recs.size());
  EXPECT_EQ(c.writes, recs.size());
  EXPECT_EQ(c.failed, 0u);
}

}  // namespace
}  // namespace colony::run
