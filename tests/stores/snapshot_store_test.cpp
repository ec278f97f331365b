#include "stores/snapshot_store.hpp"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

namespace colony::testing {
namespace {

TEST(SnapshotStore, EmptyStoreHasNoSnapshot) {
  temp_dir d;
  auto s = stores::snapshot_store::open(d.sub("snap"), true);
  ASSERT_TRUE(s);
  auto l = (*s)->latest();
  ASSERT_TRUE(l);
  EXPECT_FALSE(l->has_value());
}

TEST(SnapshotStore, WritesAndReadsBackInKeyOrder) {
  temp_dir d;
  auto s = stores::snapshot_store::open(d.sub("snap"), true);
  ASSERT_TRUE(s);
  auto w = (*s)->begin(100);
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->put(2, "pod-b", "B"));
  ASSERT_TRUE((*w)->put(1, "node-a", "A"));
  ASSERT_TRUE((*w)->put(2, "pod-a", "AA"));
  ASSERT_TRUE((*w)->commit(0xabcdef));
  auto l = (*s)->latest();
  ASSERT_TRUE(l && l->has_value());
  EXPECT_EQ((*l)->at, 100u);
  EXPECT_EQ((*l)->entities, 3u);
  EXPECT_EQ((*l)->digest, 0xabcdefu);
  std::vector<std::string> got;
  ASSERT_TRUE((*s)->read(100, [&](std::uint8_t k, std::string_view key, std::string_view v) {
    got.push_back(std::to_string(k) + ":" + std::string(key) + "=" + std::string(v));
  }));
  EXPECT_EQ(got, (std::vector<std::string>{"1:node-a=A", "2:pod-a=AA", "2:pod-b=B"}));
}

TEST(SnapshotStore, UncommittedSnapshotIsInvisibleAndCleanedUp) {
  temp_dir d;
  {
    auto s = stores::snapshot_store::open(d.sub("snap"), true);
    ASSERT_TRUE(s);
    auto w = (*s)->begin(10);
    ASSERT_TRUE((*w)->put(1, "n", "x"));
    ASSERT_TRUE((*w)->commit(1));
    auto w2 = (*s)->begin(20);
    ASSERT_TRUE((*w2)->put(1, "n", "y"));  // never committed: a writer killed mid-way
  }
  auto s = stores::snapshot_store::open(d.sub("snap"), true);
  ASSERT_TRUE(s);
  auto l = (*s)->latest();
  ASSERT_TRUE(l && l->has_value());
  EXPECT_EQ((*l)->at, 10u);
  ASSERT_TRUE((*s)->prune(5));
  std::size_t n = 0;
  ASSERT_TRUE((*s)->read(20, [&](std::uint8_t, std::string_view, std::string_view) { ++n; }));
  EXPECT_EQ(n, 0u);
}

TEST(SnapshotStore, PruneKeepsTheNewest) {
  temp_dir d;
  auto s = stores::snapshot_store::open(d.sub("snap"), true);
  ASSERT_TRUE(s);
  for (log_offset at : {5u, 10u, 15u}) {
    auto w = (*s)->begin(at);
    ASSERT_TRUE((*w)->put(1, "n", std::to_string(at)));
    ASSERT_TRUE((*w)->commit(at));
  }
  ASSERT_TRUE((*s)->prune(1));
  auto l = (*s)->latest();
  ASSERT_TRUE(l && l->has_value());
  EXPECT_EQ((*l)->at, 15u);
  std::size_t old = 0;
  ASSERT_TRUE((*s)->read(10, [&](std::uint8_t, std::string_view, std::string_view) { ++old; }));
  EXPECT_EQ(old, 0u);
}

}  // namespace
}  // namespace colony::testing
