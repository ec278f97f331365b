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
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "stores/event_log.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
}  // namespace rocksdb

namespace colony::stores {

inline constexpr std::string_view log_format_key = "colony.format";
inline constexpr std::string_view log_format_value = "colony-event-log/1";

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

  // For tests that simulate damage below the checksum: writes raw value bytes at an offset.
  [[nodiscard]] result<void> debug_put_raw(log_offset offset, const std::string& value);

 private:
  rocksdb_log() = default;
  [[nodiscard]] result<log_offset> refresh_end();

  std::string path_;
  log_options opts_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* events_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;
  std::mutex mu_;  // guards next_ and serialises appends
  std::condition_variable grew_;
  log_offset next_ = 0;
  std::string scratch_;  // value buffer reused across appends (under mu_)
};

// Big-endian offset key.
[[nodiscard]] std::string offset_key(log_offset offset);
[[nodiscard]] log_offset key_offset(std::string_view key);

}  // namespace colony::stores
