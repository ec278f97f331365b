#include "sim/log_sink.hpp"

#include <atomic>
#include <chrono>

#include <pthread.h>

namespace colony::sim {

namespace {

using steady = std::chrono::steady_clock;

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

}  // namespace

log_sink::log_sink(stores::event_log* log) : log_(log) {
  batch_ = std::make_shared<entities::record_batch>();
  appender_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "colony-append");  // for top/perf
    append_loop();
  });
}

log_sink::~log_sink() { stop_appender(); }

void log_sink::add_numbered(std::span<const std::uint8_t> rec) {
  batch_->add(rec);
  ++next_;
}

result<void> log_sink::flush() {
  if (batch_->size() > 0 || !marks_.empty()) {
    const std::size_t cap = batch_->data.size();
    std::shared_ptr<const entities::record_batch> full = batch_;
    {
      std::unique_lock lk(mu_);
      space_.wait(lk, [&] { return queue_.size() < max_queued; });
      queue_.push_back({full, std::move(marks_)});
    }
    marks_.clear();
    work_.notify_one();
    full.reset();
    // Reuse a batch that the appender is done with (its memory is warm); else a
    // new one.
    spare_.push_back(std::move(batch_));
    batch_.reset();
    for (auto& b : spare_) {
      if (b.use_count() == 1) {
        // Pairs with the release in the appender's last shared_ptr release: its reads of
        // the batch happen before we write to it.
        std::atomic_thread_fence(std::memory_order_acquire);
        batch_ = std::move(b);
        break;
      }
    }
    std::erase(spare_, nullptr);
    if (spare_.size() > max_queued + 4) spare_.erase(spare_.begin());
    if (!batch_) batch_ = std::make_shared<entities::record_batch>();
    batch_->clear();
    batch_->data.reserve(cap + cap / 8);
    batch_->starts.reserve(flush_records + 64);
    batch_->ends.reserve(flush_records + 64);
  }
  std::lock_guard lk(mu_);
  if (error_) return tl::unexpected(*error_);
  return {};
}

result<void> log_sink::finish() {
  auto f = flush();
  stop_appender();
  if (!f) return f;
  if (error_) return tl::unexpected(*error_);
  if (log_ != nullptr) {
    const auto t0 = steady::now();
    if (auto d = log_->flush(); !d) return d;
    append_seconds_ += seconds_since(t0);
  }
  return {};
}

void log_sink::stop_appender() {
  {
    std::lock_guard lk(mu_);
    if (!appender_.joinable()) return;
    stopping_ = true;
  }
  work_.notify_one();
  appender_.join();
}

// The appender thread: append each batch in flush order, then let the tap read it.
void log_sink::append_loop() {
  std::vector<messages::bytes_view> views;
  for (;;) {
    std::shared_ptr<const entities::record_batch> b;
    const queued* q = nullptr;
    {
      std::unique_lock lk(mu_);
      work_.wait(lk, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping, nothing left
      b = queue_.front().batch;
      q = &queue_.front();  // a deque's front stays put while others are pushed behind it
    }
    const bool failed = [&] {
      std::lock_guard lk(mu_);
      return error_.has_value();
    }();
    if (!failed) {
      const auto t0 = steady::now();
      auto r = append_one(*b, views);
      append_seconds_ += seconds_since(t0);
      if (r) run_tap(*q);
      if (!r) {
        std::lock_guard lk(mu_);
        error_ = r.error();
      }
    }
    b.reset();
    {
      std::lock_guard lk(mu_);
      queue_.pop_front();  // after our reference is gone, so use_count() == 1 means free
    }
    space_.notify_one();
  }
}

void log_sink::run_tap(const queued& q) {
  const auto& b = *q.batch;
  auto m = q.marks.begin();
  for (std::size_t i = 0; i <= b.size(); ++i) {
    for (; m != q.marks.end() && m->first == i; ++m) m->second();
    if (i < b.size() && tap_) tap_(b.record(i));
  }
}

result<void> log_sink::append_one(const entities::record_batch& b,
                                  std::vector<messages::bytes_view>& views) {
  views.clear();
  const std::size_t n = b.size();
  for (std::size_t i = 0; i < n; ++i) views.emplace_back(b.record(i));
  if (log_ != nullptr && n > 0) {
    stores::event_log::bulk_options bo;
    bo.relaxed_durability = true;
    bo.table_files = true;  // nothing reads the log back before finish()
    auto a = log_->append_bulk(views, bo);
    if (!a) return tl::unexpected(a.error());
  }
  return {};
}

}  // namespace colony::sim
