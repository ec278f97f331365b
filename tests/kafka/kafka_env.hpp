// Where the Kafka tests find their broker and tools (environment first, else the paths
// tests/kafka/CMakeLists.txt compiles in):
//   COLONY_KAFKA_DIR   the fixture broker's state dir; its bootstrap address is in DIR/bootstrap
//   COLONY_KAFKA_SH    tools/peers/kafka.sh
//   COLONY_KAFKA_FAULTS_DIR  state dir of the broker the fault test starts, kills and restarts
//   COLONY_BINARY      the colony binary (ctest environment)
// COLONY_KAFKA_BOOTSTRAP overrides the address (a broker started by hand). No broker is a
// test failure, never a skip: CI installs Java and starts one.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <utility>

#ifndef COLONY_KAFKA_DIR_DEFAULT
#define COLONY_KAFKA_DIR_DEFAULT ""
#endif
#ifndef COLONY_KAFKA_SH_DEFAULT
#define COLONY_KAFKA_SH_DEFAULT ""
#endif
#ifndef COLONY_KAFKA_FAULTS_DIR_DEFAULT
#define COLONY_KAFKA_FAULTS_DIR_DEFAULT ""
#endif

namespace colony::testing {

inline std::string env_or(const char* name, const std::string& fallback = {}) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

inline std::string kafka_dir() { return env_or("COLONY_KAFKA_DIR", COLONY_KAFKA_DIR_DEFAULT); }
inline std::string kafka_sh() { return env_or("COLONY_KAFKA_SH", COLONY_KAFKA_SH_DEFAULT); }
inline std::string kafka_faults_dir() {
  return env_or("COLONY_KAFKA_FAULTS_DIR", COLONY_KAFKA_FAULTS_DIR_DEFAULT);
}

// The fixture broker's bootstrap address, or "" (the caller fails the test).
inline std::string kafka_bootstrap() {
  if (auto b = env_or("COLONY_KAFKA_BOOTSTRAP"); !b.empty()) return b;
  auto dir = kafka_dir();
  if (dir.empty()) return {};
  std::ifstream f(dir + "/bootstrap");
  std::string b;
  std::getline(f, b);
  return b;
}

inline std::string kafka_missing_message() {
  return "no Kafka broker: set COLONY_KAFKA_BOOTSTRAP, or run through ctest (the "
         "kafka.broker.start "
         "fixture writes $COLONY_KAFKA_DIR/bootstrap; it needs Java 17: "
         "apt-get install openjdk-17-jre-headless maven)";
}

// A topic name no other test (or earlier run against the same broker) uses.
inline std::string fresh_topic(const std::string& prefix) {
  static std::mt19937_64 rng(std::random_device{}());
  static int n = 0;
  return prefix + "-" + std::to_string(rng() % 1000000000) + "-" + std::to_string(n++);
}

// Runs a shell command; returns (exit status, stdout).
inline std::pair<int, std::string> shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, out};
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

}  // namespace colony::testing
