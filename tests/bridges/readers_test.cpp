// Trace readers: bundled real files (counts from each PROVENANCE.md, spot values), the
// documented bad-row cases (strict error with file:line:column, or counted warning with
// skip_bad_rows), CRLF, unsorted input, sentinels and empty fields.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "bridges/trace/alibaba_v2017.hpp"
#include "bridges/trace/alibaba_v2018.hpp"
#include "bridges/trace/openb.hpp"

namespace colony::trace {
namespace {

const std::string traces = COLONY_TRACES_DIR;
const std::string fixtures = COLONY_TRACE_FIXTURES;
const std::string openb_dir = traces + "/alibaba-gpu-v2023-openb/";
const std::string v2018_dir = traces + "/alibaba-v2018-machine/";

// ---- bundled real files -------------------------------------------------------------

TEST(OpenbReader, NodeListMatchesProvenance) {
  auto t = read_openb_nodes(openb_dir + "openb_node_list_all_node.csv");
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->rows.size(), 1523u);
  EXPECT_TRUE(t->warnings.empty());
  const auto& first = t->rows.front();
  EXPECT_EQ(first.name, "openb-node-0000");
  EXPECT_EQ(first.cpu_milli, 32000);
  EXPECT_EQ(first.memory_bytes, 262144 * mib);
  EXPECT_EQ(first.gpu, 0);
  EXPECT_EQ(first.gpu_model, "");
  EXPECT_EQ(first.line, 2u);
  const auto& last = t->rows.back();
  EXPECT_EQ(last.name, "openb-node-1522");
  EXPECT_EQ(last.cpu_milli, 96000);
  EXPECT_EQ(last.memory_bytes, 393216 * mib);
  EXPECT_EQ(last.gpu, 8);
  EXPECT_EQ(last.gpu_model, "G2");
  EXPECT_EQ(last.capacity().gpu, 800);
  // PROVENANCE: 1,213 GPU nodes (G2 549, T4 404, P100 134, V100M16 55, G3 39, V100M32 30, A10 2).
  std::map<std::string, int> models;
  for (const auto& n : t->rows)
    if (n.gpu > 0) ++models[n.gpu_model];
  EXPECT_EQ(models, (std::map<std::string, int>{{"A10", 2},
                                                {"G2", 549},
                                                {"G3", 39},
                                                {"P100", 134},
                                                {"T4", 404},
                                                {"V100M16", 55},
                                                {"V100M32", 30}}));
}

TEST(OpenbReader, DefaultPodListMatchesProvenance) {
  auto t = read_openb_pods(openb_dir + "openb_pod_list_default.csv");
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->rows.size(), 8152u);
  std::map<openb_qos, int> qos;
  std::map<openb_phase, int> phase;
  std::map<int, int> num_gpu;
  int pending_unscheduled = 0;
  for (const auto& p : t->rows) {
    ++qos[p.qos];
    ++phase[p.phase];
    ++num_gpu[p.num_gpu];
    if (!p.scheduled) {
      EXPECT_EQ(p.phase, openb_phase::pending) << p.name;
      ++pending_unscheduled;
    }
  }
  EXPECT_EQ(qos[openb_qos::ls], 4647);
  EXPECT_EQ(qos[openb_qos::be], 3398);
  EXPECT_EQ(qos[openb_qos::burstable], 100);
  EXPECT_EQ(qos[openb_qos::guaranteed], 7);
  EXPECT_EQ(phase[openb_phase::running], 5193);
  EXPECT_EQ(phase[openb_phase::failed], 1870);
  EXPECT_EQ(phase[openb_phase::pending], 897);
  EXPECT_EQ(phase[openb_phase::succeeded], 192);
  EXPECT_EQ(pending_unscheduled, 897);
  EXPECT_EQ(num_gpu, (std::map<int, int>{{0, 1088}, {1, 6989}, {2, 16}, {4, 15}, {8, 44}}));
  // openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
  const auto& p1 = t->rows[1];
  EXPECT_EQ(p1.name, "openb-pod-0001");
  EXPECT_EQ(p1.cpu_milli, 6000);
  EXPECT_EQ(p1.memory_bytes, 12288 * mib);
  EXPECT_EQ(p1.gpu_milli, 460);
  EXPECT_DOUBLE_EQ(p1.gpu_share(), 0.46);
  EXPECT_EQ(p1.requests().gpu, 46);
  EXPECT_EQ(p1.creation, event_time{427061000});
  EXPECT_EQ(p1.deletion, event_time{12902960000});
  EXPECT_EQ(p1.scheduled, event_time{427061000});
  EXPECT_TRUE(p1.gpu_spec.empty());
  // The one pod that requests 0 MiB (openb-pod-1523): 0 bytes, not missing.
  bool seen = false;
  for (const auto& p : t->rows)
    if (p.name == "openb-pod-1523") {
      seen = true;
      EXPECT_EQ(p.memory_bytes, 0);
      EXPECT_EQ(p.qos, openb_qos::burstable);
      EXPECT_EQ(p.phase, openb_phase::succeeded);
    }
  EXPECT_TRUE(seen);
}

