#include "stores/rocksdb_log.hpp"

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <xxhash.h>

#include "tests/stores/event_log_contract.hpp"
#include "tests/support/temp_dir.hpp"

namespace colony::testing {
namespace {

temp_dir& shared_dir() {
  static temp_dir d;
  return d;
}

log_factory rocksdb_factory() {
  log_factory f;
  f.backend = "RocksDB";
  f.open = [](const std::string& name) -> std::unique_ptr<stores::event_log> {
    auto l = stores::open_log(name, stores::log_options{});
    EXPECT_TRUE(l) << l.error().describe();
    return l ? std::move(*l) : nullptr;
  };
  f.fresh_name = [] {
    static std::atomic<int> n{0};
    return shared_dir().sub("log-" + std::to_string(n++));
  };
  return f;
}

INSTANTIATE_TEST_SUITE_P(RocksDb, EventLogContract, ::testing::Values(rocksdb_factory()));

class RocksDbLog : public ::testing::Test {
 protected:
  std::unique_ptr<stores::rocksdb_log> open(bool read_only = false) {
    stores::log_options o;
    o.read_only = read_only;
    auto l = stores::rocksdb_log::open(dir_.sub("log"), o);
    EXPECT_TRUE(l) << l.error().describe();
    return l ? std::move(*l) : nullptr;
  }
  void fill(stores::event_log& l, std::size_t n) {
    std::vector<messages::byte_buffer> v;
    for (std::size_t i = 0; i < n; ++i)
      v.push_back(pod_submitted(b_, "default/p-" + std::to_string(i), 1, 1));
    std::vector<messages::bytes_view> views(v.begin(), v.end());
    ASSERT_TRUE(l.append(views));
  }
  temp_dir dir_;
  messages::event_builder b_;
};

TEST(OffsetKey, BigEndianKeysSortInOffsetOrder) {
  std::vector<log_offset> offs{0, 1, 255, 256, 65535, 65536, 1ull << 40, ~0ull - 1};
  for (std::size_t i = 0; i + 1 < offs.size(); ++i) {
    EXPECT_LT(stores::offset_key(offs[i]), stores::offset_key(offs[i + 1]));
    EXPECT_EQ(stores::key_offset(stores::offset_key(offs[i])), offs[i]);
  }
  EXPECT_EQ(stores::offset_key(1), std::string("\0\0\0\0\0\0\0\1", 8));
}

TEST_F(RocksDbLog, FlippedByteIsReportedWithItsOffsetAndEarlierRecordsSurvive) {
  auto l = open();
  fill(*l, 10);
  std::vector<std::uint8_t> rec;
  ASSERT_TRUE(l->read(6, 7, [&](log_offset, messages::bytes_view b) {
    rec.assign(b.begin(), b.end());
    return true;
  }));
  // Store record 6 as the log would (checksum of the intact bytes, then the bytes), but with
  // one byte of the pod name flipped: damage the FlatBuffers verifier cannot see.
  std::string value;
  const std::uint64_t sum = XXH3_64bits(rec.data(), rec.size());
  for (int i = 0; i < 8; ++i) value.push_back(static_cast<char>(sum >> (8 * i)));
  const std::string name = "default/p-6";
  auto it = std::search(rec.begin(), rec.end(), name.begin(), name.end());
  ASSERT_NE(it, rec.end());
  *(it + 2) ^= 0x01;
  value.append(reinterpret_cast<const char*>(rec.data()), rec.size());
  ASSERT_TRUE(l->debug_put_raw(6, value));
  std::vector<log_offset> seen;
  auto n = l->read(0, no_offset, [&](log_offset off, messages::bytes_view) {
    seen.push_back(off);
    return true;
  });
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, errc::corrupt);
  EXPECT_NE(n.error().message.find("checksum"), std::string::npos) << n.error().describe();
  EXPECT_NE(n.error().where.find("offset 6"), std::string::npos) << n.error().describe();
  EXPECT_EQ(seen, (std::vector<log_offset>{0, 1, 2, 3, 4, 5}));
  // Reading past the damage still works: nothing after it is lost either.
  std::size_t after = 0;
  ASSERT_TRUE(l->read(7, no_offset, [&](log_offset, messages::bytes_view) { return ++after; }));
  EXPECT_EQ(after, 3u);
}

TEST_F(RocksDbLog, TruncatedStoredRecordIsReportedWithItsOffset) {
  auto l = open();
  fill(*l, 5);
  ASSERT_TRUE(l->debug_put_raw(3, std::string("\1\2\3\4\5\6\7\10abc", 11)));
  auto n = l->read(0, no_offset, [](log_offset, messages::bytes_view) { return true; });
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, errc::corrupt);
  EXPECT_NE(n.error().where.find("offset 3"), std::string::npos);
}

