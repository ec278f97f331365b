#include "stores/rocksdb_log.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <span>
#include <vector>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <xxhash.h>

#include "messages/aligned.hpp"

namespace colony::stores {

namespace fs = std::filesystem;

std::string offset_key(log_offset offset) {
  std::string k(8, '\0');
  for (int i = 7; i >= 0; --i) {
    k[static_cast<std::size_t>(i)] = static_cast<char>(offset & 0xff);
    offset >>= 8;
  }
  return k;
}

log_offset key_offset(std::string_view key) {
  log_offset o = 0;
  for (std::size_t i = 0; i < 8 && i < key.size(); ++i)
    o = (o << 8) | static_cast<std::uint8_t>(key[i]);
  return o;
}

namespace {

constexpr std::size_t checksum_bytes = 8;

std::uint64_t checksum(const std::uint8_t* p, std::size_t n) { return XXH3_64bits(p, n); }

// The checksum of n bytes as stored: 8 bytes, little-endian.
std::array<char, checksum_bytes> stored_checksum(const std::uint8_t* p, std::size_t n) {
  const std::uint64_t sum = checksum(p, n);
  std::array<char, checksum_bytes> out{};
  for (std::size_t b = 0; b < checksum_bytes; ++b)
    out[b] = static_cast<char>((sum >> (8 * b)) & 0xff);
  return out;
}

// The stored value of record r at offset off into out: checksum + the record, with the offset
// patched in (through tmp) when the envelope does not carry it already. false: the envelope has
// no offset field (not made by event_builder).
bool encode_value(std::span<const std::uint8_t> r, log_offset off, std::vector<std::uint8_t>& tmp,
                  std::string& out) {
  std::span<const std::uint8_t> bytes = r;
  if (off == 0 || wire::GetEnvelope(r.data())->offset() != off) {
    tmp.assign(r.begin(), r.end());
    if (!messages::patch_offset(tmp, off)) return false;
    bytes = tmp;
  }
  const auto sum = stored_checksum(bytes.data(), bytes.size());
  out.assign(sum.data(), checksum_bytes);
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return true;
}

std::uint64_t get_le64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

error from_status(const rocksdb::Status& s, const std::string& where) {
  errc code = errc::internal;
  if (s.IsCorruption())
    code = errc::corrupt;
  else if (s.IsIOError() || s.IsBusy() || s.IsTryAgain())
    code = errc::unavailable;
  else if (s.IsNotFound())
    code = errc::not_found;
  else if (s.IsInvalidArgument())
    code = errc::invalid_input;
  return error{code, "RocksDB: " + s.ToString(), where};
}

rocksdb::ColumnFamilyOptions events_cf_options(const log_options& opts) {
  rocksdb::ColumnFamilyOptions o;
  // Appends arrive in key order and are read sequentially; a large memtable and LZ4
  // keep flushes cheap without costing the appender much.
  o.write_buffer_size = opts.memtable_bytes > 0 ? opts.memtable_bytes : std::size_t{64} << 20;
  // Up to 4 memtables (256 MiB) so that a bulk writer (the sim) is not stalled while the
  // previous memtable is compressed and flushed on a busy machine; a small writer needs 2.
  o.max_write_buffer_number = opts.memtable_bytes > 0 ? 2 : 4;
  o.compression = rocksdb::kLZ4Compression;
  // Files compacted into the last level are rewritten once more: there ZSTD's ratio (about
  // 1.7x LZ4's on Colony records) is worth its extra CPU.
  o.bottommost_compression = rocksdb::kZSTD;
  o.bottommost_compression_opts.level = 1;
  o.bottommost_compression_opts.enabled = true;
  rocksdb::BlockBasedTableOptions t;
  t.block_size = 32 << 10;
  if (opts.block_cache_bytes > 0) t.block_cache = rocksdb::NewLRUCache(opts.block_cache_bytes);
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  // Offsets are big-endian keys appended in order: with one hint for the whole key space (the
  // first key byte, 0 below 2^56 offsets) the memtable inserts after the previous key instead of
  // searching the skip list from the top on every append.
  o.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(1));
  return o;
}

}  // namespace

