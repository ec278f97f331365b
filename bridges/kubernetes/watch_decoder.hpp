// colony::kube::watch_decoder: turns the bytes of a WATCH response into watch events.
//
// kube-apiserver streams a watch as one JSON object per line, {"type":T,"object":{...}}: its
// JSON serializer writes each event with a json.Encoder, which ends every value with '\n'
// (staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json/json.go). Chunks from the
// network split lines anywhere; the decoder keeps the partial tail until its newline arrives.
// T is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (apimachinery/pkg/watch/watch.go); for
// ERROR the object is a metav1.Status (code 410 when the resourceVersion is too old).
//
// Errors name the source (the watch URL) and the byte offset in the stream where the bad line
// starts; after an error the decoder's position is unknown and it must not be fed again.
// Thread-safety: none; one decoder per stream.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/result.hpp"

namespace colony::kube {

enum class watch_event_type : std::uint8_t { added, modified, deleted, bookmark, error };

[[nodiscard]] std::string_view to_string(watch_event_type t) noexcept;  // "ADDED", ...

struct watch_event {
  watch_event_type type = watch_event_type::added;
  nlohmann::json object;
  std::uint64_t offset = 0;  // byte offset of the event's line in the stream
};

class watch_decoder {
 public:
  // max_line: a longer line is an error (a runaway stream), not unbounded memory.
  // Default: 64 MiB, far above etcd's 1.5 MiB object limit.
  explicit watch_decoder(std::string source, std::size_t max_line = std::size_t{64} << 20);

  // Decodes every complete line of `chunk` (after what is pending) into `out`, in order.
  [[nodiscard]] result<void> feed(std::string_view chunk, std::vector<watch_event>& out);
  // The stream ended: a partial line left over means it was cut mid-event.
  [[nodiscard]] result<void> finish() const;

  [[nodiscard]] std::uint64_t bytes() const noexcept { return consumed_ + pending_.size(); }
  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }

 private:
  [[nodiscard]] result<void> decode_line(std::string_view line, std::uint64_t offset,
                                         std::vector<watch_event>& out) const;
  std::string source_;
  std::size_t max_line_;
  std::string pending_;         // bytes after the last '\n'
  std::uint64_t consumed_ = 0;  // stream offset of pending_[0]
};

}  // namespace colony::kube