TEST(OpenbReader, EveryPodListVariantReadsAndSorts) {
  const std::map<std::string, std::size_t> rows = {
      {"default", 8152}, {"cpu050", 7439}, {"gpushare40", 8152}, {"gpuspec33", 8152}};
  for (const auto& [variant, n] : rows) {
    auto t = read_openb_pods(openb_dir + "openb_pod_list_" + variant + ".csv");
    ASSERT_TRUE(t) << variant << ": " << t.error().describe();
    EXPECT_EQ(t->rows.size(), n) << variant;
    for (std::size_t i = 1; i < t->rows.size(); ++i) {
      ASSERT_LE(t->rows[i - 1].creation, t->rows[i].creation) << variant << " row " << i;
      if (t->rows[i - 1].creation == t->rows[i].creation) {
        ASSERT_LT(t->rows[i - 1].line, t->rows[i].line) << variant << ": ties keep file order";
      }
    }
  }
}

TEST(OpenbReader, GpuSpecSplitsOnBar) {
  auto t = read_openb_pods(openb_dir + "openb_pod_list_gpuspec33.csv");
  ASSERT_TRUE(t) << t.error().describe();
  int with_spec = 0;
  bool repeated = false;
  for (const auto& p : t->rows) {
    if (!p.gpu_spec.empty()) ++with_spec;
    if (p.gpu_spec == std::vector<std::string>{"V100M16", "V100M32", "V100M32"}) repeated = true;
  }
  EXPECT_EQ(with_spec, 2388);  // PROVENANCE: gpu_spec filled for 2,388 pods
  EXPECT_TRUE(repeated);       // kept as written, repeats included
}

TEST(OpenbReader, UnsortedVariantIsSortedByCreation) {
  // cpu050 is not time-sorted in the file: openb-pod-0001 (10821883 s) precedes later rows.
  read_options keep;
  keep.sort_by_time = false;
  auto raw = read_openb_pods(openb_dir + "openb_pod_list_cpu050.csv", keep);
  ASSERT_TRUE(raw);
  bool unsorted = false;
  for (std::size_t i = 1; i < raw->rows.size(); ++i)
    unsorted |= raw->rows[i].creation < raw->rows[i - 1].creation;
  EXPECT_TRUE(unsorted);
  EXPECT_EQ(raw->rows[1].name, "openb-pod-0001");
}

TEST(V2018Reader, MachineMetaMatchesProvenance) {
  auto t = read_v2018_machine_meta(v2018_dir + "machine_meta.csv");
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->rows.size(), 17592u);
  std::set<std::string> machines;
  int installing = 0, no_fd2 = 0;
  for (const auto& r : t->rows) {
    machines.insert(r.machine_id);
    installing += r.status == "IMPORT_INSTALLING";
    no_fd2 += r.failure_domain_2.empty();
    ASSERT_EQ(r.cpu_milli, 96000);
    ASSERT_EQ(r.mem_size, 100.0);
    ASSERT_EQ(r.memory_bytes, 512 * gib);  // default full scale
  }
  EXPECT_EQ(machines.size(), 4034u);
  EXPECT_EQ(installing, 5);
  EXPECT_EQ(no_fd2, 34);
  EXPECT_EQ(t->missing_values, 34u);
  EXPECT_EQ(t->rows.back().time, event_time{696633000});
  // m_1,0,219,17,96,100,USING is the first row of the file and of the earliest time.
  EXPECT_EQ(t->rows.front().machine_id, "m_1");
  EXPECT_EQ(t->rows.front().failure_domain_1, 219);
  EXPECT_EQ(t->rows.front().failure_domain_2, "17");
}

