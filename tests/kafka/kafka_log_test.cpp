// The Kafka event log against a real broker (tools/peers/kafka.sh via the ctest fixture):
// the same EventLog contract suite as the embedded log, one fresh topic per test, plus what
// only Kafka has: topic checks at open, one append = one record batch (read back with the
// broker's own DumpLogSegments), records damaged by a foreign producer, group offsets,
// follow, name parsing and the unreachable-broker error.
#include "stores/kafka_log.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "messages/aligned.hpp"
#include "tests/kafka/kafka_env.hpp"
#include "tests/stores/event_log_contract.hpp"
#include "tests/support/events.hpp"
#include "tests/support/temp_dir.hpp"

namespace colony::testing {
namespace {

std::string bootstrap_or_fail() {
  auto b = kafka_bootstrap();
  if (b.empty()) ADD_FAILURE() << kafka_missing_message();
  return b;
}

log_factory kafka_factory() {
  log_factory f;
  f.backend = "Kafka";
  f.open = [](const std::string& name) -> std::unique_ptr<stores::event_log> {
    auto l = stores::open_log(name, stores::log_options{});
    EXPECT_TRUE(l) << l.error().describe();
    return l ? std::move(*l) : nullptr;
  };
  f.fresh_name = [] { return "kafka://" + bootstrap_or_fail() + "/" + fresh_topic("contract"); };
  return f;
}

INSTANTIATE_TEST_SUITE_P(Kafka, EventLogContract, ::testing::Values(kafka_factory()));

// ---- name parsing (no broker)

struct name_case {
  const char* label;  // the row's test name
  const char* name;
  bool ok;
  const char* bootstrap;
  const char* topic;
  long connect_ms;
};

void PrintTo(const name_case& c, std::ostream* os) { *os << c.label; }

class KafkaName : public ::testing::TestWithParam<name_case> {};

TEST_P(KafkaName, Parses) {
  const auto& c = GetParam();
  auto a = stores::parse_kafka_name(c.name);
  ASSERT_EQ(static_cast<bool>(a), c.ok) << c.name << (a ? "" : " " + a.error().describe());
  if (!a) {
    EXPECT_EQ(a.error().code, errc::invalid_input);
    EXPECT_NE(a.error().where.find(c.name), std::string::npos);
    return;
  }
  EXPECT_EQ(a->bootstrap, c.bootstrap);
  EXPECT_EQ(a->topic, c.topic);
  EXPECT_EQ(a->connect_timeout.count(), c.connect_ms);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, KafkaName,
    ::testing::Values(
        name_case{"Plain", "kafka://127.0.0.1:9092/events", true, "127.0.0.1:9092", "events",
                  10000},
        name_case{"SeveralBrokers", "kafka://a:1,b:2/t.x_y-z", true, "a:1,b:2", "t.x_y-z", 10000},
        name_case{"ConnectTimeout", "kafka://h:1/t?connect_timeout_ms=250", true, "h:1", "t", 250},
        name_case{"AllOptions",
                  "kafka://h:1/t?connect_timeout_ms=1&delivery_timeout_ms=5000&replication=3", true,
                  "h:1", "t", 1},
        name_case{"NoTopic", "kafka://h:1/", false, "", "", 0},
        name_case{"NoBootstrap", "kafka:///t", false, "", "", 0},
        name_case{"NoPort", "kafka://h/t", false, "", "", 0},
        name_case{"BadPort", "kafka://h:x/t", false, "", "", 0},
        name_case{"SlashInTopic", "kafka://h:1/a/b", false, "", "", 0},
        name_case{"UnknownOption", "kafka://h:1/t?bogus=1", false, "", "", 0},
        name_case{"NegativeTimeout", "kafka://h:1/t?connect_timeout_ms=-5", false, "", "", 0},
        name_case{"ZeroReplication", "kafka://h:1/t?replication=0", false, "", "", 0},
        name_case{"TinyDeliveryTimeout", "kafka://h:1/t?delivery_timeout_ms=999", false, "", "",
                  0}),
    [](const ::testing::TestParamInfo<name_case>& i) { return std::string(i.param.label); });

// ---- unreachable broker (no broker: port 1 refuses connections)

TEST(KafkaLog, UnreachableBrokerIsUnavailableNamingTheAddressAfterABoundedWait) {
  const auto t0 = std::chrono::steady_clock::now();
  auto l =
      stores::open_log("kafka://127.0.0.1:1/events?connect_timeout_ms=1500", stores::log_options{});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, errc::unavailable) << l.error().describe();
  EXPECT_NE(l.error().message.find("127.0.0.1:1"), std::string::npos) << l.error().describe();
  EXPECT_NE(l.error().message.find("1500 ms"), std::string::npos) << l.error().describe();
  EXPECT_GE(s, 1.4);
  EXPECT_LT(s, 6.0);
}

// ---- against the fixture broker

class KafkaBroker : public ::testing::Test {
 protected:
  void SetUp() override {
    bootstrap_ = kafka_bootstrap();
    ASSERT_FALSE(bootstrap_.empty()) << kafka_missing_message();
    topic_ = fresh_topic("kafka-log");
    name_ = "kafka://" + bootstrap_ + "/" + topic_;
  }
  std::unique_ptr<stores::kafka_log> open(bool read_only = false, bool create = true) {
    stores::log_options o;
    o.read_only = read_only;
    o.create_if_missing = create;
    auto l = stores::kafka_log::open(name_, o);
    EXPECT_TRUE(l) << l.error().describe();
    return l ? std::move(*l) : nullptr;
  }
  void fill(stores::event_log& l, std::size_t n, std::size_t start = 0) {
    std::vector<messages::byte_buffer> v;
    for (std::size_t i = 0; i < n; ++i)
      v.push_back(pod_submitted(b_, "default/p-" + std::to_string(start + i), 1, 1));
    std::vector<messages::bytes_view> views(v.begin(), v.end());
    auto r = l.append(views);
    ASSERT_TRUE(r) << r.error().describe();
  }
  // kafka.sh create-topic: the broker's defaults (7-day retention), not Colony's config.
  void create_plain_topic(const std::string& topic, int partitions) {
    auto sh = kafka_sh();
    auto dir = kafka_dir();
    ASSERT_FALSE(sh.empty() || dir.empty()) << "run through ctest (COLONY_KAFKA_SH/_DIR)";
    auto [rc, out] = shell("bash '" + sh + "' create-topic " + topic + " " +
                           std::to_string(partitions) + " --dir '" + dir + "' 2>&1");
    ASSERT_EQ(rc, 0) << out;
  }
  std::string bootstrap_, topic_, name_;
  messages::event_builder b_;
};

TEST_F(KafkaBroker, MissingTopicIsNotFoundForReaders) {
  auto l = stores::kafka_log::open(name_, stores::log_options{false, true, true});
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, errc::not_found) << l.error().describe();
}

