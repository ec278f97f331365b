// rocksdb_log: the embedded event log, one RocksDB database per log.
//
// Layout: column family "events", key = 8-byte big-endian offset (so RocksDB's byte order is
// offset order), value = 8-byte little-endian XXH3-64 of the record followed by the record.
// The default column family holds "colony.format" = "colony-event-log/1"; a database without
// it is refused ("not a Colony log"). One WriteBatch per append, WAL fsynced per batch when
// log_options::sync is set: an acknowledged append survives SIGKILL and power loss.
//
// The checksum catches a flipped byte anywhere in a record, including string contents that the
// FlatBuffers verifier cannot check; RocksDB's own block checksums catch damaged files.
//
// append_trusted() is the bulk path of an in-process writer (the sim driver) whose records were
// built by messages::event_builder in this process a moment earlier: it skips the FlatBuffers
// verification that append() does, and can skip the write-ahead log (flush_to_disk() makes the
// records durable at the end). Why skipping verification is safe: verification exists to keep
// bytes that do not decode out of the log, and the only bytes that can fail it come from
// outside the process (a file, a socket, a fuzzer); a buffer event_builder just finished is
// well-formed by construction. Everything else stays: the offset is patched and checked to
// exist, the checksum is computed, and read() verifies every record as always, so a bug that
// slipped a bad record in would still be caught at the first read. Anything from outside the
// process must go through append().
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include <rocksdb/sst_file_writer.h>

#include "stores/event_log.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class WriteBatch;
}  // namespace rocksdb

namespace colony::stores {

inline constexpr std::string_view log_format_key = "colony.format";
inline constexpr std::string_view log_format_value = "colony-event-log/1";
inline constexpr std::string_view log_sparse_key = "colony.sparse_before";

class rocksdb_log final : public event_log {
 public:
  [[nodiscard]] static result<std::unique_ptr<rocksdb_log>> open(const std::string& path,
                                                                 const log_options& opts);
  ~rocksdb_log() override;

  [[nodiscard]] result<log_offset> append(std::span<const bytes_view> records) override;
  [[nodiscard]] result<std::uint64_t> read(log_offset from, log_offset to,
                                           const record_sink& sink) override;
  [[nodiscard]] result<log_offset> end_offset() override;
  [[nodiscard]] result<log_offset> wait_for(log_offset offset,
                                            std::chrono::milliseconds timeout) override;
  [[nodiscard]] std::string describe() const override { return "rocksdb:" + path_; }
  // "colony.sparse_before" in the default column family holds the mark (8 bytes, big-endian),
  // written in the same WriteBatch as the deletes.
  [[nodiscard]] result<void> trim(std::span<const log_offset> offsets,
                                  log_offset sparse_before) override;
  [[nodiscard]] log_offset sparse_before() const override;
  // The trusted path below; relaxed durability skips the write-ahead log.
  [[nodiscard]] result<log_offset> append_bulk(std::span<const bytes_view> records,
                                               const bulk_options& opts) override {
    if (opts.table_files) return append_to_table(records);
    return append_trusted(records, opts.relaxed_durability);
  }
  // The trusted path into table files: records are written with RocksDB's SstFileWriter (the
  // events column family's format: LZ4 blocks of 32 KiB) and the file is ingested at 64 MiB or
  // at flush_to_disk() (or sync_appended(), or closing the log). No WAL, no memtable, no flush:
  // the sim's log costs a third less CPU this way (docs/results.md). Until a file is ingested
  // its records are counted by end_offset() but not readable; a crash loses the open file (a
  // prefix of the log survives). REQUIRES: as append_trusted.
  [[nodiscard]] result<log_offset> append_to_table(std::span<const bytes_view> records);
  [[nodiscard]] result<void> flush() override { return flush_to_disk(); }
  // Syncs the write-ahead log (nothing when every append was synced already); after a
  // skip_wal append it is flush_to_disk().
  [[nodiscard]] result<void> sync_appended() override;

  // The trusted bulk path (see the top of this file). With skip_wal, the records live only in
  // RocksDB's memtables (readers in this process see them) until a memtable flush or
  // flush_to_disk(): a crash before then loses an unflushed tail of the log (what survives is a
  // prefix: memtables flush in offset order). Only for logs that can be rebuilt from their
  // inputs, such as a sim log. REQUIRES: records made by messages::event_builder in this process.
  [[nodiscard]] result<log_offset> append_trusted(std::span<const bytes_view> records,
                                                  bool skip_wal);
  // Flushes the memtables to table files and syncs, so that everything appended so far
  // (including skip_wal appends) is on stable storage.
  [[nodiscard]] result<void> flush_to_disk();

  // For tests that simulate damage below the checksum: writes raw value bytes at an offset.
  [[nodiscard]] result<void> debug_put_raw(log_offset offset, const std::string& value);

 private:
  rocksdb_log() = default;
  [[nodiscard]] result<log_offset> refresh_end();
  [[nodiscard]] result<log_offset> append_impl(std::span<const bytes_view> records, bool verify,
                                               bool skip_wal);
  // Finishes the open table file and ingests it. REQUIRES: mu_ held.
  [[nodiscard]] result<void> ingest_table_locked();

  std::string path_;
  log_options opts_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* events_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;
  std::mutex mu_;  // guards next_ and serialises appends
  std::condition_variable grew_;
  log_offset next_ = 0;
  std::atomic<log_offset> sparse_before_{0};  // read() tolerates missing offsets below it
  bool unsynced_ = false;     // an append since the last sync left the WAL unsynced (under mu_)
  bool wal_skipped_ = false;  // a skip_wal append since the last flush_to_disk (under mu_)
  std::string scratch_;       // value buffer reused across appends (under mu_)
  std::unique_ptr<rocksdb::WriteBatch> batch_;     // reused across appends (under mu_): warm memory
  std::unique_ptr<rocksdb::SstFileWriter> table_;  // the open table file (under mu_)
  std::string table_path_;
  std::uint64_t table_bytes_ = 0;
  std::uint64_t tables_ = 0;  // table files written, for their names
};

// Big-endian offset key.
[[nodiscard]] std::string offset_key(log_offset offset);
[[nodiscard]] log_offset key_offset(std::string_view key);

}  // namespace colony::stores