TEST(V2018Reader, MachineUsageMatchesProvenance) {
  auto t = read_v2018_machine_usage(v2018_dir + "machine_usage.csv");
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->rows.size(), 51362u);
  EXPECT_EQ(t->invalid_values, 11u);     // disk_io_percent: -1 in 4 rows, 101 in 7
  EXPECT_EQ(t->missing_values, 79676u);  // mem_gps and mkpi empty in 39,838 rows each
  std::set<std::string> machines;
  for (std::size_t i = 0; i < t->rows.size(); ++i) {
    machines.insert(t->rows[i].machine_id);
    if (i > 0) {
      ASSERT_LE(t->rows[i - 1].time, t->rows[i].time);
    }
  }
  EXPECT_EQ(machines.size(), 8u);
  EXPECT_EQ(t->rows.back().time, event_time{691180000});
  // Sorted by time, ties by file order: at t=140 s the first row is m_1933's.
  // m_1933,140,5,91,,,22.79,18.12,1
  const v2018_machine_usage* r = nullptr;
  for (const auto& u : t->rows)
    if (u.machine_id == "m_1933") {
      r = &u;
      break;
    }
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->time, event_time{140000});
  EXPECT_EQ(r->cpu_util_percent, 5.0);
  EXPECT_EQ(r->mem_util_percent, 91.0);
  EXPECT_FALSE(r->mem_gps);
  EXPECT_FALSE(r->mkpi);
  EXPECT_FLOAT_EQ(*r->net_in, 22.79f);
  EXPECT_EQ(r->disk_io_percent, 1.0);
}

TEST(V2017Reader, ServerEventMatchesProvenance) {
  auto t = read_v2017_server_event(traces + "/alibaba-v2017-server-event/server_event.csv");
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->rows.size(), 1352u);
  int adds = 0, soft = 0;
  std::set<std::int64_t> machines;
  for (std::size_t i = 0; i < t->rows.size(); ++i) {
    const auto& e = t->rows[i];
    machines.insert(e.machine_id);
    if (i > 0) {
      ASSERT_LE(t->rows[i - 1].time, e.time);
    }
    if (e.type == v2017_server_event_type::add) {
      ++adds;
      EXPECT_EQ(e.cpu_milli, 64000);
      ASSERT_TRUE(e.memory);
    } else {
      ++soft;
      EXPECT_EQ(e.type, v2017_server_event_type::softerror);
      EXPECT_FALSE(e.cpu_milli) << "0 in an error row means not given";
      EXPECT_FALSE(e.memory);
      EXPECT_FALSE(e.disk);
      EXPECT_FALSE(e.detail.empty());
    }
  }
  EXPECT_EQ(adds, 1313);
  EXPECT_EQ(soft, 39);
  EXPECT_EQ(machines.size(), 1313u);
  EXPECT_EQ(t->missing_values, 117u);  // 39 error rows x 3 capacity fields
  // Sorted: the adds (t = 0) keep file order, so machine 1148 comes first.
  EXPECT_EQ(t->rows.front().machine_id, 1148);
  EXPECT_EQ(t->rows.back().time, event_time{82706000});
  EXPECT_EQ(t->rows[1313].time, event_time{777000});
}

// ---- v2018 full-download tables, on hand-written fixtures ---------------------------

TEST(V2018Reader, ContainerMetaFixture) {
  auto t = read_v2018_container_meta(fixtures + "/fixture-container_meta.csv");
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->rows.size(), 4u);
  EXPECT_EQ(t->rows[0].container_id, "c_1");
  EXPECT_EQ(t->rows[0].cpu_request_milli, 4000);  // 400 = 4 cores
  EXPECT_EQ(t->rows[0].mem_size, 1.56);
  EXPECT_EQ(t->rows[0].memory_bytes, std::llround(1.56 / 100 * 512.0 * gib));
  EXPECT_EQ(t->rows[1].container_id, "c_2");  // t = 300, line 1 before line 4
  EXPECT_EQ(t->rows[2].container_id, "c_3");
  EXPECT_EQ(t->rows[2].cpu_request_milli, 500);
  EXPECT_FALSE(t->rows[2].mem_size);  // 101 = invalid
  EXPECT_EQ(t->rows[3].status, "allocated");
  EXPECT_FALSE(t->rows[3].cpu_request_milli);  // empty = missing, not 0
  EXPECT_EQ(t->missing_values, 3u);
  EXPECT_EQ(t->invalid_values, 1u);
}

