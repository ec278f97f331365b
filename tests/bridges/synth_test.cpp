// trace synth: determinism per seed, calibration sanity against the real openb / v2018
// extracts, invariants of every drawn pod, a write + load_trace_set round trip, and the
// 4,034-node x 8-day scale.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "bridges/trace/synth.hpp"
#include "bridges/trace/trace_set.hpp"

namespace colony::trace {
namespace {

namespace fs = std::filesystem;

// The bundled real extracts, loaded once.
const trace_set& real() {
  static const trace_set s = [] {
    auto r = load_trace_set(COLONY_TRACES_DIR);
    if (!r) throw std::runtime_error(r.error().describe());
    return std::move(*r);
  }();
  return s;
}

const synth_calibration& calib() {
  static const synth_calibration c = [] {
    auto r = calibrate(*real().openb_nodes, *real().openb_pods, *real().machine_usage);
    if (!r) throw std::runtime_error(r.error().describe());
    return std::move(*r);
  }();
  return c;
}

std::string all_usage(const synth_trace& t) {
  std::string s;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) append_usage_rows(t, calib(), i, s);
  return s;
}

TEST(TraceSynth, CalibrationFromRealExtracts) {
  const auto& c = calib();
  EXPECT_EQ(c.node_shapes.size(), 1523u);
  EXPECT_EQ(c.pod_shapes.size(), 8152u);
  EXPECT_EQ(c.curves.size(), 8u);
  // 33 pods precede the busy window (PROVENANCE): 8152 - 33 - 1 gaps inside it.
  EXPECT_EQ(c.inter_arrival_s.size(), 8152u - 33u - 1u);
  EXPECT_EQ(c.sources.size(), 3u);
}

TEST(TraceSynth, SameSeedSameBytesOtherSeedOtherBytes) {
  synth_params p;
  p.nodes = 50;
  p.pods = 2000;
  p.days = 2;
  p.seed = 7;
  auto a = synthesize(calib(), p);
  auto b = synthesize(calib(), p);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(format_openb_nodes(a->nodes), format_openb_nodes(b->nodes));
  EXPECT_EQ(format_openb_pods(a->pods), format_openb_pods(b->pods));
  EXPECT_EQ(all_usage(*a), all_usage(*b));
  p.seed = 8;
  auto c = synthesize(calib(), p);
  ASSERT_TRUE(c);
  EXPECT_NE(format_openb_pods(a->pods), format_openb_pods(c->pods));
  EXPECT_NE(format_openb_nodes(a->nodes), format_openb_nodes(c->nodes));
  EXPECT_NE(all_usage(*a), all_usage(*c));
}

TEST(TraceSynth, PodCountDoesNotChangeNodes) {
  synth_params p;
  p.nodes = 100;
  p.pods = 10;
  auto a = synthesize(calib(), p);
  p.pods = 5000;
  auto b = synthesize(calib(), p);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(format_openb_nodes(a->nodes), format_openb_nodes(b->nodes));
  EXPECT_EQ(all_usage(*a), all_usage(*b));
}

TEST(TraceSynth, CalibrationSanity) {
  synth_params p;
  p.nodes = 4034;
  p.pods = 40000;
  p.days = 8;
  p.seed = 11;
  auto t = synthesize(calib(), p);
  ASSERT_TRUE(t) << t.error().describe();
  auto mean = [](const auto& rows, auto f) {
    double s = 0;
    for (const auto& r : rows) s += static_cast<double>(f(r));
    return s / static_cast<double>(rows.size());
  };
  const auto& real_pods = real().openb_pods->rows;
  const auto& real_nodes = real().openb_nodes->rows;
  auto cpu = [](const auto& r) { return r.cpu_milli; };
  auto mem = [](const auto& r) { return r.memory_bytes; };
  auto gpu = [](const auto& r) { return r.num_gpu > 0 ? 1 : 0; };
  auto ls = [](const openb_pod& r) { return r.qos == openb_qos::ls ? 1 : 0; };
  auto be = [](const openb_pod& r) { return r.qos == openb_qos::be ? 1 : 0; };
  EXPECT_NEAR(mean(t->pods, cpu) / mean(real_pods, cpu), 1.0, 0.10);
  EXPECT_NEAR(mean(t->pods, mem) / mean(real_pods, mem), 1.0, 0.10);
  EXPECT_NEAR(mean(t->pods, gpu), mean(real_pods, gpu), 0.03);
  EXPECT_NEAR(mean(t->pods, ls), mean(real_pods, ls), 0.03);
  EXPECT_NEAR(mean(t->pods, be), mean(real_pods, be), 0.03);
  EXPECT_NEAR(mean(t->nodes, cpu) / mean(real_nodes, cpu), 1.0, 0.10);
  EXPECT_NEAR(mean(t->nodes, mem) / mean(real_nodes, mem), 1.0, 0.10);
  auto gpus = [](const openb_node& n) { return n.gpu > 0 ? 1 : 0; };
  EXPECT_NEAR(mean(t->nodes, gpus), mean(real_nodes, gpus), 0.03);
  // Arrivals fill the span: half the pods have arrived near the middle, give or take the
  // burstiness of the real arrival process.
  const std::int64_t span_ms = 8 * 86'400'000LL;
  EXPECT_GT(t->pods[t->pods.size() / 2].creation.value, span_ms / 5);
  EXPECT_LT(t->pods[t->pods.size() / 2].creation.value, span_ms * 4 / 5);
  // Median lifetime stays close to openb's 540 s (clipping only touches the long tail).
  std::vector<std::int64_t> life;
  for (const auto& q : t->pods) life.push_back((q.deletion.value - q.creation.value) / 1000);
  std::nth_element(life.begin(), life.begin() + life.size() / 2, life.end());
  EXPECT_NEAR(static_cast<double>(life[life.size() / 2]), 540.0, 200.0);
}

TEST(TraceSynth, EveryPodIsConsistent) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    synth_params p;
    p.nodes = 10;
    p.pods = 3000;
    p.days = 1 + static_cast<std::int64_t>(seed % 3);
    p.seed = seed;
    auto t = synthesize(calib(), p);
    ASSERT_TRUE(t);
    const std::int64_t span_ms = p.days * 86'400'000LL;
    for (std::size_t i = 0; i < t->pods.size(); ++i) {
      const auto& q = t->pods[i];
      ASSERT_GE(q.creation.value, 0);
      ASSERT_LT(q.creation.value, span_ms);
      ASSERT_LE(q.creation, q.deletion);
      ASSERT_LE(q.deletion.value, span_ms);
      if (i > 0) {
        ASSERT_LE(t->pods[i - 1].creation, q.creation);
      }
      ASSERT_EQ(!q.scheduled, q.phase == openb_phase::pending) << q.name;
      if (q.scheduled) {
        ASSERT_GE(*q.scheduled, q.creation);
        ASSERT_LE(*q.scheduled, q.deletion);
      }
    }
  }
}

