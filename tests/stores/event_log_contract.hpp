// The EventLog contract: behaviour every event_log backend must show. A backend instantiates
// it with a factory (see rocksdb_log_test.cpp; the Kafka backend does the same):
//   INSTANTIATE_TEST_SUITE_P(MyBackend, EventLogContract, ::testing::Values(factory));
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "stores/event_log.hpp"
#include "tests/support/events.hpp"

namespace colony::testing {

// Opens the log named `name` (the same name reopens the same log) for a test.
struct log_factory {
  std::string backend;
  std::function<std::unique_ptr<stores::event_log>(const std::string& name)> open;
  std::function<std::string()> fresh_name;  // a name no other test uses
};

inline std::ostream& operator<<(std::ostream& os, const log_factory& f) { return os << f.backend; }

class EventLogContract : public ::testing::TestWithParam<log_factory> {
 protected:
  std::unique_ptr<stores::event_log> open() {
    auto l = GetParam().open(name_);
    EXPECT_NE(l, nullptr);
    return l;
  }
  std::vector<messages::byte_buffer> events(std::size_t n, std::size_t start = 0) {
    std::vector<messages::byte_buffer> v;
    for (std::size_t i = 0; i < n; ++i)
      v.push_back(pod_submitted(b_, "default/p-" + std::to_string(start + i),
                                static_cast<std::int64_t>(start + i), 1,
                                static_cast<std::int64_t>(start + i)));
    return v;
  }
  static std::vector<messages::bytes_view> views(const std::vector<messages::byte_buffer>& v) {
    return {v.begin(), v.end()};
  }
  // Reads [from, to) and returns (offset, pod name) pairs.
  static std::vector<std::pair<log_offset, std::string>> read_all(stores::event_log& l,
                                                                  log_offset from = 0,
                                                                  log_offset to = no_offset) {
    std::vector<std::pair<log_offset, std::string>> out;
    auto n = l.read(from, to, [&](log_offset off, messages::bytes_view b) {
      const auto* env = wire::GetEnvelope(b.data());
      EXPECT_EQ(env->offset(), off);
      out.emplace_back(
          off, std::string(messages::to_string_view(env->payload_as_PodSubmitted()->name())));
      return true;
    });
    EXPECT_TRUE(n) << n.error().describe();
    return out;
  }
  void SetUp() override { name_ = GetParam().fresh_name(); }

  std::string name_;
  messages::event_builder b_;
};

TEST_P(EventLogContract, EmptyLogEndsAtZero) {
  auto l = open();
  auto e = l->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 0u);
  EXPECT_TRUE(read_all(*l).empty());
}

TEST_P(EventLogContract, AppendsGetConsecutiveOffsets) {
  auto l = open();
  log_offset expect = 0;
  for (std::size_t batch : {1u, 64u, 1024u, 3u}) {
    auto ev = events(batch, expect);
    auto first = l->append(views(ev));
    ASSERT_TRUE(first) << first.error().describe();
    EXPECT_EQ(*first, expect);
    expect += batch;
    auto e = l->end_offset();
    ASSERT_TRUE(e);
    EXPECT_EQ(*e, expect);
  }
  auto all = read_all(*l);
  ASSERT_EQ(all.size(), expect);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].first, i);
    EXPECT_EQ(all[i].second, "default/p-" + std::to_string(i));
  }
}

TEST_P(EventLogContract, ReadsAnyRange) {
  auto l = open();
  auto ev = events(100);
  ASSERT_TRUE(l->append(views(ev)));
  auto mid = read_all(*l, 40, 50);
  ASSERT_EQ(mid.size(), 10u);
  EXPECT_EQ(mid.front().first, 40u);
  EXPECT_EQ(mid.back().first, 49u);
  EXPECT_EQ(read_all(*l, 99).size(), 1u);
  EXPECT_TRUE(read_all(*l, 100).empty());
  EXPECT_TRUE(read_all(*l, 5000).empty());
}

TEST_P(EventLogContract, SinkStopsReading) {
  auto l = open();
  auto ev = events(10);
  ASSERT_TRUE(l->append(views(ev)));
  int seen = 0;
  auto n = l->read(0, no_offset, [&](log_offset, messages::bytes_view) { return ++seen < 3; });
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 3u);
  EXPECT_EQ(seen, 3);
}

TEST_P(EventLogContract, InvalidRecordFailsTheWholeBatch) {
  auto l = open();
  auto good = events(5);
  ASSERT_TRUE(l->append(views(good)));
  auto batch = events(4, 5);
  batch[2].resize(batch[2].size() / 2);  // truncated record in the middle
  auto r = l->append(views(batch));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().where.find("#2"), std::string::npos) << r.error().describe();
  auto e = l->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 5u);  // nothing of the bad batch landed; nothing before it was lost
  EXPECT_EQ(read_all(*l).size(), 5u);
}

TEST_P(EventLogContract, EmptyAppendIsRejected) {
  auto l = open();
  std::vector<messages::bytes_view> none;
  EXPECT_FALSE(l->append(none));
}

TEST_P(EventLogContract, ReopenContinuesAtTheEnd) {
  {
    auto l = open();
    auto ev = events(70);
    ASSERT_TRUE(l->append(views(ev)));
  }
  auto l = open();
  auto e = l->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 70u);
  auto ev = events(2, 70);
  auto first = l->append(views(ev));
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, 70u);
  EXPECT_EQ(read_all(*l).size(), 72u);
}

TEST_P(EventLogContract, WaitForWakesOnAppend) {
  auto l = open();
  auto ev = events(1);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(l->append(views(ev)));
  });
  auto e = l->wait_for(0, std::chrono::seconds(20));
  writer.join();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 1u);
}

TEST_P(EventLogContract, WaitForTimesOutWithoutAppend) {
  auto l = open();
  auto e = l->wait_for(0, std::chrono::milliseconds(20));
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 0u);
}

TEST_P(EventLogContract, ReadersRunWhileAppending) {
  auto l = open();
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 50; ++i) {
      auto ev = events(20, static_cast<std::size_t>(i) * 20);
      ASSERT_TRUE(l->append(views(ev)));
    }
    done = true;
  });
  while (!done) {
    auto got = read_all(*l);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].first, i);
    EXPECT_EQ(got.size() % 20, 0u);  // a batch is seen whole or not at all
  }
  writer.join();
  EXPECT_EQ(read_all(*l).size(), 1000u);
}

}  // namespace colony::testing