TEST(V2018Reader, ContainerUsageFixture) {
  auto t = read_v2018_container_usage(fixtures + "/fixture-container_usage.csv");
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0].time, event_time{10000});
  EXPECT_FLOAT_EQ(*t->rows[0].cpi, 1.2f);
  EXPECT_EQ(t->rows[1].cpu_util_percent, 150.0);  // container usage may exceed 100
  EXPECT_FALSE(t->rows[1].mem_util_percent);      // -1
  EXPECT_FALSE(t->rows[1].disk_io_percent);       // 101
  EXPECT_EQ(t->invalid_values, 2u);
  EXPECT_EQ(t->missing_values, 5u);
}

TEST(V2018Reader, BatchTaskFixtureWithDag) {
  auto t = read_v2018_batch_task(fixtures + "/fixture-batch_task.csv");
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->rows.size(), 4u);
  // Sorted by start_time, missing first.
  EXPECT_EQ(t->rows[0].task_name, "M5_3_4");
  EXPECT_FALSE(t->rows[0].start);
  EXPECT_TRUE(t->rows[0].dag.in_dag);
  EXPECT_EQ(t->rows[0].dag.id, 5);
  EXPECT_EQ(t->rows[0].dag.depends_on, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(t->rows[0].plan_cpu_milli, 2000);
  EXPECT_FALSE(t->rows[1].dag.in_dag);  // task_Nzg3... is independent
  EXPECT_FALSE(t->rows[1].end);
  EXPECT_EQ(t->rows[2].task_name, "M1");
  EXPECT_EQ(t->rows[2].instance_num, 10);
  EXPECT_EQ(t->rows[2].plan_cpu_milli, 1000);
  EXPECT_EQ(t->rows[2].start, event_time{100000});
  EXPECT_EQ(t->rows[3].dag.kind, "R");
  EXPECT_EQ(t->rows[3].dag.depends_on, (std::vector<std::int64_t>{1}));
}

TEST(V2018Reader, BatchInstanceFixture) {
  auto t = read_v2018_batch_instance(fixtures + "/fixture-batch_instance.csv");
  ASSERT_TRUE(t) << t.error().describe();
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0].instance_name, "ins_2");  // starts at 90 s
  EXPECT_TRUE(t->rows[0].machine_id.empty());
  EXPECT_FALSE(t->rows[0].cpu_avg_milli);
  EXPECT_EQ(t->rows[0].total_seq_no, 2);
  EXPECT_EQ(t->rows[1].cpu_avg_milli, 950);
  EXPECT_EQ(t->rows[1].cpu_max_milli, 1300);
  EXPECT_EQ(t->rows[1].mem_max, 0.6);
  EXPECT_EQ(t->rows[1].machine_id, "m_1");
}

TEST(V2018Reader, TaskNameDag) {
  EXPECT_TRUE(parse_task_name("M1").in_dag);
  EXPECT_TRUE(parse_task_name("M1").depends_on.empty());
  EXPECT_EQ(parse_task_name("J12_3_4_5").depends_on, (std::vector<std::int64_t>{3, 4, 5}));
  EXPECT_FALSE(parse_task_name("MergeTask").in_dag);
  EXPECT_FALSE(parse_task_name("task_abc==").in_dag);
  EXPECT_FALSE(parse_task_name("M1_").in_dag);
  EXPECT_FALSE(parse_task_name("12").in_dag);
}

// ---- bad rows ------------------------------------------------------------------------

constexpr std::string_view pod_header =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
    "time,scheduled_time\n";
const std::string good_pod = "p0,1000,1024,1,500,,LS,Running,10,20,11\n";