TEST_F(RocksDbLog, ReadOnlyOpenSeesEverything) {
  {
    auto l = open();
    fill(*l, 33);
  }
  auto r = open(true);
  auto e = r->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 33u);
  std::vector<messages::bytes_view> none;
  messages::event_builder b;
  auto ev = pod_submitted(b, "x", 1, 1);
  std::vector<messages::bytes_view> one{ev};
  EXPECT_FALSE(r->append(one));
}

TEST_F(RocksDbLog, ADirectoryOfOtherFilesIsNotAColonyLog) {
  std::filesystem::create_directories(dir_.sub("junk"));
  std::ofstream(dir_.sub("junk") + "/notes.txt") << "hello";
  auto l = stores::rocksdb_log::open(dir_.sub("junk"), stores::log_options{});
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, errc::invalid_input);
  EXPECT_NE(l.error().message.find("not a Colony log"), std::string::npos);
  EXPECT_EQ(l.error().where, dir_.sub("junk"));
}

TEST_F(RocksDbLog, AFileIsNotAColonyLog) {
  std::ofstream(dir_.sub("file")) << "x";
  auto l = stores::rocksdb_log::open(dir_.sub("file"), stores::log_options{});
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().message.find("not a Colony log"), std::string::npos);
}

TEST_F(RocksDbLog, AnotherRocksDbIsNotAColonyLog) {
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, dir_.sub("other"), &raw).ok());
  ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), "k", "v").ok());
  delete raw;
  auto l = stores::rocksdb_log::open(dir_.sub("other"), stores::log_options{});
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().message.find("not a Colony log"), std::string::npos) << l.error().describe();
}

std::vector<log_offset> offsets_of(stores::event_log& l, log_offset from = 0) {
  std::vector<log_offset> seen;
  auto n = l.read(from, no_offset, [&](log_offset off, messages::bytes_view) {
    seen.push_back(off);
    return true;
  });
  EXPECT_TRUE(n) << n.error().describe();
  return seen;
}

// Retention by record: trimmed offsets are skipped below the sparse mark, which survives a
// reopen and never goes down; a trim that names an offset at or above the mark deletes nothing;
// above the mark a missing record is still a gap, named with its offset.
TEST_F(RocksDbLog, TrimLeavesHolesBelowTheSparseMarkOnly) {
  {
    auto l = open();
    fill(*l, 20);
    EXPECT_EQ(l->sparse_before(), 0u);
    const std::vector<log_offset> drop{0, 2, 3, 5, 9};
    ASSERT_TRUE(l->trim(drop, 10));
    EXPECT_EQ(l->sparse_before(), 10u);
    const std::vector<log_offset> kept{1, 4, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    EXPECT_EQ(offsets_of(*l), kept);
    EXPECT_EQ(offsets_of(*l, 2), (std::vector<log_offset>(kept.begin() + 1, kept.end())));
    EXPECT_EQ(*l->end_offset(), 20u);
    const std::vector<log_offset> bad{1, 12};
    auto r = l->trim(bad, 10);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, errc::invalid_input);
    EXPECT_NE(r.error().message.find("offset 12"), std::string::npos) << r.error().describe();
    auto beyond = l->trim({}, 21);
    ASSERT_FALSE(beyond);
    EXPECT_NE(beyond.error().message.find("beyond the log's end"), std::string::npos);
    ASSERT_TRUE(l->trim({}, 4));  // a lower mark keeps the higher one
    EXPECT_EQ(l->sparse_before(), 10u);
    EXPECT_EQ(offsets_of(*l), kept) << "offset 1 survived the refused trim";
    // Appends go on at the end: offsets do not move.
    fill(*l, 1);
    EXPECT_EQ(offsets_of(*l).back(), 20u);
  }
  {
    auto l = open(true);
    EXPECT_EQ(l->sparse_before(), 10u);
    EXPECT_EQ(offsets_of(*l).size(), 16u);
  }
  // A record missing above the mark (deleted behind the log's back) is corruption.
  {
    rocksdb::DBOptions dbo;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs{
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
        {"events", rocksdb::ColumnFamilyOptions()}};
    std::vector<rocksdb::ColumnFamilyHandle*> h;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(dbo, dir_.sub("log"), cfs, &h, &raw).ok());
    ASSERT_TRUE(raw->Delete(rocksdb::WriteOptions(), h[1], stores::offset_key(15)).ok());
    for (auto* c : h) ASSERT_TRUE(raw->DestroyColumnFamilyHandle(c).ok());
    delete raw;
  }
  auto l = open();
  auto n = l->read(0, no_offset, [](log_offset, messages::bytes_view) { return true; });
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, errc::corrupt);
  EXPECT_NE(n.error().message.find("expected offset 15"), std::string::npos)
      << n.error().describe();
  EXPECT_NE(n.error().where.find("offset 16"), std::string::npos) << n.error().describe();
}