TEST(TraceSynth, RejectsBadParameters) {
  synth_params p;
  p.days = 0;
  auto t = synthesize(calib(), p);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, errc::invalid_input);
  EXPECT_FALSE(synthesize(synth_calibration{}, synth_params{}));
}

TEST(TraceSynth, WriteAndLoadBack) {
  fs::path d = fs::path(testing::TempDir()) / "colony_trace_synth_roundtrip";
  fs::remove_all(d);
  synth_params p;
  p.nodes = 30;
  p.pods = 500;
  p.days = 1;
  p.seed = 3;
  p.usage_step_s = 600;
  auto t = synthesize(calib(), p);
  ASSERT_TRUE(t);
  auto files = write_synthetic(d.string(), *t, calib());
  ASSERT_TRUE(files) << files.error().describe();
  EXPECT_EQ(files->size(), 5u);
  for (const char* f : {"SYNTHETIC.md", "PROVENANCE.md"}) {
    std::ifstream in(d / f);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_NE(ss.str().find("seed: 3"), std::string::npos) << f;
    EXPECT_NE(ss.str().find("SYNTHETIC"), std::string::npos) << f;
  }
  auto s = load_trace_set(d.string());
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_TRUE(s->synthetic);
  ASSERT_TRUE(s->openb_nodes && s->openb_pods && s->machine_usage);
  ASSERT_EQ(s->openb_nodes->rows.size(), 30u);
  ASSERT_EQ(s->openb_pods->rows.size(), 500u);
  EXPECT_EQ(s->machine_usage->rows.size(), 30u * 144u);  // 86400 s / 600 s per node
  for (std::size_t i = 0; i < 30; ++i) {
    EXPECT_EQ(s->openb_nodes->rows[i].name, t->nodes[i].name);
    EXPECT_EQ(s->openb_nodes->rows[i].memory_bytes, t->nodes[i].memory_bytes);
  }
  for (std::size_t i = 0; i < 500; ++i) {
    const auto& a = s->openb_pods->rows[i];
    const auto& b = t->pods[i];
    ASSERT_EQ(a.name, b.name);
    EXPECT_EQ(a.cpu_milli, b.cpu_milli);
    EXPECT_EQ(a.gpu_milli, b.gpu_milli);
    EXPECT_EQ(a.qos, b.qos);
    EXPECT_EQ(a.creation, b.creation);
    EXPECT_EQ(a.scheduled, b.scheduled);
  }
  // The synthetic usage is itself a valid input for the usage model.
  EXPECT_EQ(extract_usage_curves(s->machine_usage->rows).size(), 30u);
}

TEST(TraceSynth, ScalesTo4034NodesFor8Days) {
  synth_params p;
  p.nodes = 4034;
  p.pods = 100000;
  p.days = 8;
  auto t = synthesize(calib(), p);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->nodes.back().name, "synth-node-4033");
  EXPECT_EQ(t->pods.back().name, "synth-pod-99999");
  // Stream the machine_usage rows as write_synthetic does, without keeping them.
  std::string buf;
  std::size_t rows = 0, bytes = 0;
  for (std::size_t i = 0; i < t->nodes.size(); ++i) {
    buf.clear();
    append_usage_rows(*t, calib(), i, buf);
    rows += static_cast<std::size_t>(std::count(buf.begin(), buf.end(), '\n'));
    bytes += buf.size();
  }
  EXPECT_EQ(rows, 4034u * 2304u);  // 8 days / 300 s
  EXPECT_GT(bytes, 0u);
}

}  // namespace
}  // namespace colony::trace