enum class reader { pods, nodes, usage, meta, event };

struct bad_case {
  const char* name;
  reader which;
  std::string text;
  const char* where;
  const char* message;
};

result<std::size_t> run(reader r, const std::string& text, const read_options& opt,
                        std::vector<row_warning>* w) {
  auto take = [&](auto t) -> result<std::size_t> {
    if (!t) return tl::unexpected(t.error());
    if (w) *w = t->warnings;
    return t->rows.size();
  };
  switch (r) {
    case reader::pods:
      return take(parse_openb_pods(text, "f.csv", opt));
    case reader::nodes:
      return take(parse_openb_nodes(text, "f.csv", opt));
    case reader::usage:
      return take(parse_v2018_machine_usage(text, "f.csv", opt));
    case reader::meta:
      return take(parse_v2018_machine_meta(text, "f.csv", opt));
    case reader::event:
      return take(parse_v2017_server_event(text, "f.csv", opt));
  }
  return 0;
}

std::vector<bad_case> bad_cases() {
  const std::string h(pod_header);
  return {
      {"NonIntegerCpu", reader::pods, h + good_pod + "p1,abc,1024,0,0,,BE,Running,10,20,10\n",
       "f.csv:3:4", "expected integer cpu_milli, got 'abc'"},
      {"EmptyCpu", reader::pods, h + good_pod + "p1,,1024,0,0,,BE,Running,10,20,10\n", "f.csv:3:4",
       "expected integer cpu_milli, got an empty field"},
      {"NegativeMemory", reader::pods, h + good_pod + "p1,1,-5,0,0,,BE,Running,10,20,10\n",
       "f.csv:3:6", "expected non-negative integer memory_mib, got '-5'"},
      {"TooFewFields", reader::pods, h + good_pod + "p1,1,5,0,0,,BE,Running,10,20\n", "f.csv:3:29",
       "expected 11 fields, got 10"},
      {"TooManyFields", reader::pods, h + good_pod + "p1,1,5,0,0,,BE,Running,10,20,10,x\n",
       "f.csv:3:33", "expected 11 fields, got 12"},
      {"UnknownQos", reader::pods, h + good_pod + "p1,1,5,0,0,,XX,Running,10,20,10\n", "f.csv:3:13",
       "expected qos LS, BE, Burstable or Guaranteed, got 'XX'"},
      {"UnknownPhase", reader::pods, h + good_pod + "p1,1,5,0,0,,BE,Done,10,20,10\n", "f.csv:3:16",
       "expected pod_phase Running, Succeeded, Failed or Pending, got 'Done'"},
      {"GpuMilliAbove1000", reader::pods, h + good_pod + "p1,1,5,1,1500,,BE,Running,10,20,10\n",
       "f.csv:3:10", "expected gpu_milli in [0, 1000], got '1500'"},
      {"GpuMilliWithoutGpu", reader::pods, h + good_pod + "p1,1,5,0,500,,BE,Running,10,20,10\n",
       "f.csv:3:10", "expected gpu_milli 0 when num_gpu is 0, got '500'"},
      {"EmptyGpuSpecModel", reader::pods,
       h + good_pod + "p1,1,5,1,500,T4||P100,BE,Running,10,20,10\n", "f.csv:3:14",
       "expected GPU model names separated by '|', got 'T4||P100'"},
      {"DeletionBeforeCreation", reader::pods, h + good_pod + "p1,1,5,0,0,,BE,Running,30,20,\n",
       "f.csv:3:27", "expected deletion_time >= creation_time, got '20'"},
      {"ScheduledOutsideLife", reader::pods, h + good_pod + "p1,1,5,0,0,,BE,Running,10,20,25\n",
       "f.csv:3:30", "expected scheduled_time between creation_time and deletion_time, got '25'"},
      {"NegativeTime", reader::pods, h + good_pod + "p1,1,5,0,0,,BE,Running,-1,20,\n", "f.csv:3:24",
       "expected non-negative seconds creation_time, got '-1'"},
      {"EmptyLineInside", reader::pods, h + good_pod + "\n" + good_pod, "f.csv:3:1",
       "expected 11 fields, got an empty line"},
      {"WrongHeaderColumn", reader::pods,
       "name,cpu,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
       "scheduled_time\n",
       "f.csv:1:6", "expected header column 2 'cpu_milli', got 'cpu'"},
      {"NodeGpuWithoutModel", reader::nodes,
       "sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,0,\nn0,1000,1024,2,\n", "f.csv:3:16",
       "expected a GPU model for a node with gpu > 0, got an empty field"},
      {"NodeMissingHeader", reader::nodes, "n0,1000,1024,2,T4\n", "f.csv:1:1",
       "expected header column 1 'sn', got 'n0'"},
      {"UsagePercentOutOfRange", reader::usage, "m_1,10,50,50,,,1,1,5\nm_1,20,150,50,,,1,1,5\n",
       "f.csv:2:8",
       "expected percent in [0, 100] (or -1/101 for invalid) cpu_util_percent, got '150'"},
      {"UsageNotANumber", reader::usage, "m_1,1,1,1,,,,,\nm_1,10,50,5O,,,1,1,5\n", "f.csv:2:11",
       "expected number mem_util_percent, got '5O'"},
      {"UsageBadTime", reader::usage, "m_1,1,1,1,,,,,\nm_1,1.2.3,50,50,,,1,1,5\n", "f.csv:2:5",
       "expected non-negative seconds time_stamp, got '1.2.3'"},
      {"MetaEmptyMachine", reader::meta, "m_1,0,1,2,96,100,USING\n,0,1,2,96,100,USING\n",
       "f.csv:2:1", "expected non-empty machine_id, got an empty field"},
      {"MetaFractionalCpus", reader::meta, "m_1,0,1,2,96,100,USING\nm_1,0,1,2,9.6,100,USING\n",
       "f.csv:2:11", "expected integer cpu_num, got '9.6'"},
      {"EventUnknownType", reader::event, "0,1,add,,64,0.69,1\n5,1,reboot,x,0,0,0\n", "f.csv:2:5",
       "expected event_type add, softerror or harderror, got 'reboot'"},
      {"EventMemoryAboveOne", reader::event, "0,2,add,,64,0.5,1\n0,1,add,,64,1.5,1\n", "f.csv:2:13",
       "expected normalised memory in [0, 1], got '1.5'"},
  };
}

