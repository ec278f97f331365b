#include "stores/snapshot_store.hpp"

#include <filesystem>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "stores/rocksdb_log.hpp"

namespace colony::stores {

struct write_batch_holder {
  rocksdb::WriteBatch batch;
};

namespace {

constexpr std::size_t flush_every = 20000;

std::string snap_prefix(log_offset at) { return "s" + offset_key(at); }
std::string manifest_key(log_offset at) { return "m" + offset_key(at); }

error from_status(const rocksdb::Status& s, const std::string& where) {
  return error{s.IsCorruption() ? errc::corrupt : errc::unavailable, "RocksDB: " + s.ToString(),
               where};
}

std::string encode_manifest(const snapshot_manifest& m) {
  return offset_key(m.entities) + offset_key(m.digest);
}

}  // namespace

result<std::unique_ptr<snapshot_store>> snapshot_store::open(const std::string& path,
                                                             bool create_if_missing) {
  if (create_if_missing) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec)
      return fail(errc::invalid_input, "cannot create the snapshot directory: " + ec.message(),
                  path);
  }
  rocksdb::Options o;
  o.create_if_missing = create_if_missing;
  o.compression = rocksdb::kLZ4Compression;
  o.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  o.keep_log_file_num = 2;
  o.write_buffer_size = 64 << 20;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(o, path, &raw);
  if (!s.ok()) return tl::unexpected(from_status(s, path));
  std::unique_ptr<snapshot_store> st(new snapshot_store());
  st->db_.reset(raw);
  st->path_ = path;
  return st;
}

snapshot_store::~snapshot_store() {
  if (db_) db_->Close().PermitUncheckedError();
}

snapshot_store::writer::writer(snapshot_store* s, log_offset at)
    : store_(s), at_(at), batch_(std::make_unique<write_batch_holder>()) {}

snapshot_store::writer::~writer() = default;

result<void> snapshot_store::writer::put(std::uint8_t kind, std::string_view key,
                                         std::string_view state) {
  std::string k = snap_prefix(at_);
  k.push_back(static_cast<char>(kind));
  k.append(key);
  auto s = batch_->batch.Put(k, rocksdb::Slice(state.data(), state.size()));
  if (!s.ok()) return tl::unexpected(from_status(s, store_->path_));
  ++count_;
  if (batch_->batch.Count() >= flush_every) return flush();
  return {};
}

result<void> snapshot_store::writer::flush() {
  if (batch_->batch.Count() == 0) return {};
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // the manifest write below syncs; entries without it are ignored
  auto s = store_->db_->Write(wo, &batch_->batch);
  if (!s.ok()) return tl::unexpected(from_status(s, store_->path_));
  batch_->batch.Clear();
  return {};
}

result<void> snapshot_store::writer::commit(std::uint64_t digest) {
  if (auto f = flush(); !f) return f;
  // Entries went around the WAL: flush them to SST before the manifest claims them.
  auto s = store_->db_->Flush(rocksdb::FlushOptions());
  if (!s.ok()) return tl::unexpected(from_status(s, store_->path_));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  s = store_->db_->Put(wo, manifest_key(at_), encode_manifest({at_, count_, digest}));
  if (!s.ok()) return tl::unexpected(from_status(s, store_->path_));
  return {};
}

result<std::unique_ptr<snapshot_store::writer>> snapshot_store::begin(log_offset at) {
  if (auto p = prune(1000000); !p) return tl::unexpected(p.error());  // drop incomplete ones
  auto s = db_->DeleteRange(rocksdb::WriteOptions(), db_->DefaultColumnFamily(), snap_prefix(at),
                            snap_prefix(at + 1));
  if (!s.ok()) return tl::unexpected(from_status(s, path_));
  return std::unique_ptr<writer>(new writer(this, at));
}

result<std::optional<snapshot_manifest>> snapshot_store::latest() {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  it->SeekForPrev("m\xff\xff\xff\xff\xff\xff\xff\xff\xff");
  if (!it->status().ok()) return tl::unexpected(from_status(it->status(), path_));
  if (!it->Valid() || it->key().size() != 9 || it->key()[0] != 'm')
    return std::optional<snapshot_manifest>{};
  auto v = it->value().ToStringView();
  if (v.size() != 16) return fail(errc::corrupt, "snapshot manifest of wrong size", path_);
  snapshot_manifest m;
  m.at = key_offset(it->key().ToStringView().substr(1));
  m.entities = key_offset(v.substr(0, 8));
  m.digest = key_offset(v.substr(8, 8));
  return std::optional<snapshot_manifest>{m};
}

result<std::uint64_t> snapshot_store::read(
    log_offset at,
    const std::function<void(std::uint8_t, std::string_view, std::string_view)>& sink) {
  const std::string prefix = snap_prefix(at);
  const std::string upper = snap_prefix(at + 1);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  ro.readahead_size = 2 << 20;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  std::uint64_t n = 0;
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    auto k = it->key().ToStringView();
    if (k.size() < prefix.size() + 1) return fail(errc::corrupt, "snapshot key too short", path_);
    auto v = it->value().ToStringView();
    sink(static_cast<std::uint8_t>(k[prefix.size()]), k.substr(prefix.size() + 1), v);
    ++n;
  }
  if (!it->status().ok()) return tl::unexpected(from_status(it->status(), path_));
  return n;
}

result<void> snapshot_store::prune(std::size_t keep) {
  std::vector<log_offset> complete;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek("m"); it->Valid() && it->key().starts_with("m"); it->Next())
      complete.push_back(key_offset(it->key().ToStringView().substr(1)));
    if (!it->status().ok()) return tl::unexpected(from_status(it->status(), path_));
  }
  std::vector<log_offset> keep_set(
      complete.end() - static_cast<std::ptrdiff_t>(std::min(keep, complete.size())),
      complete.end());
  // Delete every entity range that is not a kept snapshot: walk the kept offsets in order.
  log_offset lo = 0;
  auto del = [&](log_offset a, log_offset b) -> result<void> {
    if (a >= b) return {};
    auto s = db_->DeleteRange(rocksdb::WriteOptions(), db_->DefaultColumnFamily(), snap_prefix(a),
                              snap_prefix(b));
    if (s.ok())
      s = db_->DeleteRange(rocksdb::WriteOptions(), db_->DefaultColumnFamily(), manifest_key(a),
                           manifest_key(b));
    if (!s.ok()) return tl::unexpected(from_status(s, path_));
    return {};
  };
  for (auto k : keep_set) {
    if (auto r = del(lo, k); !r) return r;
    lo = k + 1;
  }
  return del(lo, no_offset);
}

}  // namespace colony::stores
