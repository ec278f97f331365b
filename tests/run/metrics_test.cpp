// The Prometheus text format writer (run/metrics.hpp) and the /healthz /readyz /metrics server
// (run/metrics_server.hpp) on 127.0.0.1.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "run/metrics.hpp"
#include "run/metrics_server.hpp"

namespace colony::run {
namespace {

TEST(MetricsText, EscapesLabelValuesAndHelp) {
  // Exposition format 0.0.4: label values escape \ " and newline; HELP escapes \ and newline.
  struct row {
    std::string in, label, help;
  };
  const std::vector<row> rows = {
      {"plain", "plain", "plain"},
      {R"(a"b)", R"(a\"b)", R"(a"b)"},
      {R"(a\b)", R"(a\\b)", R"(a\\b)"},
      {"a\nb", R"(a\nb)", R"(a\nb)"},
      {"", "", ""},
      {"ns/pod-1 {x=1}", "ns/pod-1 {x=1}", "ns/pod-1 {x=1}"},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(escape_label_value(r.in), r.label) << r.in;
    EXPECT_EQ(escape_help(r.in), r.help) << r.in;
  }
}

TEST(MetricsText, FormatsValues) {
  const std::vector<std::pair<double, std::string>> rows = {
      {0, "0"},
      {42, "42"},
      {-3, "-3"},
      {1e15, "1000000000000000"},
      {0.25, "0.25"},
      {0.001, "0.001"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "NaN"},
  };
  for (const auto& [v, s] : rows) EXPECT_EQ(format_value(v), s) << v;
}

TEST(MetricsText, WritesHelpTypeAndSamples) {
  metric_family c{"colony_x_total", "Things.\nMore.", metric_type::counter, {}, {}};
  c.samples.push_back({{{"kind", "binding"}, {"result", R"(we"ird)"}}, 3});
  c.samples.push_back({{}, 1});
  metric_family g{"colony_y", "A gauge.", metric_type::gauge, {{{}, 7.5}}, {}};
  EXPECT_EQ(write_exposition({c, g}),
            "# HELP colony_x_total Things.\\nMore.\n"
            "# TYPE colony_x_total counter\n"
            "colony_x_total{kind=\"binding\",result=\"we\\\"ird\"} 3\n"
            "colony_x_total 1\n"
            "# HELP colony_y A gauge.\n"
            "# TYPE colony_y gauge\n"
            "colony_y 7.5\n");
}

TEST(MetricsText, HistogramBucketsAreCumulativeAndEndAtInf) {
  histogram h({0.1, 1, 10});
  // Upper bounds are inclusive: 0.1 lands in le="0.1", 10 in le="10", 11 only in +Inf.
  for (double v : {0.05, 0.1, 0.5, 1.0, 10.0, 11.0}) h.observe(v);
  EXPECT_EQ(h.count(), 6u);
  metric_family f{"d_seconds", "D.", metric_type::histogram, {}, {h.snapshot({{"r", "ok"}})}};
  EXPECT_EQ(write_exposition({f}),
            "# HELP d_seconds D.\n"
            "# TYPE d_seconds histogram\n"
            "d_seconds_bucket{r=\"ok\",le=\"0.1\"} 2\n"
            "d_seconds_bucket{r=\"ok\",le=\"1\"} 4\n"
            "d_seconds_bucket{r=\"ok\",le=\"10\"} 5\n"
            "d_seconds_bucket{r=\"ok\",le=\"+Inf\"} 6\n"
            "d_seconds_sum{r=\"ok\"} 22.65\n"
            "d_seconds_count{r=\"ok\"} 6\n");
}

TEST(MetricsText, KubeSchedulerBuckets) {
  // pkg/scheduler/metrics/metrics.go: metrics.ExponentialBuckets(0.001, 2, 15).
  const auto b = exponential_buckets(0.001, 2, 15);
  ASSERT_EQ(b.size(), 15u);
  EXPECT_DOUBLE_EQ(b.front(), 0.001);
  EXPECT_DOUBLE_EQ(b.back(), 16.384);
}

TEST(MetricsText, AnEmptyHistogramHasEveryBucketAtZero) {
  histogram h(exponential_buckets(0.001, 2, 3));
  metric_family f{"e", "E.", metric_type::histogram, {}, {h.snapshot({})}};
  EXPECT_EQ(write_exposition({f}),
            "# HELP e E.\n# TYPE e histogram\n"
            "e_bucket{le=\"0.001\"} 0\ne_bucket{le=\"0.002\"} 0\ne_bucket{le=\"0.004\"} 0\n"
            "e_bucket{le=\"+Inf\"} 0\ne_sum 0\ne_count 0\n");
}

TEST(MetricsAddress, ParsesHostAndPortAndNamesTheFlagWhenBad) {
  auto a = parse_listen_address("127.0.0.1:0");
  ASSERT_TRUE(a) << a.error().describe();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 0);
  auto b = parse_listen_address("localhost:10251");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->port, 10251);
  for (const char* bad : {"127.0.0.1", ":80", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:65536",
                          "127.0.0.1:-1", "127.0.0.1:80x"}) {
    auto r = parse_listen_address(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, errc::invalid_input);
    EXPECT_NE(r.error().describe().find("--metrics-addr"), std::string::npos)
        << r.error().describe();
  }
}

TEST(MetricsServer, ServesProbesAndMetricsAndStopsCleanly) {
  std::atomic<bool> ready{false};
  metrics_handlers hs;
  hs.healthz = [] { return probe_result{true, {}}; };
  hs.readyz = [&] {
    return ready ? probe_result{true, {}} : probe_result{false, "the informers have not synced"};
  };
  hs.metrics = [] {
    metric_family g{"colony_up", "Up.", metric_type::gauge, {{{}, 1}}, {}};
    return write_exposition({g});
  };
  auto s = metrics_server::start({"127.0.0.1", 0}, hs);
  ASSERT_TRUE(s) << s.error().describe();
  ASSERT_NE((*s)->port(), 0);
  httplib::Client c("127.0.0.1", (*s)->port());
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(h->body, "ok");
  auto r = c.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("not synced"), std::string::npos);
  ready = true;
  r = c.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(m->body, "# HELP colony_up Up.\n# TYPE colony_up gauge\ncolony_up 1\n");
  EXPECT_EQ(c.Get("/nothing")->status, 404);

  // A second server on the same port is refused as unavailable.
  auto again = metrics_server::start({"127.0.0.1", (*s)->port()}, hs);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, errc::unavailable);

