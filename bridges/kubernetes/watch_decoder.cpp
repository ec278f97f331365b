// Line splitting and event decoding for WATCH streams (see watch_decoder.hpp).
#include "bridges/kubernetes/watch_decoder.hpp"

namespace colony::kube {

std::string_view to_string(watch_event_type t) noexcept {
  switch (t) {
    case watch_event_type::added:
      return "ADDED";
    case watch_event_type::modified:
      return "MODIFIED";
    case watch_event_type::deleted:
      return "DELETED";
    case watch_event_type::bookmark:
      return "BOOKMARK";
    case watch_event_type::error:
      return "ERROR";
  }
  return "?";
}

watch_decoder::watch_decoder(std::string source, std::size_t max_line)
    : source_(std::move(source)), max_line_(max_line) {}

result<void> watch_decoder::decode_line(std::string_view line, std::uint64_t offset,
                                        std::vector<watch_event>& out) const {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.empty()) return {};  // blank lines carry nothing
  const std::string where = source_ + ": byte " + std::to_string(offset);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    return fail(errc::invalid_input, std::string("malformed watch event: ") + e.what(), where);
  }
  if (!j.is_object()) return fail(errc::invalid_input, "watch event is not an object", where);
  const auto type = j.find("type");
  if (type == j.end() || !type->is_string())
    return fail(errc::invalid_input, "watch event has no type", where);
  const std::string& t = type->get_ref<const std::string&>();
  watch_event ev;
  ev.offset = offset;
  if (t == "ADDED") {
    ev.type = watch_event_type::added;
  } else if (t == "MODIFIED") {
    ev.type = watch_event_type::modified;
  } else if (t == "DELETED") {
    ev.type = watch_event_type::deleted;
  } else if (t == "BOOKMARK") {
    ev.type = watch_event_type::bookmark;
  } else if (t == "ERROR") {
    ev.type = watch_event_type::error;
  } else {
    return fail(errc::invalid_input, "unknown watch event type '" + t + "'", where);
  }
  auto obj = j.find("object");
  if (obj == j.end() || !obj->is_object())
    return fail(errc::invalid_input, "watch event has no object", where);
  ev.object = std::move(*obj);
  out.push_back(std::move(ev));
  return {};
}

result<void> watch_decoder::feed(std::string_view chunk, std::vector<watch_event>& out) {
  // Fast path: no partial line pending, decode straight from the chunk.
  std::size_t start = 0;
  if (pending_.empty()) {
    for (std::size_t nl; (nl = chunk.find('\n', start)) != std::string_view::npos; start = nl + 1) {
      if (auto r = decode_line(chunk.substr(start, nl - start), consumed_ + start, out); !r)
        return r;
    }
    consumed_ += start;
    chunk.remove_prefix(start);
  } else if (const std::size_t nl = chunk.find('\n'); nl != std::string_view::npos) {
    pending_.append(chunk.substr(0, nl));
    if (auto r = decode_line(pending_, consumed_, out); !r) return r;
    consumed_ += pending_.size() + 1;
    pending_.clear();
    return feed(chunk.substr(nl + 1), out);
  }
  if (pending_.size() + chunk.size() > max_line_) {
    return fail(errc::invalid_input,
                "watch event longer than " + std::to_string(max_line_) + " bytes",
                source_ + ": byte " + std::to_string(consumed_));
  }
  pending_.append(chunk);
  return {};
}

result<void> watch_decoder::finish() const {
  std::string_view rest = pending_;
  while (!rest.empty() && (rest.back() == '\r' || rest.back() == ' ')) rest.remove_suffix(1);
  if (rest.empty()) return {};
  return fail(errc::invalid_input,
              "stream ended inside a watch event (" + std::to_string(pending_.size()) + " bytes)",
              source_ + ": byte " + std::to_string(consumed_));
}

}  // namespace colony::kube