TEST_F(KafkaBroker, DeletedTopicIsGoneAndDeletingAgainIsNotAnError) {
  {
    auto w = open();
    ASSERT_NE(w, nullptr);
    fill(*w, 5);
  }
  auto d = stores::delete_kafka_topic(name_);
  ASSERT_TRUE(d) << d.error().describe();
  // The broker drops the topic's metadata asynchronously: readers find it gone within seconds.
  errc code = errc::internal;
  for (int i = 0; i < 100 && code != errc::not_found; ++i) {
    auto l = stores::kafka_log::open(name_, stores::log_options{false, true, true});
    if (!l) code = l.error().code;
    if (code != errc::not_found) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(code, errc::not_found);
  auto again = stores::delete_kafka_topic(name_);
  EXPECT_TRUE(again) << again.error().describe();
}

TEST_F(KafkaBroker, ReadOnlyOpenSeesEverythingAndRefusesAppends) {
  {
    auto w = open();
    fill(*w, 33);
  }
  auto r = open(true, false);
  ASSERT_NE(r, nullptr);
  auto e = r->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 33u);
  auto ev = pod_submitted(b_, "x", 1, 1);
  std::vector<messages::bytes_view> one{ev};
  auto a = r->append(one);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, errc::failed_precondition);
}

TEST_F(KafkaBroker, TopicWithRetentionIsRefused) {
  create_plain_topic(topic_, 1);
  auto l = stores::kafka_log::open(name_, stores::log_options{});
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, errc::failed_precondition) << l.error().describe();
  EXPECT_NE(l.error().message.find("retention.ms"), std::string::npos) << l.error().describe();
}

TEST_F(KafkaBroker, TopicWithSeveralPartitionsIsRefused) {
  create_plain_topic(topic_, 3);
  auto l = stores::kafka_log::open(name_, stores::log_options{});
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, errc::failed_precondition) << l.error().describe();
  EXPECT_NE(l.error().message.find("3 partitions"), std::string::npos) << l.error().describe();
}