TEST_F(RocksDbLog, MissingLogIsNotFoundForReaders) {
  stores::log_options o;
  o.read_only = true;
  o.create_if_missing = false;
  auto l = stores::rocksdb_log::open(dir_.sub("nothing"), o);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().code, errc::not_found);
}

TEST_F(RocksDbLog, DamagedTableFileGivesAnErrorNotACrash) {
  {
    auto l = open();
    fill(*l, 2000);
  }
  {
    // Reopen flushes the WAL into a table file on close; damage that file.
    auto l = open();
  }
  std::filesystem::path sst;
  for (const auto& e : std::filesystem::directory_iterator(dir_.sub("log")))
    if (e.path().extension() == ".sst" && std::filesystem::file_size(e.path()) > 4096)
      sst = e.path();
  if (sst.empty()) GTEST_SKIP() << "no table file was written";
  {
    std::fstream f(sst, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(sst) / 3));
    char c = 0;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(sst) / 3));
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  stores::log_options o;
  o.read_only = true;
  auto l = stores::rocksdb_log::open(dir_.sub("log"), o);
  if (!l) {
    EXPECT_EQ(l.error().code, errc::corrupt) << l.error().describe();
    return;
  }
  auto n = (*l)->read(0, no_offset, [](log_offset, messages::bytes_view) { return true; });
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, errc::corrupt) << n.error().describe();
}

// The trusted bulk path (append_trusted) stores exactly what append() stores: same bytes, same
// offsets patched in, same checksums (read() verifies both), whether or not the caller already
// wrote the offsets into its records.
TEST_F(RocksDbLog, AppendTrustedStoresTheSameRecordsAsAppend) {
  auto checked = open();
  auto l2 = stores::rocksdb_log::open(dir_.sub("trusted"), stores::log_options{});
  ASSERT_TRUE(l2) << l2.error().describe();
  auto& trusted = **l2;
  std::vector<messages::byte_buffer> v;
  for (std::size_t i = 0; i < 40; ++i) {
    v.push_back(pod_submitted(b_, "default/p-" + std::to_string(i), 1, 1));
    // Half of them carry their offset already (the zero-copy path), half do not (copy + patch).
    if (i % 2 == 0) {
      ASSERT_TRUE(messages::patch_offset(v.back(), i));
    }
  }
  std::vector<messages::bytes_view> views(v.begin(), v.end());
  ASSERT_TRUE(checked->append(views));
  auto first = trusted.append_trusted(std::span(views).subspan(0, 25), true);
  ASSERT_TRUE(first) << first.error().describe();
  EXPECT_EQ(*first, 0u);
  auto second = trusted.append_trusted(std::span(views).subspan(25), false);
  ASSERT_TRUE(second) << second.error().describe();
  EXPECT_EQ(*second, 25u);
  auto all = [](stores::event_log& l) {
    std::vector<std::vector<std::uint8_t>> out;
    auto n = l.read(0, no_offset, [&](log_offset off, messages::bytes_view b) {
      EXPECT_EQ(messages::decode(b, "t")->envelope->offset(), off);
      out.emplace_back(b.begin(), b.end());
      return true;
    });
    EXPECT_TRUE(n) << n.error().describe();
    return out;
  };
  const auto a = all(*checked);
  const auto b = all(trusted);
  ASSERT_EQ(a.size(), 40u);
  EXPECT_EQ(a, b);
}

// Records appended without the write-ahead log are durable once flush_to_disk() returns: a
// reopened log holds all of them, in order.
TEST_F(RocksDbLog, AppendTrustedWithoutWalIsDurableAfterFlushToDisk) {
  {
    auto l = open();
    std::vector<messages::byte_buffer> v;
    for (std::size_t i = 0; i < 3000; ++i)
      v.push_back(pod_submitted(b_, "default/q-" + std::to_string(i), 1, 1));
    std::vector<messages::bytes_view> views(v.begin(), v.end());
    ASSERT_TRUE(l->append_trusted(views, true));
    ASSERT_TRUE(l->flush_to_disk());
  }
  auto r = open(true);
  auto e = r->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 3000u);
  std::size_t n = 0;
  ASSERT_TRUE(r->read(0, no_offset, [&](log_offset off, messages::bytes_view) {
    EXPECT_EQ(off, n);
    return ++n > 0;
  }));
  EXPECT_EQ(n, 3000u);
}

