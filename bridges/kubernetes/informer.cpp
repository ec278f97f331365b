// LIST + WATCH into a store (see informer.hpp for the rules this follows).
#include "bridges/kubernetes/informer.hpp"

#include <utility>

namespace colony::kube {
namespace {

// obj[a][b] as a string, or "" when absent or not a string.
std::string field(const nlohmann::json& obj, const char* a, const char* b) {
  if (!obj.is_object()) return {};
  const auto i = obj.find(a);
  if (i == obj.end() || !i->is_object()) return {};
  const auto j = i->find(b);
  return j != i->end() && j->is_string() ? j->get<std::string>() : std::string{};
}

std::string resource_version_of(const nlohmann::json& obj) {
  return field(obj, "metadata", "resourceVersion");
}

}  // namespace

struct informer::counter_cells {
  std::atomic<std::uint64_t> lists{0}, list_pages{0}, relists{0}, watches{0}, reconnects{0},
      gone{0}, events{0}, bookmarks{0}, duplicates{0}, adds{0}, updates{0}, deletes{0}, errors{0};
};

result<std::string> object_key(const nlohmann::json& object) {
  const std::string name = field(object, "metadata", "name");
  if (name.empty())
    return fail(errc::invalid_input, "object has no metadata.name", "metadata.name");
  const std::string ns = field(object, "metadata", "namespace");
  return ns.empty() ? name : ns + "/" + name;
}

informer::informer(std::string path, informer_handlers handlers, informer_options options,
                   api_client client, watch_stream watch)
    : path_(std::move(path)),
      handlers_(std::move(handlers)),
      options_(std::move(options)),
      client_(std::move(client)),
      watch_(std::move(watch)),
      backoff_(options_.backoff_initial, options_.backoff_max, options_.backoff_jitter,
               options_.seed),
      // A second stream from the same seed, so timeouts do not shift the jitter sequence.
      timeout_rng_(options_.seed ^ 0x9E3779B97F4A7C15ULL),
      counters_(std::make_unique<counter_cells>()) {}

informer::~informer() = default;

result<std::unique_ptr<informer>> informer::create(connection conn, std::string path,
                                                   informer_handlers handlers,
                                                   informer_options options) {
  if (path.empty() || path.front() != '/' || path.find('?') != std::string::npos) {
    return fail(errc::invalid_input, "expected a collection path without a query", path);
  }
  auto client = api_client::open(conn, options.client);
  if (!client) return tl::make_unexpected(client.error());
  auto watch = watch_stream::open(std::move(conn), options.client);
  if (!watch) return tl::make_unexpected(watch.error());
  return std::unique_ptr<informer>(new informer(std::move(path), std::move(handlers),
                                                std::move(options), std::move(*client),
                                                std::move(*watch)));
}

void informer::resume_from(std::string resource_version, object_store store) {
  rv_ = std::move(resource_version);
  store_ = std::move(store);
  resumed_ = !rv_.empty();
}

informer_counters informer::counters() const {
  const counter_cells& c = *counters_;
  informer_counters s;
  s.lists = c.lists.load();
  s.list_pages = c.list_pages.load();
  s.relists = c.relists.load();
  s.watches = c.watches.load();
  s.reconnects = c.reconnects.load();
  s.gone = c.gone.load();
  s.events = c.events.load();
  s.bookmarks = c.bookmarks.load();
  s.duplicates = c.duplicates.load();
  s.adds = c.adds.load();
  s.updates = c.updates.load();
  s.deletes = c.deletes.load();
  s.errors = c.errors.load();
  return s;
}

std::optional<error> informer::last_error() const {
  std::lock_guard lk(mu_);
  return last_error_;
}

void informer::record(const error& e) {
  ++counters_->errors;
  std::lock_guard lk(mu_);
  last_error_ = e;
}

void informer::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_.store(true);
  }
  client_.interrupt();
  watch_.stop();
  cv_.notify_all();
}

bool informer::wait(std::chrono::milliseconds d) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, d, [this] { return stopping_.load(); });
  return !stopping_.load();
}

std::chrono::seconds informer::next_watch_timeout() {
  const auto min = options_.min_watch_timeout.count();
  if (min <= 0) return std::chrono::seconds(0);
  const double u = static_cast<double>(timeout_rng_() >> 11) * 0x1.0p-53;
  return std::chrono::seconds(static_cast<std::int64_t>(static_cast<double>(min) * (1.0 + u)));
}

void informer::advance(const std::string& rv) {
  if (rv.empty() || rv == rv_) return;
  rv_ = rv;
  if (handlers_.on_resource_version) handlers_.on_resource_version(rv_);
}