  (*s)->stop();
  (*s)->stop();  // idempotent
  EXPECT_FALSE(httplib::Client("127.0.0.1", (*s)->port()).Get("/healthz"));
}

TEST(MetricsServer, StopsRightAfterStart) {
  for (int i = 0; i < 20; ++i) {
    auto s = metrics_server::start({"127.0.0.1", 0}, {});
    ASSERT_TRUE(s) << s.error().describe();
  }
}

// The writer's output read back by the Prometheus project's own Python parser
// (prometheus_client.parser, Debian python3-prometheus-client).
TEST(MetricsText, ThePrometheusClientParserReadsIt) {
  if (std::system("PYENV_VERSION=system python3 -c 'import prometheus_client' 2>/dev/null") != 0)
    GTEST_SKIP() << "python3-prometheus-client is not installed (tools/setup.sh)";
  histogram h(exponential_buckets(0.001, 2, 15));
  h.observe(0.003);
  h.observe(20);
  metric_family c{"colony_api_writes_total", "W \\ \"x\".", metric_type::counter, {}, {}};
  c.samples.push_back({{{"kind", "binding"}, {"result", "we\"i\\rd\nx"}}, 5});
  metric_family d{"scheduler_scheduling_attempt_duration_seconds",
                  "D.",
                  metric_type::histogram,
                  {},
                  {h.snapshot({{"result", "scheduled"}, {"profile", "koord-scheduler"}})}};
  const std::string dir = ::testing::TempDir();
  {
    std::ofstream(dir + "/metrics.txt") << write_exposition({c, d});
    std::ofstream(dir + "/parse.py")
        << "import sys\n"
           "from prometheus_client.parser import text_string_to_metric_families\n"
           "fs = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}\n"
           "w = fs['colony_api_writes']\n"
           "assert w.type == 'counter', w.type\n"
           "assert w.samples[0].labels == {'kind': 'binding', 'result': 'we\"i\\\\rd\\nx'}, "
           "w.samples[0].labels\n"
           "assert w.samples[0].value == 5\n"
           "h = fs['scheduler_scheduling_attempt_duration_seconds']\n"
           "assert h.type == 'histogram'\n"
           "s = {(x.name, x.labels.get('le')): x.value for x in h.samples}\n"
           "n = 'scheduler_scheduling_attempt_duration_seconds'\n"
           "assert s[(n + '_bucket', '0.002')] == 0\n"
           "assert s[(n + '_bucket', '0.004')] == 1\n"
           "assert s[(n + '_bucket', '+Inf')] == 2\n"
           "assert s[(n + '_count', None)] == 2\n"
           "assert abs(s[(n + '_sum', None)] - 20.003) < 1e-9\n";
  }
  EXPECT_EQ(
      std::system(
          ("PYENV_VERSION=system python3 " + dir + "/parse.py " + dir + "/metrics.txt").c_str()),
      0);
}

}  // namespace
}  // namespace colony::run