result<std::unique_ptr<rocksdb_log>> rocksdb_log::open(const std::string& path,
                                                       const log_options& opts) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  bool exists = !ec && fs::exists(st);
  if (exists && !fs::is_directory(st))
    return fail(errc::invalid_input, "not a Colony log: a file, not a log directory", path);
  if (exists && !fs::exists(fs::path(path) / "CURRENT")) {
    bool empty = fs::is_empty(path, ec);
    if (!empty)
      return fail(errc::invalid_input,
                  "not a Colony log: the directory exists but holds no RocksDB database", path);
  }
  if (!exists && (!opts.create_if_missing || opts.read_only))
    return fail(errc::not_found, "no log here", path);
  bool fresh = !exists || !fs::exists(fs::path(path) / "CURRENT");
  if (!exists) {
    fs::create_directories(path, ec);
    if (ec)
      return fail(errc::invalid_input, "cannot create the log directory: " + ec.message(), path);
  }

  rocksdb::DBOptions dbo;
  dbo.create_if_missing = opts.create_if_missing && !opts.read_only;
  dbo.create_missing_column_families = !opts.read_only;
  dbo.max_background_jobs = 2;
  dbo.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  dbo.keep_log_file_num = 2;
  // A write-ahead log file is deleted once every column family has flushed what it holds; the
  // default family (the format marker, the sparse mark) rarely fills its memtable, so without a
  // cap a small-memtable log kept every WAL file since its creation until the next open (a node
  // agent: its whole raw log, ~60 MB an hour). Past the cap RocksDB flushes the family holding
  // the oldest file. Default (0): RocksDB's, 4 x every family's memtables.
  if (opts.memtable_bytes > 0) dbo.max_total_wal_size = 4 * opts.memtable_bytes;
  // Insert hints (events_cf_options) are ignored by concurrent memtable writes; appends are
  // serialised by mu_ anyway.
  dbo.allow_concurrent_memtable_write = false;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs{
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {"events", events_cf_options(opts)}};
  if (!fresh) {
    std::vector<std::string> names;
    auto s = rocksdb::DB::ListColumnFamilies(dbo, path, &names);
    if (!s.ok()) return tl::unexpected(from_status(s, path));
    if (std::find(names.begin(), names.end(), "events") == names.end())
      return fail(errc::invalid_input,
                  "not a Colony log: RocksDB database without an 'events' column family", path);
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  auto s = opts.read_only ? rocksdb::DB::OpenForReadOnly(dbo, path, cfs, &handles, &raw)
                          : rocksdb::DB::Open(dbo, path, cfs, &handles, &raw);
  if (!s.ok()) return tl::unexpected(from_status(s, path));
  std::unique_ptr<rocksdb_log> log(new rocksdb_log());
  log->db_.reset(raw);
  log->meta_ = handles[0];
  log->events_ = handles[1];
  log->path_ = path;
  log->opts_ = opts;

  std::string format;
  s = raw->Get(rocksdb::ReadOptions(), log->meta_, std::string(log_format_key), &format);
  if (s.IsNotFound() && fresh && !opts.read_only) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = raw->Put(wo, log->meta_, std::string(log_format_key), std::string(log_format_value));
    if (!s.ok()) return tl::unexpected(from_status(s, path));
  } else if (s.IsNotFound()) {
    return fail(errc::invalid_input, "not a Colony log: no colony.format marker", path);
  } else if (!s.ok()) {
    return tl::unexpected(from_status(s, path));
  } else if (format != log_format_value) {
    return fail(errc::failed_precondition,
                "unsupported log format '" + format + "' (this colony reads " +
                    std::string(log_format_value) + ")",
                path);
  }
  std::string sparse;
  s = raw->Get(rocksdb::ReadOptions(), log->meta_, std::string(log_sparse_key), &sparse);
  if (s.ok()) {
    if (sparse.size() != 8)
      return fail(errc::corrupt,
                  "colony.sparse_before holds " + std::to_string(sparse.size()) + " bytes, not 8",
                  path);
    log->sparse_before_ = key_offset(sparse);
  } else if (!s.IsNotFound()) {
    return tl::unexpected(from_status(s, path));
  }
  if (auto e = log->refresh_end(); !e) return tl::unexpected(e.error());
  return log;
}