TEST(TraceBadRows, StrictErrorNamesFileLineColumn) {
  for (const auto& c : bad_cases()) {
    auto r = run(c.which, c.text, {}, nullptr);
    ASSERT_FALSE(r) << c.name;
    EXPECT_EQ(r.error().code, errc::invalid_input) << c.name;
    EXPECT_EQ(r.error().where, c.where) << c.name;
    EXPECT_EQ(r.error().message, c.message) << c.name;
  }
}

TEST(TraceBadRows, SkipBadRowsCountsWarnings) {
  read_options opt;
  opt.skip_bad_rows = true;
  for (const auto& c : bad_cases()) {
    if (std::string_view(c.where).ends_with(":1:1") ||
        std::string_view(c.name).find("Header") != std::string_view::npos)
      continue;  // a bad header is never skippable: the whole file is in doubt
    std::vector<row_warning> w;
    auto r = run(c.which, c.text, opt, &w);
    ASSERT_TRUE(r) << c.name << ": " << r.error().describe();
    ASSERT_EQ(w.size(), 1u) << c.name;
    EXPECT_EQ(w[0].where, c.where) << c.name;
    EXPECT_EQ(w[0].message, c.message) << c.name;
    EXPECT_GE(*r, 1u) << c.name << ": the good rows are kept";
  }
}

TEST(TraceBadRows, BadHeaderIsFatalEvenWhenSkipping) {
  read_options opt;
  opt.skip_bad_rows = true;
  auto r = parse_openb_nodes("sn,cpu,memory_mib,gpu,model\nn0,1,1,0,\n", "f.csv", opt);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, "f.csv:1:4");
}

// ---- line endings, sentinels, empty fields, time parsing -----------------------------

