// log_sink: where the sim's numbered records go. Records collect in a batch; a full batch is
// handed to an appender thread, and the next batch is built meanwhile.
//
// Appending runs one batch behind the producer: flush() hands the full batch to the appender
// and goes on. The appender takes batches in flush order, so the log and the tap see the same
// records in the same order as a synchronous append would (the log is byte-identical). At most
// three batches wait, which bounds memory when the disk is slower than the simulation. An append
// error stops the appender; the next flush() or finish() returns it, and nothing after the failed
// batch is appended (the log stays a prefix of what was emitted).
//
// A tap (set_tap) reads every record on the appender thread, in log order, off the producer's
// critical path (the sim's metrics observer); mark() queues a call at the current position of
// the stream (a metrics sample: it then sees exactly the records before it). Both run on the
// appender thread, so what they touch belongs to it until finish() returns.
//
// Records go through event_log::append_bulk with relaxed durability, into table files (the
// RocksDB log writes them past its memtable, readable after flush()): the sim's records were
// made in this process a moment ago, nothing reads the log back before finish(), and a sim log
// is reproducible from its inputs, so it is not crash-safe until finish() (which flushes the
// log) returns.
// Thread-safety: one producer thread calls every method.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "actors/entities/entity_actors.hpp"
#include "messages/codec.hpp"
#include "stores/event_log.hpp"

namespace colony::sim {

class log_sink {
 public:
  // log: nullptr = no log (the tap still reads every record).
  explicit log_sink(stores::event_log* log);
  ~log_sink();
  log_sink(const log_sink&) = delete;
  log_sink& operator=(const log_sink&) = delete;

  // A record already numbered by the caller (its envelope carries its offset).
  void add_numbered(std::span<const std::uint8_t> rec);
  [[nodiscard]] bool should_flush() const { return batch_->size() >= flush_records; }

  // Called on the appender thread with every record, in log order (set before the first record).
  void set_tap(std::function<void(std::span<const std::uint8_t>)> tap) { tap_ = std::move(tap); }
  // Calls fn on the appender thread once the tap has read every record added so far.
  void mark(std::function<void()> fn) { marks_.emplace_back(batch_->size(), std::move(fn)); }

  // Hands the current batch to the appender; returns an earlier append's error.
  [[nodiscard]] result<void> flush();
  // Flushes the last batch, waits for the appender and makes the log durable.
  [[nodiscard]] result<void> finish();

  [[nodiscard]] log_offset next_offset() const { return next_; }
  // Final once finish() has returned.
  [[nodiscard]] double append_seconds() const { return append_seconds_; }

  static constexpr std::size_t flush_records = 8192;

 private:
  static constexpr std::size_t max_queued = 3;

  using mark_list = std::vector<std::pair<std::size_t, std::function<void()>>>;
  struct queued {
    std::shared_ptr<const entities::record_batch> batch;
    mark_list marks;  // (records of the batch before it, call)
  };

  void stop_appender();
  void append_loop();
  result<void> append_one(const entities::record_batch& b,
                          std::vector<messages::bytes_view>& views);
  void run_tap(const queued& q);

  stores::event_log* log_;
  std::shared_ptr<entities::record_batch> batch_;
  std::vector<std::shared_ptr<entities::record_batch>> spare_;  // handed on, maybe still in use
  log_offset next_ = 0;
  // Appender state: the queue, the first error and the stop flag are guarded by mu_; the append
  // time belongs to the appender thread until it is joined.
  std::mutex mu_;
  std::condition_variable work_;   // a batch was queued, or stop
  std::condition_variable space_;  // a batch was appended
  std::deque<queued> queue_;
  std::function<void(std::span<const std::uint8_t>)> tap_;
  mark_list marks_;  // of the batch being built
  std::optional<error> error_;
  bool stopping_ = false;
  double append_seconds_ = 0;
  std::thread appender_;  // last: started after every member it uses is constructed
};

}  // namespace colony::sim