log_offset rocksdb_log::sparse_before() const { return sparse_before_.load(); }

result<void> rocksdb_log::trim(std::span<const log_offset> offsets, log_offset sparse_before) {
  if (opts_.read_only) return fail(errc::failed_precondition, "log opened read-only", path_);
  std::lock_guard lk(mu_);
  const log_offset mark = std::max(sparse_before, sparse_before_.load());
  if (mark > next_)
    return fail(
        errc::invalid_input,
        "sparse mark " + std::to_string(mark) + " beyond the log's end " + std::to_string(next_),
        path_);
  rocksdb::WriteBatch batch;
  for (const auto off : offsets) {
    if (off >= mark)
      return fail(
          errc::invalid_input,
          "offset " + std::to_string(off) + " is not below the sparse mark " + std::to_string(mark),
          path_);
    auto st = batch.Delete(events_, offset_key(off));
    if (!st.ok()) return tl::unexpected(from_status(st, path_));
  }
  auto st = batch.Put(meta_, std::string(log_sparse_key), offset_key(mark));
  if (!st.ok()) return tl::unexpected(from_status(st, path_));
  rocksdb::WriteOptions wo;
  wo.sync = opts_.sync;
  st = db_->Write(wo, &batch);
  if (!st.ok()) return tl::unexpected(from_status(st, path_));
  sparse_before_ = mark;
  return {};
}

rocksdb_log::~rocksdb_log() {
  if (db_ && table_) {
    std::lock_guard lk(mu_);
    (void)ingest_table_locked();
  }
  if (db_) {
    if (events_) db_->DestroyColumnFamilyHandle(events_).PermitUncheckedError();
    if (meta_) db_->DestroyColumnFamilyHandle(meta_).PermitUncheckedError();
    db_->Close().PermitUncheckedError();
  }
}

result<log_offset> rocksdb_log::refresh_end() {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), events_));
  it->SeekToLast();
  if (!it->status().ok()) return tl::unexpected(from_status(it->status(), path_));
  std::lock_guard<std::mutex> lk(mu_);
  next_ = it->Valid() ? key_offset(it->key().ToStringView()) + 1 : 0;
  return next_;
}

result<log_offset> rocksdb_log::append(std::span<const bytes_view> records) {
  return append_impl(records, true, false);
}

result<log_offset> rocksdb_log::append_trusted(std::span<const bytes_view> records, bool skip_wal) {
  return append_impl(records, false, skip_wal);
}

result<log_offset> rocksdb_log::append_impl(std::span<const bytes_view> records, bool verify,
                                            bool skip_wal) {
  if (opts_.read_only) return fail(errc::failed_precondition, "log opened read-only", path_);
  if (records.empty()) return fail(errc::invalid_input, "empty append", path_);
  std::unique_lock<std::mutex> lk(mu_);
  // Records of an open table file come first: ingest them before this batch goes on top.
  if (auto g = ingest_table_locked(); !g) return tl::unexpected(g.error());
  const log_offset first = next_;
  std::size_t total = 0;
  for (const auto& r : records) total += r.size() + checksum_bytes + 24;
  if (!batch_) batch_ = std::make_unique<rocksdb::WriteBatch>(total + 64);
  auto& batch = *batch_;
  batch.Clear();
  std::vector<std::uint8_t> rec;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const log_offset off = first + i;
    const auto& r = records[i];
    if (verify) {
      if (auto d = messages::decode(r, path_ + " append #" + std::to_string(i)); !d)
        return tl::unexpected(d.error());
    } else if (r.size() < 12) {
      return fail(errc::invalid_input, "record too short to be an envelope",
                  path_ + " append #" + std::to_string(i));
    }
    const auto key = offset_key(off);
    rocksdb::Status s;
    if (!verify && off != 0 && wire::GetEnvelope(r.data())->offset() == off) {
      // A trusted record that already carries its offset (the sim's sink numbers its records
      // as the log does): stored as checksum + record without another copy.
      const auto sum = stored_checksum(r.data(), r.size());
      const rocksdb::Slice parts[2] = {
          rocksdb::Slice(sum.data(), checksum_bytes),
          rocksdb::Slice(reinterpret_cast<const char*>(r.data()), r.size())};
      const rocksdb::Slice key_part(key);
      s = batch.Put(events_, rocksdb::SliceParts(&key_part, 1), rocksdb::SliceParts(parts, 2));
    } else {
      if (!encode_value(r, off, rec, scratch_))
        return fail(errc::invalid_input, "envelope has no offset field (not made by event_builder)",
                    path_ + " append #" + std::to_string(i));
      s = batch.Put(events_, key, scratch_);
    }
    if (!s.ok()) return tl::unexpected(from_status(s, path_));
  }
  rocksdb::WriteOptions wo;
  wo.sync = opts_.sync && !skip_wal;
  wo.disableWAL = skip_wal;
  auto s = db_->Write(wo, &batch);
  if (!s.ok()) return tl::unexpected(from_status(s, path_));
  unsynced_ = unsynced_ || !wo.sync;
  wal_skipped_ = wal_skipped_ || skip_wal;
  next_ = first + records.size();
  lk.unlock();
  grew_.notify_all();
  return first;
}