TEST(TraceFormat, CrlfReadsLikeLf) {
  const std::string lf =
      std::string(pod_header) + good_pod + "p1,2000,2048,0,0,,BE,Pending,5,30,\n";
  std::string crlf;
  for (char ch : lf) {
    if (ch == '\n') crlf += '\r';
    crlf += ch;
  }
  auto a = parse_openb_pods(lf, "lf.csv");
  auto b = parse_openb_pods(crlf, "crlf.csv");
  ASSERT_TRUE(a) << a.error().describe();
  ASSERT_TRUE(b) << b.error().describe();
  ASSERT_EQ(b->rows.size(), 2u);
  EXPECT_EQ(b->rows[0].name, "p1");    // sorted: created at 5 s
  EXPECT_FALSE(b->rows[0].scheduled);  // empty last field before \r is still empty
  EXPECT_EQ(b->rows[0].phase, openb_phase::pending);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a->rows[i].name, b->rows[i].name);
    EXPECT_EQ(a->rows[i].deletion, b->rows[i].deletion);
  }
  auto u = parse_v2018_machine_usage("m_1,10,50,60,,,1,2,101\r\n", "u.csv");
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->rows[0].disk_io_percent);
  EXPECT_EQ(u->invalid_values, 1u);
}

TEST(TraceFormat, CrlfErrorColumnIgnoresCarriageReturn) {
  auto r = parse_openb_pods(std::string(pod_header) + "p1,1,5,0,0,,BE,Running,10,20\r\n", "f.csv");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, "f.csv:2:29");
}

TEST(TraceFormat, UnsortedRowsSortStableByTime) {
  auto t = parse_v2018_machine_usage(
      "m_2,30,1,1,,,,,\nm_1,10,2,2,,,,,\nm_3,30,3,3,,,,,\nm_1,30,4,4,,,,,\nm_2,10,5,5,,,,,\n",
      "u.csv");
  ASSERT_TRUE(t);
  std::vector<std::string> order;
  for (const auto& r : t->rows) order.push_back(r.machine_id + "@" + std::to_string(r.time.value));
  EXPECT_EQ(order, (std::vector<std::string>{"m_1@10000", "m_2@10000", "m_2@30000", "m_3@30000",
                                             "m_1@30000"}));
}

TEST(TraceFormat, SentinelsAndEmptyFieldsAreMissingNeverZero) {
  auto t = parse_v2018_machine_usage("m_1,10,-1,101,,,,,-1\nm_1,20,0,0,0,0,0,0,0\n", "u.csv");
  ASSERT_TRUE(t);
  const auto& a = t->rows[0];
  EXPECT_FALSE(a.cpu_util_percent);
  EXPECT_FALSE(a.mem_util_percent);
  EXPECT_FALSE(a.mem_gps);
  EXPECT_FALSE(a.disk_io_percent);
  const auto& b = t->rows[1];
  EXPECT_EQ(b.cpu_util_percent, 0.0);  // a real zero stays a zero
  EXPECT_EQ(b.mem_gps, 0.0);
  EXPECT_EQ(t->invalid_values, 3u);
  EXPECT_EQ(t->missing_values, 4u);
  auto m = parse_v2018_machine_meta("m_1,0,,,,,USING\n", "m.csv");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->rows[0].failure_domain_1);
  EXPECT_FALSE(m->rows[0].cpu_milli);
  EXPECT_FALSE(m->rows[0].memory_bytes);
  EXPECT_EQ(m->missing_values, 4u);
}

TEST(TraceFormat, FractionalSecondsBecomeMilliseconds) {
  auto t = parse_v2018_machine_usage(
      "m_1,1.5,1,1,,,,,\nm_1,2.25,1,1,,,,,\nm_1,3.0004,1,1,,,,,\nm_1,3.0006,1,1,,,,,\n", "u.csv");
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(t->rows[0].time.value, 1500);
  EXPECT_EQ(t->rows[1].time.value, 2250);
  EXPECT_EQ(t->rows[2].time.value, 3000);
  EXPECT_EQ(t->rows[3].time.value, 3001);
}

TEST(TraceFormat, TrailingBlankLinesAndBomAreAccepted) {
  auto t = parse_openb_nodes(
      "\xEF\xBB\xBFsn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,0,\n\n\r\n", "n.csv");
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(t->rows.size(), 1u);
}

TEST(TraceFormat, MissingFileIsNotFound) {
  auto t = read_openb_nodes("/nonexistent/openb_node_list_all_node.csv");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, errc::not_found);
  EXPECT_EQ(t.error().where, "/nonexistent/openb_node_list_all_node.csv");
}

