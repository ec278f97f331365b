// colony::kube::informer: LIST then WATCH one resource into a store, handing every change to
// handlers exactly once.
//
// What it does, following client-go's reflector (staging/src/k8s.io/client-go/tools/cache/
// reflector.go) where it can:
//   1. LIST the path in pages (`limit`, then `continue` until empty). If a continue token has
//      expired (410, etcd compacted between pages) it falls back to one unpaginated LIST, as
//      client-go's pager does (tools/pager/pager.go).
//   2. Diff the listed objects against its store (keyed "namespace/name", or "name" for
//      cluster-scoped kinds) and emit only the differences, in key order: on_add for a new key,
//      on_update for a key whose resourceVersion changed, on_delete for a key that vanished, and
//      on_delete then on_add when the name now belongs to a new object (another metadata.uid).
//      The first LIST diffs against an empty store, so it is all adds. client-go instead
//      replays every object to its handlers on a relist; Colony appends what the handlers emit
//      to an event log, so an unchanged object must produce nothing.
//   3. WATCH from the list's resourceVersion with bookmarks; each event updates the store and
//      calls a handler, and its resourceVersion becomes the informer's. An event whose object
//      version the store already holds is skipped (a replay after a reconnect); a MODIFIED for an
//      unknown key is an add; a DELETED for an unknown key is dropped (its add was never
//      emitted). BOOKMARK only advances the resourceVersion.
//   4. When the server ends the watch (timeoutSeconds, random in [min, 2 x min) from the seeded
//      engine as in the reflector), watch again from the current resourceVersion. After a
//      failure (refused, reset, 5xx, 429, an ERROR event other than 410, a watch that closed
//      within a second with no event: the reflector's "very short watch") wait a capped
//      exponential backoff with seeded jitter (backoff.hpp), then watch again from the same
//      resourceVersion: no relist.
//   5. On 410 Gone (HTTP 410, or an ERROR event with code 410: the resourceVersion was
//      compacted), relist and emit the differences (step 2).
//
// Restart without duplicates: a process that kept its store and resourceVersion (for example
// persisted alongside the observations it appended) calls resume_from(rv, store) before run();
// the informer then watches from rv, and on 410 relists and diffs against that store. Either
// way nothing already emitted is emitted again.
//
// Threading: handlers run on the thread that called run(), one at a time, in the order above.
// stop() and counters()/synced()/last_error() may be called from any thread. resume_from(),
// resource_version() and store() only while run() is not running.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/api_client.hpp"
#include "bridges/kubernetes/backoff.hpp"
#include "bridges/kubernetes/watch_stream.hpp"
#include "messages/result.hpp"

