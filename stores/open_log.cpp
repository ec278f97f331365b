// open_log: picks the backend from the log's name.
#include "stores/event_log.hpp"
#include "stores/kafka_log.hpp"
#include "stores/rocksdb_log.hpp"

namespace colony::stores {

result<std::unique_ptr<event_log>> open_log(std::string_view name, const log_options& opts) {
  if (name.starts_with("kafka://")) {
    auto log = kafka_log::open(name, opts);
    if (!log) return tl::unexpected(log.error());
    return std::unique_ptr<event_log>(std::move(*log));
  }
  if (name.empty()) return fail(errc::invalid_input, "empty log name", "--log");
  auto log = rocksdb_log::open(std::string(name), opts);
  if (!log) return tl::unexpected(log.error());
  return std::unique_ptr<event_log>(std::move(*log));
}

}  // namespace colony::stores