TEST(TraceFormat, MemoryFullScaleIsAnOption) {
  read_options opt;
  opt.v2018_memory_full_bytes = 256 * gib;
  auto m = parse_v2018_machine_meta("m_1,0,1,2,96,50,USING\n", "m.csv", opt);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->rows[0].memory_bytes, 128 * gib);
}

// ---- streaming scans --------------------------------------------------------------------

TEST(V2018Scan, MachineUsageMatchesRead) {
  read_options keep;
  keep.sort_by_time = false;
  auto t = read_v2018_machine_usage(v2018_dir + "machine_usage.csv", keep);
  ASSERT_TRUE(t);
  std::size_t i = 0, mismatches = 0;
  auto s = scan_v2018_machine_usage(
      v2018_dir + "machine_usage.csv", {}, [&](const v2018_machine_usage& r) {
        const auto& want = t->rows[i++];
        mismatches += !(r.machine_id == want.machine_id && r.time == want.time &&
                        r.line == want.line && r.cpu_util_percent == want.cpu_util_percent &&
                        r.mem_gps == want.mem_gps && r.disk_io_percent == want.disk_io_percent);
      });
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->rows, 51362u);
  EXPECT_EQ(i, 51362u);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(s->missing_values, t->missing_values);
  EXPECT_EQ(s->invalid_values, 11u);
}

// A file over the 4 MiB chunk size, with lines split across chunk boundaries, CRLF endings,
// a bad row and trailing blank lines.
TEST(V2018Scan, ChunkBoundariesCrlfAndBadRows) {
  std::ifstream in(v2018_dir + "machine_usage.csv", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string crlf;
  for (char ch : ss.str()) {
    if (ch == '\n') crlf += '\r';
    crlf += ch;
  }
  const std::string body = crlf + crlf + crlf;  // 154,086 lines, ~5.8 MB
  ASSERT_GT(body.size(), std::size_t{4} << 20);
  const auto path = (std::filesystem::path(testing::TempDir()) / "colony_scan_usage.csv").string();
  std::ofstream(path, std::ios::binary) << body << "m_1,x,1,1,,,,,\r\n\r\n\n";
  std::size_t rows = 0;
  std::uint32_t last_line = 0;
  auto strict = scan_v2018_machine_usage(path, {}, [&](const v2018_machine_usage& r) {
    ++rows;
    last_line = r.line;
  });
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().where, path + ":154087:5");
  EXPECT_EQ(rows, 154086u);
  EXPECT_EQ(last_line, 154086u);
  read_options skip;
  skip.skip_bad_rows = true;
  rows = 0;
  auto lenient = scan_v2018_machine_usage(path, skip, [&](const v2018_machine_usage&) { ++rows; });
  ASSERT_TRUE(lenient) << lenient.error().describe();
  EXPECT_EQ(lenient->rows, 154086u);
  ASSERT_EQ(lenient->warnings.size(), 1u);  // trailing blank lines are not warnings
  EXPECT_EQ(lenient->invalid_values, 33u);
}

TEST(V2018Scan, BlankLineInsideIsAnError) {
  const auto path = (std::filesystem::path(testing::TempDir()) / "colony_scan_blank.csv").string();
  std::ofstream(path, std::ios::binary) << "m_1,1,1,1,,,,,\n\nm_1,2,1,1,,,,,\n";
  auto s = scan_v2018_machine_usage(path, {}, [](const v2018_machine_usage&) {});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().where, path + ":2:1");
  EXPECT_EQ(s.error().message, "expected 9 fields, got an empty line");
  auto missing = scan_v2018_container_usage("/nonexistent/container_usage.csv", {},
                                            [](const v2018_container_usage&) {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::not_found);
}

TEST(V2018Scan, BatchInstanceFixture) {
  std::vector<std::string> names;
  auto s = scan_v2018_batch_instance(
      fixtures + "/fixture-batch_instance.csv", {},
      [&](const v2018_batch_instance& r) { names.push_back(r.instance_name); });
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(names, (std::vector<std::string>{"ins_1", "ins_2"}));  // file order
}

}  // namespace
}  // namespace colony::trace