// The broker's own tool shows each append as one record batch: the atomicity argument of
// kafka_log.hpp, checked on the bytes on disk.
TEST_F(KafkaBroker, EachAppendIsOneRecordBatchOnTheBroker) {
  auto l = open();
  fill(*l, 1);
  fill(*l, 64, 1);
  fill(*l, 1024, 65);
  fill(*l, 3, 1089);
  auto sh = kafka_sh();
  auto dir = kafka_dir();
  ASSERT_FALSE(sh.empty() || dir.empty()) << "run through ctest (COLONY_KAFKA_SH/_DIR)";
  auto [irc, libs] = shell("bash '" + sh + "' install 2>/dev/null");
  ASSERT_EQ(irc, 0);
  libs = libs.substr(0, libs.find('\n'));
  const auto seg = dir + "/data/" + topic_ + "-0/00000000000000000000.log";
  ASSERT_TRUE(std::filesystem::exists(seg)) << seg;
  auto [rc, out] =
      shell("java -cp '" + libs + "/*' kafka.tools.DumpLogSegments --files '" + seg + "' 2>&1");
  ASSERT_EQ(rc, 0) << out;
  std::regex batch(R"(baseOffset: (\d+) lastOffset: (\d+) count: (\d+))");
  std::vector<std::string> got;
  for (std::sregex_iterator it(out.begin(), out.end(), batch), end; it != end; ++it)
    got.push_back((*it)[1].str() + "-" + (*it)[2].str() + ":" + (*it)[3].str());
  EXPECT_EQ(got, (std::vector<std::string>{"0-0:1", "1-64:64", "65-1088:1024", "1089-1091:3"}))
      << out.substr(0, 2000);
  // Idempotent producer: every batch carries a producer id and sequence numbers.
  EXPECT_NE(out.find("baseSequence: 65 lastSequence: 1088"), std::string::npos)
      << out.substr(0, 2000);
}

TEST_F(KafkaBroker, ForeignGarbageIsReportedWithTopicPartitionOffset) {
  auto l = open();
  fill(*l, 5);
  auto [rc, out] =
      shell("printf 'not an envelope' | kcat -P -b " + bootstrap_ + " -t " + topic_ + " -p 0 2>&1");
  ASSERT_EQ(rc, 0) << out << " (kcat installed? apt-get install kcat)";
  std::vector<log_offset> seen;
  auto n = l->read(0, no_offset, [&](log_offset off, messages::bytes_view) {
    seen.push_back(off);
    return true;
  });
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, errc::corrupt) << n.error().describe();
  EXPECT_NE(n.error().describe().find("kafka " + topic_ + "/0@5"), std::string::npos)
      << n.error().describe();
  EXPECT_EQ(seen, (std::vector<log_offset>{0, 1, 2, 3, 4}));
}

TEST_F(KafkaBroker, EnvelopeAtTheWrongOffsetIsCorrupt) {
  auto l = open();
  fill(*l, 3);
  // A valid envelope that claims offset 42, produced by a second writer at offset 3.
  auto ev = pod_submitted(b_, "default/intruder", 1, 1);
  ASSERT_TRUE(messages::patch_offset(ev, 42));
  temp_dir d;
  const auto file = d.sub("ev.clny");
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(ev.data()), static_cast<std::streamsize>(ev.size()));
  auto [rc, out] =
      shell("kcat -P -b " + bootstrap_ + " -t " + topic_ + " -p 0 '" + file + "' 2>&1");
  ASSERT_EQ(rc, 0) << out;
  auto n = l->read(0, no_offset, [](log_offset, messages::bytes_view) { return true; });
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, errc::corrupt);
  EXPECT_NE(n.error().describe().find("envelope says offset 42"), std::string::npos)
      << n.error().describe();
  EXPECT_NE(n.error().where.find("/0@3"), std::string::npos) << n.error().describe();
  // The writer notices too: its next append does not land where it expected.
  auto more = pod_submitted(b_, "default/after", 1, 1);
  std::vector<messages::bytes_view> one{more};
  auto a = l->append(one);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, errc::failed_precondition) << a.error().describe();
}

TEST_F(KafkaBroker, GroupOffsetRoundTrip) {
  auto l = open();
  fill(*l, 10);
  const auto group = fresh_topic("group");
  auto none = l->committed(group);
  ASSERT_TRUE(none) << none.error().describe();
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(l->commit_group(group, 7));
  auto c = l->committed(group);
  ASSERT_TRUE(c) << c.error().describe();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ(**c, 7u);
}

TEST_F(KafkaBroker, FollowDeliversEarlierAndNewAppendsInOrder) {
  auto l = open();
  fill(*l, 5);
  std::vector<log_offset> seen;
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto w = open();
    fill(*w, 20, 5);
  });
  auto n = l->follow(
      2,
      [&](log_offset off, messages::bytes_view) {
        seen.push_back(off);
        return seen.size() < 23;
      },
      [&] { return true; });
  writer.join();
  ASSERT_TRUE(n) << n.error().describe();
  ASSERT_EQ(seen.size(), 23u);
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 2);
}

