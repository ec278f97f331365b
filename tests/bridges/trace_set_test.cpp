// trace_set: detection and loading of the bundled layout, pod-list selection, ambiguity,
// v2017 folders, empty folders.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "bridges/trace/trace_set.hpp"

namespace colony::trace {
namespace {

namespace fs = std::filesystem;
const std::string traces = COLONY_TRACES_DIR;

// A fresh scratch folder per test (removed first, so reruns start clean).
fs::path scratch(const std::string& name) {
  fs::path p = fs::path(testing::TempDir()) / ("colony_trace_set_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

TEST(TraceSet, LoadsBundledTraces) {
  auto s = load_trace_set(traces);
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_FALSE(s->synthetic);
  ASSERT_TRUE(s->openb_nodes);
  ASSERT_TRUE(s->openb_pods);
  ASSERT_TRUE(s->machine_meta);
  ASSERT_TRUE(s->machine_usage);
  ASSERT_TRUE(s->server_event);
  EXPECT_FALSE(s->container_meta);
  EXPECT_FALSE(s->batch_task);
  EXPECT_EQ(s->openb_nodes->rows.size(), 1523u);
  EXPECT_EQ(s->openb_pods->rows.size(), 8152u);
  EXPECT_EQ(s->machine_meta->rows.size(), 17592u);
  EXPECT_EQ(s->machine_usage->rows.size(), 51362u);
  EXPECT_EQ(s->server_event->rows.size(), 1352u);
  EXPECT_EQ(s->pod_lists, (std::vector<std::string>{"cpu050", "default", "gpushare40", "gpuspec33",
                                                    "multigpu50"}));
  EXPECT_EQ(s->files.size(), 5u);
  EXPECT_EQ(s->warning_count(), 0u);
}

TEST(TraceSet, SelectsPodListByName) {
  trace_set_options opt;
  opt.pod_list = "cpu050";
  auto s = load_trace_set(traces, opt);
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->openb_pods->rows.size(), 7439u);
  opt.pod_list = "gpu100";
  auto missing = load_trace_set(traces, opt);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::not_found);
  EXPECT_EQ(missing.error().message,
            "openb pod list 'gpu100' not found; present: cpu050, default, gpushare40, gpuspec33, "
            "multigpu50");
}

TEST(TraceSet, LoadsSingleFolder) {
  auto s = load_trace_set(traces + "/alibaba-v2017-server-event");
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_TRUE(s->server_event);
  EXPECT_FALSE(s->openb_nodes);
}

TEST(TraceSet, SameTableTwiceIsAnError) {
  auto d = scratch("twice");
  write(d / "a" / "machine_usage.csv", "m_1,0,1,1,,,,,\n");
  write(d / "b" / "synthetic-machine_usage.csv", "m_1,0,1,1,,,,,\n");
  auto s = load_trace_set(d.string());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, errc::invalid_input);
  EXPECT_NE(s.error().message.find("machine_usage.csv found twice"), std::string::npos)
      << s.error().message;
}

TEST(TraceSet, V2017FolderBatchFilesAreNotV2018) {
  auto d = scratch("v2017");
  write(d / "server_event.csv", "0,1,add,,64,0.69,1\n");
  write(d / "batch_task.csv", "1,2,3,4,5,Terminated,1,0.1\n");  // v2017 columns
  auto s = load_trace_set(d.string());
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_TRUE(s->server_event);
  EXPECT_FALSE(s->batch_task);
}

TEST(TraceSet, ReaderErrorKeepsWhere) {
  auto d = scratch("bad");
  write(d / "machine_usage.csv", "m_1,0,1,1,,,,,\nm_1,x,1,1,,,,,\n");
  auto s = load_trace_set(d.string());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().where, (d / "machine_usage.csv").string() + ":2:5");
  trace_set_options opt;
  opt.read.skip_bad_rows = true;
  auto lenient = load_trace_set(d.string(), opt);
  ASSERT_TRUE(lenient);
  EXPECT_EQ(lenient->warning_count(), 1u);
  EXPECT_EQ(lenient->machine_usage->rows.size(), 1u);
}

TEST(TraceSet, EmptyOrMissingFolderIsNotFound) {
  auto d = scratch("empty");
  write(d / "notes.txt", "nothing here\n");
  auto s = load_trace_set(d.string());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, errc::not_found);
  auto gone = load_trace_set((d / "nope").string());
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, errc::not_found);
}

}  // namespace
}  // namespace colony::trace
