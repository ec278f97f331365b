// The openb layouts the FGD authors publish beside Alibaba's (hkust-adsl/
// kubernetes-scheduler-simulator data/csv/): the gpu_node node list and the short pod lists
// (multigpuNN: name..gpu_milli), read from the bundled copies and from hand-written text.
#include <gtest/gtest.h>

#include <string>

#include "bridges/trace/openb.hpp"
#include "bridges/trace/trace_set.hpp"

namespace colony::trace {
namespace {

const std::string traces = COLONY_TRACES_DIR;

TEST(OpenbLayouts, NodeListByName) {
  trace_set_options o;
  o.node_list = "gpu_node";
  o.skip = {"machine_usage.csv", "machine_meta.csv", "server_event.csv"};
  auto ts = load_trace_set(traces, o);
  ASSERT_TRUE(ts) << ts.error().describe();
  ASSERT_TRUE(ts->openb_nodes);
  EXPECT_EQ(ts->openb_nodes->rows.size(), 1213u);
  std::int64_t gpus = 0;
  for (const auto& n : ts->openb_nodes->rows) {
    EXPECT_GT(n.gpu, 0) << n.name;
    gpus += n.gpu;
  }
  EXPECT_EQ(gpus, 6212);
  EXPECT_EQ(ts->node_lists, (std::vector<std::string>{"all_node", "gpu_node"}));
  o.node_list = "cpu_node";
  auto missing = load_trace_set(traces, o);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::not_found);
  EXPECT_NE(missing.error().message.find("present: all_node, gpu_node"), std::string::npos);
}

TEST(OpenbLayouts, ShortPodListArrivesInFileOrderAndSaysWhatWasAssumed) {
  trace_set_options o;
  o.pod_list = "multigpu50";
  o.skip = {"machine_usage.csv", "machine_meta.csv", "server_event.csv"};
  auto ts = load_trace_set(traces, o);
  ASSERT_TRUE(ts) << ts.error().describe();
  const auto& t = *ts->openb_pods;
  ASSERT_EQ(t.rows.size(), 9061u);
  std::size_t multi = 0;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& p = t.rows[i];
    EXPECT_EQ(p.creation.value, static_cast<std::int64_t>(i) * 1000);
    EXPECT_EQ(p.deletion.value, 9061 * 1000);
    EXPECT_EQ(p.qos, openb_qos::ls);
    EXPECT_EQ(p.phase, openb_phase::running);
    ASSERT_TRUE(p.scheduled);
    EXPECT_EQ(p.line, i + 2);  // file order
    if (p.num_gpu > 1) ++multi;
  }
  EXPECT_EQ(multi, 556u + 222u + 206u);
  EXPECT_EQ(t.assumed.size(), 5u);
}

TEST(OpenbLayouts, ShortLayoutsKeepRowChecksAndOtherHeadersFail) {
  const std::string h5 = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  auto ok = parse_openb_pods(h5 + "p0,1000,10,1,500\np1,2000,20,0,0\n", "s.csv");
  ASSERT_TRUE(ok) << ok.error().describe();
  EXPECT_EQ(ok->rows[1].creation.value, 1000);
  // Eight columns: qos and phase read, times assumed.
  auto h8 = parse_openb_pods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase\np0,1,1,1,1000,T4,BE,"
      "Pending\n",
      "s8.csv");
  ASSERT_TRUE(h8) << h8.error().describe();
  EXPECT_EQ(h8->rows[0].qos, openb_qos::be);
  EXPECT_FALSE(h8->rows[0].scheduled);  // Pending: never bound
  EXPECT_EQ(h8->rows[0].gpu_spec, (std::vector<std::string>{"T4"}));
  EXPECT_EQ(h8->assumed.size(), 3u);
  // A bad row: strict stops at file:line:column, --skip-bad-rows counts and lists it.
  const std::string bad = h5 + "p0,1000,10,1,500\np1,abc,20,0,0\np2,1,1,0,0,extra\n";
  auto strict = parse_openb_pods(bad, "s.csv");
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().where, "s.csv:3:4");
  EXPECT_EQ(strict.error().message, "expected integer cpu_milli, got 'abc'");
  read_options skip;
  skip.skip_bad_rows = true;
  auto lenient = parse_openb_pods(bad, "s.csv", skip);
  ASSERT_TRUE(lenient);
  ASSERT_EQ(lenient->rows.size(), 1u);
  ASSERT_EQ(lenient->warnings.size(), 2u);
  EXPECT_EQ(lenient->warnings[0].where, "s.csv:3:4");
  EXPECT_EQ(lenient->warnings[1].where, "s.csv:4:12");  // the first extra field
  EXPECT_EQ(lenient->warnings[1].message, "expected 5 fields, got 6");
  // Other layouts: the strict header check names the first differing column.
  auto other = parse_openb_pods("name,cpu,memory_mib,num_gpu,gpu_milli\np,1,1,0,0\n", "o.csv");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().where, "o.csv:1:6");
  EXPECT_EQ(other.error().message, "expected header column 2 'cpu_milli', got 'cpu'");
  auto four = parse_openb_pods("name,cpu_milli,memory_mib,num_gpu\np,1,1,0\n", "f.csv");
  ASSERT_FALSE(four);
  EXPECT_EQ(four.error().where, "f.csv:1:34");  // end of the header line
}

}  // namespace
}  // namespace colony::trace
