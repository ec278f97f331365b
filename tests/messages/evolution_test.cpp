// Records written with schema version 1 must stay readable, with the same meaning, by every
// later Colony: tests/data/events-v1/ holds v1 records (length-prefixed) and their JSON view as
// v1 printed it. Regenerate only when a NEW version directory is added:
//   COLONY_WRITE_GOLDEN=tests/data/events-vN colony_messages_tests --gtest_filter=Evolution.*
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/codec.hpp"
#include "tests/support/events.hpp"

namespace colony::testing {
namespace {

std::vector<messages::byte_buffer> golden_events() {
  messages::event_builder b;
  std::vector<messages::byte_buffer> v;
  v.push_back(node_registered(b, "node-a", 96000, 512 * gib, 0));
  v.push_back(pod_submitted(b, "default/web-1", 2000, 4 * gib, 1000));
  v.push_back(pod_scheduled(b, "default/web-1", "node-a", 2000, 4 * gib, 2000));
  {
    auto& f = b.fbb();
    std::vector<flatbuffers::Offset<wire::Term>> ts{
        wire::CreateTermDirect(f, "capacity.cpu", 96000, "milli"),
        wire::CreateTermDirect(f, "policy", 0, nullptr, "usage")};
    auto off = wire::CreateNodeBatchResourceUpdatedDirect(f, "node-a", 40000, 100 * gib, 0, 0,
                                                          "usage", "usage", false, &ts);
    v.push_back(
        b.finish({event_time{60000}, wire::EntityKind::Node, "node-a", 2, "slo-controller"}, off));
  }
  {
    auto& f = b.fbb();
    auto off = wire::CreatePodEvictedDirect(f, "default/web-1", "node-a",
                                            wire::EvictionReason::MemoryEvict, "memory over 70%");
    v.push_back(
        b.finish({event_time{90000}, wire::EntityKind::Pod, "default/web-1", 3, "koordlet"}, off));
  }
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_TRUE(messages::patch_offset(v[i], i));
  return v;
}

std::filesystem::path data_dir() {
  const char* d = std::getenv("COLONY_TEST_DATA");
  return d ? std::filesystem::path(d) : std::filesystem::path("tests/data");
}

TEST(Evolution, VersionOneRecordsDecodeToTheirRecordedMeaning) {
  if (const char* out = std::getenv("COLONY_WRITE_GOLDEN")) {
    std::ofstream bin(std::filesystem::path(out) / "records.bin", std::ios::binary);
    std::ofstream js(std::filesystem::path(out) / "records.jsonl");
    for (const auto& r : golden_events()) {
      const std::uint32_t n = static_cast<std::uint32_t>(r.size());
      bin.write(reinterpret_cast<const char*>(&n), 4);
      bin.write(reinterpret_cast<const char*>(r.data()), n);
      js << *messages::to_json(r) << "\n";
    }
  }
  std::ifstream bin(data_dir() / "events-v1" / "records.bin", std::ios::binary);
  std::ifstream js(data_dir() / "events-v1" / "records.jsonl");
  ASSERT_TRUE(bin && js) << "missing " << (data_dir() / "events-v1");
  std::string line;
  int n = 0;
  for (std::uint32_t len = 0; bin.read(reinterpret_cast<char*>(&len), 4); ++n) {
    messages::byte_buffer rec(len);
    ASSERT_TRUE(bin.read(reinterpret_cast<char*>(rec.data()), len));
    auto d = messages::decode(rec, "events-v1 record " + std::to_string(n));
    ASSERT_TRUE(d) << d.error().describe();
    EXPECT_EQ(d->envelope->schema_version(), 1);
    ASSERT_TRUE(std::getline(js, line));
    EXPECT_EQ(*messages::to_json(rec), line) << "record " << n;
  }
  EXPECT_EQ(n, 5);
}

}  // namespace
}  // namespace colony::testing