result<log_offset> rocksdb_log::append_to_table(std::span<const bytes_view> records) {
  if (opts_.read_only) return fail(errc::failed_precondition, "log opened read-only", path_);
  if (records.empty()) return fail(errc::invalid_input, "empty append", path_);
  std::unique_lock<std::mutex> lk(mu_);
  const log_offset first = next_;
  if (!table_) {
    table_path_ = (fs::path(path_) / ("bulk-" + std::to_string(tables_++) + ".sst")).string();
    // A bulk table (the sim's log) is written once and read in order: ZSTD level 1 over 128 KiB
    // blocks keeps the plain openb run's 24 GB of records in 2.4 GB on disk (LZ4 over 32 KiB:
    // 4.0 GB) at no cost the README run can measure (docs/results.md).
    rocksdb::Options o(rocksdb::DBOptions(), events_cf_options(opts_));
    o.compression = rocksdb::kZSTD;
    o.compression_opts.level = 1;
    rocksdb::BlockBasedTableOptions t;
    t.block_size = 128 << 10;
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    table_ = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(), o, events_);
    if (auto s = table_->Open(table_path_); !s.ok()) {
      table_.reset();
      return tl::unexpected(from_status(s, table_path_));
    }
    table_bytes_ = 0;
  }
  std::vector<std::uint8_t> rec;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const log_offset off = first + i;
    const auto& r = records[i];
    if (r.size() < 12)
      return fail(errc::invalid_input, "record too short to be an envelope",
                  path_ + " append #" + std::to_string(i));
    if (!encode_value(r, off, rec, scratch_))
      return fail(errc::invalid_input, "envelope has no offset field (not made by event_builder)",
                  path_ + " append #" + std::to_string(i));
    if (auto s = table_->Put(offset_key(off), scratch_); !s.ok())
      return tl::unexpected(from_status(s, table_path_));
    table_bytes_ += scratch_.size() + 8;
  }
  next_ = first + records.size();
  wal_skipped_ = true;
  unsynced_ = true;
  if (table_bytes_ >= (64u << 20))
    if (auto g = ingest_table_locked(); !g) return tl::unexpected(g.error());
  lk.unlock();
  grew_.notify_all();
  return first;
}

result<void> rocksdb_log::ingest_table_locked() {
  if (!table_) return {};
  auto w = std::move(table_);
  if (auto s = w->Finish(); !s.ok()) return tl::unexpected(from_status(s, table_path_));
  rocksdb::IngestExternalFileOptions io;
  io.move_files = true;
  // The keys follow everything in the log: the file goes below it, nothing is rewritten.
  io.snapshot_consistency = false;
  auto s = db_->IngestExternalFile(events_, {table_path_}, io);
  if (!s.ok()) return tl::unexpected(from_status(s, table_path_));
  std::error_code ec;
  fs::remove(table_path_, ec);  // moved (linked) into the database; the name is ours to drop
  return {};
}

