// colony::kube::observation_source: the observation edge of cluster mode. One informer per kind
// (informer.hpp) feeds every add/update/delete through kube::translate_* (translate.hpp) and
// appends the resulting observation events to a stores::event_log.
//
// Order: one informer's callbacks are handled in the order the informer makes them (key order on
// a LIST, watch order after), and each callback's events in translate's order. The events of all
// callbacks between two on_resource_version calls of one informer are appended as ONE batch
// (event_log::append is all-or-none). Batches of different informers interleave as they come.
//
// Time: each callback's event time is options.clock() (default: the wall clock in ms since the
// epoch). This is the only place in Colony where wall time enters the log; everything
// downstream reads time from the events (docs/architecture.md).
//
// Restart without duplicates (docs/kubernetes-bridge.md "The observation source"): after every
// batch it writes a checkpoint file (write temp, fsync, rename, fsync the folder) holding each
// informer's (resourceVersion, store) and the log offset just past the batch. open() loads it,
// refuses a log that ends before it, and reads the records this source wrote after it (a crash
// between append and checkpoint: "orphans"). start() resumes each informer from its checkpointed
// (rv, store) (informer::resume_from); while orphans remain, a record about to be appended that
// equals an orphan except for offset and time is dropped instead (the orphan is that very
// observation, appended before the crash) and the orphan is consumed.
//
// Errors are values; no exception escapes. A bad object (translate's invalid_input) appends one
// ObjectRefused record naming the object, its resourceVersion and the field (translate_refused)
// and nothing else, so what the log held for the object before stays; it is also logged with
// spdlog and counted. Its informer stores it like any object, so a restart does not see it
// again, and a record appended in the crash window is an orphan like any other: one version of
// an object is recorded once. A DELETED of a refused object appends nothing (it was recorded
// when it arrived). A kind whose LIST answers 404 (its CRD is not installed) is reported once and
// skipped.
//
// Thread-safety: open/start/stop from one thread; counters(), synced(), failure() from any.
// One informer thread per kind; appends and checkpoint writes are serialised by one mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bridges/kubernetes/informer.hpp"
#include "bridges/kubernetes/kubeconfig.hpp"
#include "bridges/kubernetes/translate.hpp"
#include "messages/result.hpp"
#include "stores/event_log.hpp"

namespace colony::kube {

// What one informer of the source watches.
struct source_kind {
  object_kind kind = object_kind::node;
  std::string name;  // checkpoint key and for messages: "nodes", "pods", ...
  std::string path;  // collection path
  std::string field_selector;
};

// The translated kinds: Nodes, Pods, PriorityClasses, the slo-controller ConfigMap (field
// selector on its name, in its namespace), ClusterColocationProfiles, ElasticQuotas
// (scheduling.sigs.k8s.io, as Koordinator serves them), NodeMetrics; then the recorded kinds
// (ObjectObserved: ElasticQuotaProfiles, Reservations, PodMigrationJobs, PodGroups, Devices;
// translate.hpp recorded_kind). A kind whose CRD is not installed is skipped by start().
[[nodiscard]] std::vector<source_kind> default_source_kinds(const translate_options& t = {});

struct source_options {
  // Where the checkpoint lives (a file; its folder must exist). Required.
  std::string checkpoint_path;
  // Default: default_source_kinds(translate).
  std::vector<source_kind> kinds;
  translate_options translate;
  informer_options informer;
  // Event time in ms since the epoch. Default: std::chrono::system_clock. Called from every
  // informer's thread, concurrently: must be thread-safe.
  std::function<std::int64_t()> clock;
  // A batch with no event (noise, bookmarks) advances the checkpoint at most this often; the
  // checkpoint may lag (a replayed no-op change translates to nothing again). Default: 5 s.
  std::chrono::milliseconds idle_checkpoint_interval{5'000};
  // A batch that appended something writes the checkpoint at most this often: the file holds
  // every informer's whole store, so writing it per watch event costs O(objects) per event.
  // Records appended after the last checkpoint are the crash window's orphans, matched against
  // their re-derived twins at the next start (see above). 0 = after every such batch. Otherwise
  // both intervals are stretched to 20 times the last checkpoint's write time when that is
  // longer (a checkpoint takes at most ~5 % of the time, however many objects there are).
  // Default: 1 s.
  std::chrono::milliseconds checkpoint_interval{1'000};
  // How long the pods informer's first list waits for every other informer's first list to be
  // in the log (kube-scheduler's WaitForCacheSync: a pod is never scheduled before the quotas,
  // nodes and configuration listed with it). Past it the pods go in anyway, with a warning
  // naming the kinds still listing. Default: 60 s.
  std::chrono::milliseconds first_list_wait{60'000};
};

struct source_counters {
  std::uint64_t informers = 0;      // started
  std::uint64_t kinds_skipped = 0;  // LIST answered 404 (CRD not installed)
  std::uint64_t adds = 0;           // informer callbacks
  std::uint64_t updates = 0;
  std::uint64_t deletes = 0;
  std::uint64_t unchanged = 0;        // updates change_kind found to be noise
  std::uint64_t bad_objects = 0;      // invalid_input from translate: logged
  std::uint64_t refusals = 0;         // ObjectRefused records queued for them (not on DELETED)
  std::uint64_t untranslated = 0;     // failed_precondition from translate (schema gaps)
  std::uint64_t events = 0;           // records appended
  std::uint64_t batches = 0;          // appends
  std::uint64_t checkpoints = 0;      // checkpoint files written
  std::uint64_t orphans_found = 0;    // records after the checkpoint at open()
  std::uint64_t orphans_matched = 0;  // re-derived records dropped instead of appended
  // Summed over the informers (informer_counters): watches re-established, 410 Gone answers,
  // and LISTs after the first (a relist after a 410, or a restart without a usable version).
  std::uint64_t reconnects = 0;
  std::uint64_t gone = 0;
  std::uint64_t relists = 0;
};

class observation_source {
 public:
  // Loads and checks the checkpoint against `log` (which must outlive the source); contacts
  // nothing. corrupt: the log ends before the checkpoint's offset, or an unreadable checkpoint.
  [[nodiscard]] static result<std::unique_ptr<observation_source>> open(connection conn,
                                                                        stores::event_log& log,
                                                                        source_options options);
  ~observation_source();  // stop()
  observation_source(const observation_source&) = delete;
  observation_source& operator=(const observation_source&) = delete;

  // Probes each kind (LIST limit=1: 404 = skipped, reported once), then runs one informer per
  // remaining kind on its own thread, resumed from the checkpoint. Errors other than 404 are
  // left to the informers' retries.
  [[nodiscard]] result<void> start();
  // Stops the informers, joins them, writes the checkpoint if it lags. Idempotent.
  void stop();

  // Every started informer has listed (or resumed).
  [[nodiscard]] bool synced() const;
  // "name: latest error" (or "name: listing") of each started informer not synced yet, in
  // start order: what a /readyz answer names, e.g. a LIST refused with 403 for want of RBAC.
  [[nodiscard]] std::vector<std::string> unsynced() const;
  [[nodiscard]] source_counters counters() const;
  // Set when an append or checkpoint write failed: the source stopped its informers.
  [[nodiscard]] std::optional<error> failure() const;
  // "name: why" of each kind skipped by start().
  [[nodiscard]] std::vector<std::string> skipped() const;
  // The latest refused objects (translate's invalid_input: where names the object and field),
  // oldest first, at most 64; bad_objects counts them all.
  [[nodiscard]] std::vector<error> refused() const;

 private:
  struct impl;
  explicit observation_source(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace colony::kube
