// snapshot_store: each entity actor's state at a log offset, in its own RocksDB database.
//
// A snapshot "at N" holds the state after applying records [0, N). Keys:
//   's' + be64(N) + kind + key -> state bytes (the entity's canonical encoding)
//   'm' + be64(N)              -> manifest: entity count and state digest, written last
// A snapshot without a manifest (a writer killed mid-way) does not exist for readers and is
// deleted by the next write. Restart = latest() + read() + replay of the log from N.
//
// Thread-safety: one writer; readers may run concurrently with it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "messages/result.hpp"
#include "messages/units.hpp"

namespace rocksdb {
class DB;
}

namespace colony::stores {

struct write_batch_holder;

struct snapshot_manifest {
  log_offset at = 0;
  std::uint64_t entities = 0;
  std::uint64_t digest = 0;
};

class snapshot_store {
 public:
  [[nodiscard]] static result<std::unique_ptr<snapshot_store>> open(const std::string& path,
                                                                    bool create_if_missing);
  ~snapshot_store();

  // Streams one snapshot. put() in any order; commit() makes it visible atomically.
  class writer {
   public:
    ~writer();
    writer(const writer&) = delete;
    writer& operator=(const writer&) = delete;
    [[nodiscard]] result<void> put(std::uint8_t kind, std::string_view key, std::string_view state);
    [[nodiscard]] result<void> commit(std::uint64_t digest);

   private:
    friend class snapshot_store;
    writer(snapshot_store* s, log_offset at);
    [[nodiscard]] result<void> flush();
    snapshot_store* store_;
    log_offset at_;
    std::uint64_t count_ = 0;
    std::string batch_rep_;
    std::unique_ptr<write_batch_holder> batch_;
  };
  [[nodiscard]] result<std::unique_ptr<writer>> begin(log_offset at);

  // The newest complete snapshot, if any.
  [[nodiscard]] result<std::optional<snapshot_manifest>> latest();

  // Delivers every entity state of the snapshot at `at`, ordered by (kind, key).
  [[nodiscard]] result<std::uint64_t> read(
      log_offset at,
      const std::function<void(std::uint8_t kind, std::string_view key, std::string_view state)>&
          sink);

  // Keeps the newest `keep` complete snapshots; deletes older ones and incomplete ones.
  [[nodiscard]] result<void> prune(std::size_t keep);

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  snapshot_store() = default;
  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace colony::stores
