// event_log: the one store interface actors and the sim see. Backends: the embedded RocksDB
// log (rocksdb_log.hpp) and, later, Kafka. Every backend passes the contract suite in
// tests/stores/event_log_contract.hpp.
//
// Records are colony.fbs Envelopes. append() verifies every record (a log never holds bytes
// that do not decode) and writes the assigned offset into the stored envelope. read()
// verifies every record again before handing it out, and stops with an error naming the
// offset at the first bad one, after delivering every record before it.
//
// Thread-safety: one appender at a time (appends are serialised internally); any number of
// concurrent readers; wait_for() may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "messages/codec.hpp"
#include "messages/result.hpp"
#include "messages/units.hpp"

namespace colony::stores {

using messages::bytes_view;

// Called once per record, in offset order; bytes are valid only during the call and have
// passed messages::decode(). Return false to stop reading.
using record_sink = std::function<bool(log_offset offset, bytes_view bytes)>;

class event_log {
 public:
  virtual ~event_log() = default;

  // Appends records atomically (all or none) and in order; returns the first record's
  // offset. With sync on (the default), they are on stable storage when this returns.
  // REQUIRES: records non-empty; each a verifiable Envelope made by messages::event_builder.
  [[nodiscard]] virtual result<log_offset> append(std::span<const bytes_view> records) = 0;

  // Delivers records with offsets in [from, to) (to = no_offset: up to the end).
  // Returns how many were delivered.
  [[nodiscard]] virtual result<std::uint64_t> read(log_offset from, log_offset to,
                                                   const record_sink& sink) = 0;

  // The offset the next append gets; equals the record count (offsets start at 0).
  [[nodiscard]] virtual result<log_offset> end_offset() = 0;

  // Blocks until end_offset() > offset or the timeout passes; returns end_offset().
  // This is how tail works: read to the end, then wait_for(last read).
  [[nodiscard]] virtual result<log_offset> wait_for(log_offset offset,
                                                    std::chrono::milliseconds timeout) = 0;

  // "rocksdb:PATH" or "kafka://host:port/topic", for messages.
  [[nodiscard]] virtual std::string describe() const = 0;

  // The bulk path of an in-process writer whose records event_builder made in this process a
  // moment ago (the sim). A backend may skip re-verifying them and, with relaxed durability,
  // defer durability to flush() (what survives a crash before it is a prefix). Default: append().
  // REQUIRES: as append(), and records made in this process (never bytes from outside).
  struct bulk_options {
    bool relaxed_durability = false;
    // Straight into table files, past the memtable (a backend that has them): cheaper for a
    // writer that reads nothing back while it writes, since the records are readable (and
    // durable) only after flush(). Implies relaxed durability. Default: false.
    bool table_files = false;
  };
  [[nodiscard]] virtual result<log_offset> append_bulk(std::span<const bytes_view> records,
                                                       const bulk_options& /*opts*/) {
    return append(records);
  }
  // Makes everything appended so far durable (after append_bulk with relaxed durability).
  // Default: nothing to do (append is durable per its log_options).
  [[nodiscard]] virtual result<void> flush() { return {}; }
  // Group durability for a log opened with log_options::sync = false: makes every record
  // append() took so far durable at once (one WAL sync for many appends), so a writer syncs
  // once before it acts on what it appended instead of once per append. Default: flush().
  [[nodiscard]] virtual result<void> sync_appended() { return flush(); }

  // Retention by record, as Kafka's compaction keeps offsets: deletes the records at `offsets`
  // (each below `sparse_before`) and marks the log as sparse below `sparse_before` (never
  // lowered), where read() then skips the missing offsets instead of calling them a gap. Above
  // it the log stays dense and a missing offset is corruption. Atomic. Offsets of later records
  // do not change. Default: failed_precondition (a backend without it).
  [[nodiscard]] virtual result<void> trim(std::span<const log_offset> /*offsets*/,
                                          log_offset /*sparse_before*/) {
    return fail(errc::failed_precondition, "this log cannot drop records", describe());
  }
  // The offset below which records may have been trimmed (0: none was).
  [[nodiscard]] virtual log_offset sparse_before() const { return 0; }
};

struct log_options {
  // Create the log if it does not exist. Default: true for writers, false for readers.
  bool create_if_missing = true;
  // fsync the WAL once per appended batch. Default: true (nothing acknowledged is lost).
  bool sync = true;
  // Open read-only (a second process may read while one writes). Default: false.
  bool read_only = false;
  // Memory the embedded log keeps before it writes to disk, in bytes: each memtable (0: 64 MiB,
  // up to 4 of them, for a bulk writer such as the sim) and the read block cache (0: RocksDB's
  // default). A node agent appending a few KB a second sets small ones: a memtable is resident
  // until it is flushed. Ignored by the Kafka backend.
  std::size_t memtable_bytes = 0;
  std::size_t block_cache_bytes = 0;
};

// Opens a log by name: a filesystem path is the embedded RocksDB log;
// kafka://host:port/topic is reserved for the Kafka backend.
[[nodiscard]] result<std::unique_ptr<event_log>> open_log(std::string_view name,
                                                          const log_options& opts);

}  // namespace colony::stores
