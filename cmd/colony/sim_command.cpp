// colony sim: until the trace-driven simulator lands (issue "colony sim"), this runs a small
// built-in replay: the synthetic stream written to OUT/log, replayed through the entity
// actors, with a summary. The command line is the one users keep.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "actors/entities/entity_actors.hpp"
#include "bench/registry.hpp"
#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"
#include "cmd/colony/synthetic.hpp"
#include "stores/event_log.hpp"

namespace colony::cli {

namespace {

struct sim_args {
  std::string out = "colony-sim-out";
  std::string log;
  std::uint64_t events = 30000;
  std::uint64_t seed = 1;
};

int report(const error& e) {
  std::fprintf(stderr, "colony: %s\n", e.describe().c_str());
  return exit_code_for(e);
}

int run_sim(const sim_args& a) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) return report(error{errc::invalid_input, ec.message(), a.out});
  const std::string log_name = a.log.empty() ? (fs::path(a.out) / "log").string() : a.log;
  if (fs::exists(log_name)) fs::remove_all(log_name, ec);
  double wall = 0;
  std::uint64_t digest = 0, entity_count = 0;
  error failure;
  wall = bench::seconds_of([&] {
    stores::log_options o;
    auto log = stores::open_log(log_name, o);
    if (!log) {
      failure = log.error();
      return;
    }
    messages::event_builder b;
    entities::actor_host host;
    std::vector<messages::byte_buffer> bufs;
    std::vector<messages::bytes_view> views;
    for (std::uint64_t next = 0; next < a.events;) {
      const std::uint64_t n = std::min<std::uint64_t>(1024, a.events - next);
      bufs.clear();
      views.clear();
      auto batch = std::make_shared<entities::record_batch>();
      for (std::uint64_t i = 0; i < n; ++i) bufs.push_back(synthetic_event(b, a.seed, next + i));
      for (const auto& x : bufs) {
        views.emplace_back(x);
        batch->add(x);
      }
      if (auto f = (*log)->append(views); !f) {
        failure = f.error();
        return;
      }
      host.deliver(std::move(batch));
      next += n;
      if (isatty(fileno(stderr)))
        std::fprintf(stderr, "\rsim: %llu/%llu events", static_cast<unsigned long long>(next),
                     static_cast<unsigned long long>(a.events));
    }
    if (isatty(fileno(stderr))) std::fprintf(stderr, "\n");
    auto states = host.collect();
    if (!states) {
      failure = states.error();
      return;
    }
    digest = entities::digest_of(*states);
    entity_count = states->size();
  });
  if (!failure.message.empty()) return report(failure);
  nlohmann::ordered_json j;
  j["mode"] = "built-in replay (synthetic stream; trace-driven sim not yet built)";
  j["events"] = a.events;
  j["entities"] = entity_count;
  j["wall_seconds"] = wall;
  j["events_per_second"] = static_cast<double>(a.events) / wall;
  j["log"] = log_name;
  j["log_digest"] = fmt::format("{:016x}", digest);
  std::ofstream(fs::path(a.out) / "summary.json") << j.dump(2) << "\n";
  std::cout << j.dump(2) << "\n";
  return exit_ok;
}

}  // namespace

void add_sim_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("sim", "Simulate a cluster on a virtual clock and report");
  auto a = std::make_shared<sim_args>();
  cmd->add_option("--out", a->out, "Output directory")->capture_default_str();
  cmd->add_option("--log", a->log, "Event log (default: OUT/log)");
  cmd->add_option("--events", a->events, "Events of the built-in replay")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed")->capture_default_str();
  cmd->callback([a] { exit_status() = run_sim(*a); });
}

}  // namespace colony::cli