// Group durability (colony run): a log opened with sync = false, appended one record at a time,
// then sync_appended(); the process is SIGKILLed right after, without closing the database.
// Everything appended survives (the WAL is written per append, synced per group), and a trusted
// append that skipped the WAL is made durable by sync_appended() too (it flushes the memtables
// then: a WAL sync alone would leave those records in memory, and the kill would lose them).
TEST_F(RocksDbLog, SyncAppendedMakesUnsyncedAndWalLessAppendsSurviveSigkill) {
  const std::string path = dir_.sub("group-sync");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    stores::log_options o;
    o.sync = false;
    auto l = stores::rocksdb_log::open(path, o);
    if (!l) ::_exit(2);
    messages::event_builder b;
    for (int i = 0; i < 200; ++i) {
      auto rec = pod_submitted(b, "default/g-" + std::to_string(i), 1, 1);
      const std::vector<messages::bytes_view> one{rec};
      if (!(*l)->append(one)) ::_exit(3);
    }
    if (!(*l)->sync_appended()) ::_exit(4);
    std::vector<messages::byte_buffer> v;
    for (int i = 0; i < 50; ++i)
      v.push_back(pod_submitted(b, "default/t-" + std::to_string(i), 1, 1));
    const std::vector<messages::bytes_view> views(v.begin(), v.end());
    if (!(*l)->append_trusted(views, true)) ::_exit(5);
    if (!(*l)->sync_appended()) ::_exit(6);
    ::raise(SIGKILL);
    ::_exit(7);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  stores::log_options ro;
  ro.read_only = true;
  auto r = stores::rocksdb_log::open(path, ro);
  ASSERT_TRUE(r) << r.error().describe();
  auto e = (*r)->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 250u);
  std::size_t n = 0;
  std::string last;
  ASSERT_TRUE((*r)->read(0, no_offset, [&](log_offset, messages::bytes_view bv) {
    last = std::string(
        messages::to_string_view(wire::GetEnvelope(bv.data())->payload_as_PodSubmitted()->name()));
    return ++n > 0;
  }));
  EXPECT_EQ(n, 250u);
  EXPECT_EQ(last, "default/t-49");
}

// The sim's path into table files: records are counted at once and readable after flush();
// a sync_appended() in between ingests what is written so far; append() after table-file
// appends lands after them; every record keeps its offset and reads back verified, and a
// reopened log holds them all.
TEST_F(RocksDbLog, TableFileAppendsKeepOrderAndReadBackAfterFlush) {
  auto l = open();
  fill(*l, 3);
  std::vector<messages::byte_buffer> v;
  for (std::size_t i = 0; i < 4000; ++i)
    v.push_back(pod_submitted(b_, "default/s-" + std::to_string(i), 1, 1));
  const std::vector<messages::bytes_view> views(v.begin(), v.end());
  const std::span<const messages::bytes_view> all(views);
  auto a = l->append_to_table(all.subspan(0, 2500));
  ASSERT_TRUE(a) << a.error().describe();
  EXPECT_EQ(*a, 3u);
  ASSERT_TRUE(l->sync_appended());  // the first table file is ingested
  ASSERT_TRUE(l->append_to_table(all.subspan(2500)));
  auto e = l->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 4003u);
  fill(*l, 2);  // ingests the second table file first
  ASSERT_TRUE(l->flush());
  std::vector<std::string> names;
  ASSERT_TRUE(l->read(0, no_offset, [&](log_offset off, messages::bytes_view bv) {
    const auto* env = wire::GetEnvelope(bv.data());
    EXPECT_EQ(env->offset(), off);
    names.emplace_back(messages::to_string_view(env->payload_as_PodSubmitted()->name()));
    return true;
  }));
  ASSERT_EQ(names.size(), 4005u);
  EXPECT_EQ(names[2], "default/p-2");
  EXPECT_EQ(names[3], "default/s-0");
  EXPECT_EQ(names[2503], "default/s-2500");
  EXPECT_EQ(names[4002], "default/s-3999");
  EXPECT_EQ(names[4003], "default/p-0");
  l.reset();
  auto r = open(true);
  auto e2 = r->end_offset();
  ASSERT_TRUE(e2);
  EXPECT_EQ(*e2, 4005u);
  for (const auto& f : std::filesystem::directory_iterator(dir_.sub("log")))
    EXPECT_EQ(f.path().filename().string().rfind("bulk-", 0), std::string::npos)
        << f.path() << " left behind";
}

// Verification is skipped only on the trusted path: append() still refuses bytes that do not
// decode, and append_trusted() still refuses a record too short to be an envelope.
TEST_F(RocksDbLog, AppendStillVerifiesAndTrustedRefusesTruncatedRecords) {
  auto l = open();
  const std::vector<std::uint8_t> junk{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  std::vector<messages::bytes_view> one{junk};
  EXPECT_FALSE(l->append(one));
  const std::vector<std::uint8_t> tiny{1, 2, 3};
  std::vector<messages::bytes_view> t{tiny};
  auto r = l->append_trusted(t, false);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::invalid_input);
  auto e = l->end_offset();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, 0u);
}

}  // namespace
}  // namespace colony::testing