namespace colony::kube {

struct stored_object {
  std::string resource_version;
  nlohmann::json object;
};

// Ordered, so diffs and dumps come out in key order.
using object_store = std::map<std::string, stored_object>;

// "namespace/name", or "name" for a cluster-scoped object (client-go MetaNamespaceKeyFunc).
[[nodiscard]] result<std::string> object_key(const nlohmann::json& object);

struct informer_handlers {
  std::function<void(const std::string& key, const nlohmann::json& object)> on_add;
  std::function<void(const std::string& key, const nlohmann::json& old_object,
                     const nlohmann::json& new_object)>
      on_update;
  // `last` is the object as the DELETED event carried it, or, after a relist, as last stored.
  std::function<void(const std::string& key, const nlohmann::json& last)> on_delete;
  // Every change up to `rv` has been handed to the handlers above: the point to persist
  // (rv, store) for resume_from.
  std::function<void(const std::string& rv)> on_resource_version;
};

struct informer_options {
  // Objects per LIST page. Default: 500, client-go's pager page size.
  std::int64_t page_size = 500;
  // Backoff between failed attempts. Default: 800 ms doubling to 30 s, jitter 1.0 (reflector.go).
  std::chrono::milliseconds backoff_initial{800};
  std::chrono::milliseconds backoff_max{30'000};
  double backoff_jitter = 1.0;
  // Seeds the jitter and the watch timeouts. Default: 1.
  std::uint64_t seed = 1;
  // Each WATCH asks for timeoutSeconds in [min, 2 x min). Default: 5 min (reflector.go).
  std::chrono::seconds min_watch_timeout{300};
  std::string label_selector;
  std::string field_selector;
  client_options client;
};

struct informer_counters {
  std::uint64_t lists = 0;       // complete LISTs (all pages of one list count once)
  std::uint64_t list_pages = 0;  // LIST requests answered
  std::uint64_t relists = 0;     // LISTs after the first one or after resume_from
  std::uint64_t watches = 0;     // WATCH requests sent
  std::uint64_t reconnects = 0;  // attempts made after a failure (after a backoff)
  std::uint64_t gone = 0;        // 410 answers and ERROR 410 events
  std::uint64_t events = 0;      // watch events received, bookmarks and errors included
  std::uint64_t bookmarks = 0;
  std::uint64_t duplicates = 0;  // watch events skipped: the store held that version already
  std::uint64_t adds = 0;        // handler calls
  std::uint64_t updates = 0;
  std::uint64_t deletes = 0;
  std::uint64_t errors = 0;  // failed requests, ERROR events, unusable objects
};

class informer {
 public:
  // `path`: a collection, e.g. /api/v1/pods, /api/v1/namespaces/NS/pods, /api/v1/nodes,
  // /apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles.
  [[nodiscard]] static result<std::unique_ptr<informer>> create(connection conn, std::string path,
                                                                informer_handlers handlers,
                                                                informer_options options = {});
  ~informer();
  informer(const informer&) = delete;
  informer& operator=(const informer&) = delete;

  // REQUIRES: run() not running. Starts the next run() at a WATCH from `resource_version`
  // with `store` as what has been emitted so far. An empty resource_version means a LIST.
  void resume_from(std::string resource_version, object_store store);

  // Blocks until stop(). Failures are retried with backoff (last_error() tells the latest).
  void run();
  // Ends run() soon (in-flight requests are interrupted) and for good. Thread-safe.
  void stop();

  [[nodiscard]] bool synced() const noexcept { return synced_.load(); }
  [[nodiscard]] informer_counters counters() const;
  [[nodiscard]] std::optional<error> last_error() const;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  // REQUIRES: run() not running.
  [[nodiscard]] const std::string& resource_version() const noexcept { return rv_; }
  [[nodiscard]] const object_store& store() const noexcept { return store_; }

 private:
  struct counter_cells;
  enum class stream_outcome : std::uint8_t { none, gone, failed };

  informer(std::string path, informer_handlers handlers, informer_options options,
           api_client client, watch_stream watch);
  [[nodiscard]] result<void> list_and_diff();
  [[nodiscard]] result<object_store> list_all(std::string& list_rv);
  bool apply(watch_event& ev, stream_outcome& outcome);
  void emit_diff(object_store& fresh);
  void advance(const std::string& rv);
  void record(const error& e);
  bool wait(std::chrono::milliseconds d);  // false when stopped
  [[nodiscard]] std::chrono::seconds next_watch_timeout();

  std::string path_;
  informer_handlers handlers_;
  informer_options options_;
  api_client client_;
  watch_stream watch_;
  backoff backoff_;
  std::mt19937_64 timeout_rng_;
  std::unique_ptr<counter_cells> counters_;

  // Touched by run()'s thread only (and by resume_from before it).
  object_store store_;
  std::string rv_;
  bool resumed_ = false;
  bool listed_ = false;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> synced_{false};
  mutable std::mutex mu_;  // guards last_error_ and the wait
  std::condition_variable cv_;
  std::optional<error> last_error_;
  std::optional<error> stream_error_;  // an ERROR event's, run()'s thread only
};

}  // namespace colony::kube