result<void> rocksdb_log::sync_appended() {
  if (opts_.read_only) return {};
  bool skipped = false;
  {
    std::lock_guard lk(mu_);
    if (!unsynced_) return {};
    skipped = wal_skipped_;
    // Cleared before the sync: an append racing with it sets the flag again.
    unsynced_ = false;
  }
  if (skipped) return flush_to_disk();
  auto s = db_->SyncWAL();
  if (!s.ok()) {
    std::lock_guard lk(mu_);
    unsynced_ = true;
    return tl::unexpected(from_status(s, path_));
  }
  return {};
}

result<void> rocksdb_log::flush_to_disk() {
  if (opts_.read_only) return {};
  {
    std::lock_guard lk(mu_);
    if (auto g = ingest_table_locked(); !g) return g;
    wal_skipped_ = false;
    unsynced_ = false;
  }
  rocksdb::FlushOptions fo;
  fo.wait = true;
  auto s = db_->Flush(fo, events_);
  if (!s.ok()) return tl::unexpected(from_status(s, path_));
  s = db_->FlushWAL(true);
  if (!s.ok()) return tl::unexpected(from_status(s, path_));
  return {};
}

result<std::uint64_t> rocksdb_log::read(log_offset from, log_offset to, const record_sink& sink) {
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  ro.readahead_size = 2 << 20;
  std::string upper;
  rocksdb::Slice upper_slice;
  if (to != no_offset) {
    upper = offset_key(to);
    upper_slice = rocksdb::Slice(upper);
    ro.iterate_upper_bound = &upper_slice;
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, events_));
  std::uint64_t n = 0;
  log_offset expect = from;
  messages::byte_buffer aligned;  // values sit at any address inside RocksDB's blocks
  for (it->Seek(offset_key(from)); it->Valid(); it->Next()) {
    const log_offset off = key_offset(it->key().ToStringView());
    auto where = path_ + " offset " + std::to_string(off);
    // Below the sparse mark trimmed records leave holes; from it on the log is dense.
    if (off != expect && (off < expect || off > std::max(expect, sparse_before_.load())))
      return fail(errc::corrupt, "gap in the log: expected offset " + std::to_string(expect),
                  where);
    expect = off;
    auto v = it->value();
    if (v.size() < checksum_bytes + 12)
      return fail(errc::corrupt,
                  "stored record of " + std::to_string(v.size()) + " bytes is too short", where);
    const auto* data = reinterpret_cast<const std::uint8_t*>(v.data()) + checksum_bytes;
    const std::size_t len = v.size() - checksum_bytes;
    if (get_le64(v.data()) != checksum(data, len))
      return fail(errc::corrupt, "record checksum mismatch (the stored bytes were altered)", where);
    const bytes_view bytes = messages::realign(bytes_view(data, len), aligned);
    auto d = messages::decode(bytes, where);
    if (!d) return tl::unexpected(d.error());
    if (d->envelope->offset() != off)
      return fail(errc::corrupt,
                  "envelope says offset " + std::to_string(d->envelope->offset()) +
                      " but it is stored at " + std::to_string(off),
                  where);
    ++n;
    ++expect;
    if (!sink(off, bytes)) return n;
  }
  if (!it->status().ok()) return tl::unexpected(from_status(it->status(), path_));
  return n;
}

result<log_offset> rocksdb_log::end_offset() {
  if (opts_.read_only) return refresh_end();
  std::lock_guard<std::mutex> lk(mu_);
  return next_;
}

result<log_offset> rocksdb_log::wait_for(log_offset offset, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  grew_.wait_for(lk, timeout, [&] { return next_ > offset; });
  return next_;
}

result<void> rocksdb_log::debug_put_raw(log_offset offset, const std::string& value) {
  rocksdb::WriteOptions wo;
  wo.sync = true;
  auto s = db_->Put(wo, events_, offset_key(offset), value);
  if (!s.ok()) return tl::unexpected(from_status(s, path_));
  return {};
}

}  // namespace colony::stores