result<object_store> informer::list_all(std::string& list_rv) {
  object_store fresh;
  list_options o;
  o.limit = options_.page_size;
  o.label_selector = options_.label_selector;
  o.field_selector = options_.field_selector;
  while (true) {
    auto page = client_.list(path_, o);
    if (!page) return tl::make_unexpected(page.error());
    const std::string where = "GET " + client_.url(path_);
    if (page->gone) {
      ++counters_->gone;
      if (o.continue_token.empty()) {
        return fail(errc::unavailable, "410 Gone on the first page of a LIST", where);
      }
      // The continue token outlived its snapshot (compaction between pages). client-go's pager
      // then lists once more without paging (tools/pager/pager.go, FullListIfExpired).
      fresh.clear();
      o.limit = 0;
      o.continue_token.clear();
      continue;
    }
    ++counters_->list_pages;
    nlohmann::json body;
    try {
      body = nlohmann::json::parse(page->body);
    } catch (const nlohmann::json::exception& e) {
      return fail(errc::invalid_input, std::string("malformed LIST body: ") + e.what(), where);
    }
    const auto items = body.find("items");
    if (!body.is_object() || (items != body.end() && !items->is_array() && !items->is_null()))
      return fail(errc::invalid_input, "LIST body has no items list", where + " items");
    if (items != body.end() && items->is_array()) {
      for (std::size_t i = 0; i < items->size(); ++i) {
        nlohmann::json& obj = (*items)[i];
        auto key = object_key(obj);
        if (!key) {
          return fail(errc::invalid_input, key.error().message,
                      where + " items[" + std::to_string(i) + "].metadata.name");
        }
        std::string rv = resource_version_of(obj);
        fresh.insert_or_assign(std::move(*key), stored_object{std::move(rv), std::move(obj)});
      }
    }
    // Every page of one list shares the snapshot's resourceVersion.
    list_rv = field(body, "metadata", "resourceVersion");
    const std::string next = field(body, "metadata", "continue");
    if (next.empty() || o.limit == 0) break;
    o.continue_token = next;
  }
  if (list_rv.empty()) {
    return fail(errc::invalid_input, "LIST answer has no metadata.resourceVersion",
                "GET " + client_.url(path_));
  }
  return fresh;
}

void informer::emit_diff(object_store& fresh) {
  auto& c = *counters_;
  auto old_it = store_.begin();
  auto new_it = fresh.begin();
  const auto add = [&](const std::string& key, const nlohmann::json& obj) {
    ++c.adds;
    if (handlers_.on_add) handlers_.on_add(key, obj);
  };
  const auto del = [&](const std::string& key, const nlohmann::json& obj) {
    ++c.deletes;
    if (handlers_.on_delete) handlers_.on_delete(key, obj);
  };
  // One merge walk over two ordered maps: every key once, in key order.
  while (old_it != store_.end() || new_it != fresh.end()) {
    if (new_it == fresh.end() || (old_it != store_.end() && old_it->first < new_it->first)) {
      del(old_it->first, old_it->second.object);
      ++old_it;
    } else if (old_it == store_.end() || new_it->first < old_it->first) {
      add(new_it->first, new_it->second.object);
      ++new_it;
    } else {
      const stored_object& before = old_it->second;
      const stored_object& after = new_it->second;
      if (before.resource_version != after.resource_version) {
        if (field(before.object, "metadata", "uid") != field(after.object, "metadata", "uid")) {
          // Same name, another object: it was deleted and created while we were not watching.
          del(old_it->first, before.object);
          add(new_it->first, after.object);
        } else {
          ++c.updates;
          if (handlers_.on_update) handlers_.on_update(new_it->first, before.object, after.object);
        }
      }
      ++old_it;
      ++new_it;
    }
  }
  store_ = std::move(fresh);
}

result<void> informer::list_and_diff() {
  std::string list_rv;
  auto fresh = list_all(list_rv);
  if (!fresh) return tl::make_unexpected(fresh.error());
  ++counters_->lists;
  if (listed_ || resumed_) ++counters_->relists;
  listed_ = true;
  emit_diff(*fresh);
  advance(list_rv);
  synced_.store(true);
  return {};
}

