// colony::kube::watch_stream: one WATCH request at a time, its events handed over as they
// arrive.
//
// run() sends GET PATH?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=N
// on the stream's own libcurl handle and calls on_event for each decoded event, on the calling
// thread, in stream order. It returns when the server ends the stream (timeoutSeconds elapsed,
// or the apiserver went away after sending a complete event), when on_event returns false, or
// when stop() is called from another thread. A 410 answer to the request itself is reported as
// `gone` (the resourceVersion is compacted); an ERROR event is handed to on_event like any
// other (the informer reads its code). Other statuses and transport failures are errors.
//
// Thread-safety: run() from one thread at a time; stop() from any thread, and it is final.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "bridges/kubernetes/http.hpp"
#include "bridges/kubernetes/kubeconfig.hpp"
#include "bridges/kubernetes/watch_decoder.hpp"
#include "messages/result.hpp"

namespace colony::kube {

namespace detail {
class curl_session;
}

struct watch_params {
  std::string resource_version;  // "" starts at the latest state (a synthetic ADDED per object)
  bool allow_bookmarks = true;
  std::chrono::seconds timeout{300};  // timeoutSeconds: the server closes the stream then
  std::string label_selector;
  std::string field_selector;
};

enum class watch_end : std::uint8_t {
  closed,   // the server ended the stream
  stopped,  // stop() was called
  handler,  // on_event returned false
  gone,     // HTTP 410 on the request: the resourceVersion is too old
};

struct watch_summary {
  watch_end end = watch_end::closed;
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;
  int http_version = 0;  // 2 or 11
};

class watch_stream {
 public:
  using handler = std::function<bool(watch_event& event)>;

  [[nodiscard]] static result<watch_stream> open(connection conn, client_options options = {});
  watch_stream(watch_stream&&) noexcept;
  watch_stream& operator=(watch_stream&&) noexcept;
  ~watch_stream();

  [[nodiscard]] result<watch_summary> run(std::string_view path, const watch_params& params,
                                          const handler& on_event);
  void stop();

  // PATH plus the watch query of `params` (also names the stream in decoder errors).
  [[nodiscard]] static std::string watch_path(std::string_view path, const watch_params& params);

 private:
  explicit watch_stream(std::unique_ptr<detail::curl_session> s);
  std::unique_ptr<detail::curl_session> session_;
};

}  // namespace colony::kube