// read() and follow() take queued messages in batches of up to 1024: thousands of records
// cross several batches; a sink that stops in the middle of one leaves the rest unread, and
// the pooled consumer then reads a later range exactly. Every view is verified, aligned, and
// carries its own offset.
TEST_F(KafkaBroker, ReadsAcrossConsumeBatchesAndStopsInsideOne) {
  auto l = open();
  fill(*l, 1000);
  fill(*l, 2000, 1000);
  std::uint64_t next = 0;
  bool ok = true;
  auto check = [&](log_offset off, messages::bytes_view v) {
    ok = ok && off == next && messages::is_aligned(v) && messages::decode(v, "test") &&
         wire::GetEnvelope(v.data())->offset() == off;
    ++next;
  };
  auto all = l->read(0, no_offset, [&](log_offset off, messages::bytes_view v) {
    check(off, v);
    return true;
  });
  ASSERT_TRUE(all) << all.error().describe();
  EXPECT_EQ(*all, 3000u);
  EXPECT_EQ(next, 3000u);
  EXPECT_TRUE(ok);

  next = 0;
  auto part = l->read(0, no_offset, [&](log_offset off, messages::bytes_view v) {
    check(off, v);
    return off < 1499;
  });
  ASSERT_TRUE(part) << part.error().describe();
  EXPECT_EQ(*part, 1500u);
  next = 1500;
  auto later = l->read(1500, 2600, [&](log_offset off, messages::bytes_view v) {
    check(off, v);
    return true;
  });
  ASSERT_TRUE(later) << later.error().describe();
  EXPECT_EQ(*later, 1100u);
  EXPECT_EQ(next, 2600u);
  EXPECT_TRUE(ok);

  next = 100;
  auto followed = l->follow(
      100,
      [&](log_offset off, messages::bytes_view v) {
        check(off, v);
        return next < 3000;
      },
      [] { return true; });
  ASSERT_TRUE(followed) << followed.error().describe();
  EXPECT_EQ(*followed, 2900u);
  EXPECT_TRUE(ok);
}

// A sink slower than the fetch fills the consumer's local queue (queued.min.messages, 100k
// records); librdkafka 2.0 then stops fetching and its broker thread slept up to 1 s after
// the sink had drained the queue (kafka.replay: 4 s of 5 s waiting). The reader wakes the
// fetcher when the queue is half drained: every record still arrives once, in order, and no
// pause between two records comes near such a sleep.
TEST_F(KafkaBroker, SlowSinkIsNotLeftWaitingForTheFetcher) {
  auto l = open();
  constexpr std::size_t n = 400000;  // four refills of the local queue
  for (std::size_t at = 0; at < n; at += 50000) fill(*l, 50000, at);
  auto r = open(true, false);
  ASSERT_TRUE(r);
  using clock = std::chrono::steady_clock;
  std::uint64_t next = 0;
  bool ok = true;
  clock::duration longest{};
  clock::time_point last{};
  auto got = r->read(0, no_offset, [&](log_offset off, messages::bytes_view v) {
    const auto s0 = clock::now();
    if (next > 0) longest = std::max(longest, s0 - last);
    ok = ok && off == next && wire::GetEnvelope(v.data())->offset() == off;
    ++next;
    // ~2.5 us a record: 1 s in all, several times what the broker needs to send them.
    while (clock::now() - s0 < std::chrono::nanoseconds(2500)) {
    }
    last = clock::now();
    return true;
  });
  ASSERT_TRUE(got) << got.error().describe();
  EXPECT_EQ(*got, n);
  EXPECT_EQ(next, n);
  EXPECT_TRUE(ok);
  // Measured: 0.54 s without the wake-up (the rest of the fetcher's 1 s sleep), 8 ms with it.
  const double pause = std::chrono::duration<double>(longest).count();
  EXPECT_LT(pause, 0.25) << "the sink waited " << pause << " s for a record";
}

TEST_F(KafkaBroker, OversizedBatchIsRefusedWhole) {
  auto l = open();
  std::vector<messages::byte_buffer> v(stores::kafka_max_batch_records + 1,
                                       pod_submitted(b_, "default/p", 1, 1));
  std::vector<messages::bytes_view> views(v.begin(), v.end());
  auto r = l->append(views);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::invalid_input);
  auto e = l->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 0u);
}

}  // namespace
}  // namespace colony::testing