bool informer::apply(watch_event& ev, stream_outcome& outcome) {
  auto& c = *counters_;
  ++c.events;
  switch (ev.type) {
    case watch_event_type::bookmark:
      ++c.bookmarks;
      advance(resource_version_of(ev.object));
      return !stopping_.load();
    case watch_event_type::error: {
      const auto code = ev.object.find("code");
      if (code != ev.object.end() && code->is_number_integer() && code->get<int>() == 410) {
        ++c.gone;
        outcome = stream_outcome::gone;
      } else {
        stream_error_ = error{errc::unavailable, "watch ERROR event: " + ev.object.dump(),
                              "GET " + client_.url(path_)};
        outcome = stream_outcome::failed;
      }
      return false;
    }
    default:
      break;
  }
  auto key = object_key(ev.object);
  if (!key) {
    record(error{errc::invalid_input,
                 std::string(to_string(ev.type)) + " event: " + key.error().message,
                 "GET " + client_.url(path_) + " byte " + std::to_string(ev.offset)});
    return !stopping_.load();
  }
  std::string rv = resource_version_of(ev.object);
  auto it = store_.find(*key);
  if (ev.type == watch_event_type::deleted) {
    if (it != store_.end()) {
      ++c.deletes;
      if (handlers_.on_delete) handlers_.on_delete(*key, ev.object);
      store_.erase(it);
    } else {
      ++c.duplicates;  // never emitted, or its delete already was
    }
  } else if (it == store_.end()) {
    ++c.adds;
    auto& slot = store_[*key];
    slot = stored_object{rv, std::move(ev.object)};
    if (handlers_.on_add) handlers_.on_add(*key, slot.object);
  } else if (it->second.resource_version == rv) {
    ++c.duplicates;
  } else {
    stored_object before = std::move(it->second);
    it->second = stored_object{rv, std::move(ev.object)};
    const nlohmann::json& after = it->second.object;
    if (field(before.object, "metadata", "uid") != field(after, "metadata", "uid")) {
      ++c.deletes;
      if (handlers_.on_delete) handlers_.on_delete(*key, before.object);
      ++c.adds;
      if (handlers_.on_add) handlers_.on_add(*key, after);
    } else {
      ++c.updates;
      if (handlers_.on_update) handlers_.on_update(*key, before.object, after);
    }
  }
  advance(rv);
  return !stopping_.load();
}

void informer::run() {
  bool need_list = !resumed_;
  if (resumed_) synced_.store(true);
  bool list_was_last = false;  // the previous step was a LIST: a 410 right after it is a failure
  const auto fail_and_wait = [this](const error& e) {
    record(e);
    const bool go_on = wait(backoff_.next());
    if (go_on) ++counters_->reconnects;
    return go_on;
  };
  while (!stopping_.load()) {
    if (need_list) {
      if (auto r = list_and_diff(); !r) {
        if (stopping_.load() || !fail_and_wait(r.error())) break;
        continue;
      }
      need_list = false;
      list_was_last = true;
    }
    watch_params wp;
    wp.resource_version = rv_;
    wp.allow_bookmarks = true;
    wp.timeout = next_watch_timeout();
    wp.label_selector = options_.label_selector;
    wp.field_selector = options_.field_selector;
    ++counters_->watches;
    stream_outcome outcome = stream_outcome::none;
    stream_error_.reset();
    std::uint64_t seen = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = watch_.run(path_, wp, [&](watch_event& ev) {
      ++seen;
      return apply(ev, outcome);
    });
    if (stopping_.load()) break;
    const bool was_after_list = std::exchange(list_was_last, false);
    // A stream that delivered an object or a bookmark worked: the next failure starts the
    // backoff from its initial delay again.
    if (seen > (outcome == stream_outcome::none ? 0u : 1u)) backoff_.reset();
    if (!r) {
      if (!fail_and_wait(r.error())) break;
      continue;
    }
    if (r->end == watch_end::gone) {
      ++counters_->gone;
      outcome = stream_outcome::gone;
    }
    if (outcome == stream_outcome::gone) {
      need_list = true;
      if (was_after_list && seen <= 1 &&
          !fail_and_wait(error{errc::unavailable, "410 Gone right after a LIST",
                               "GET " + client_.url(path_)})) {
        break;
      }
      continue;
    }
    if (outcome == stream_outcome::failed) {
      if (!fail_and_wait(*stream_error_)) break;
      continue;
    }
    // Closed by the server. The reflector treats a watch that lasted under a second with no
    // event as an error ("very short watch"), so a server that closes at once is not hammered.
    if (seen == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) {
      if (!fail_and_wait(error{errc::unavailable, "very short watch: closed within 1 s, no event",
                               "GET " + client_.url(path_)})) {
        break;
      }
    }
  }
}

}  // namespace colony::kube
