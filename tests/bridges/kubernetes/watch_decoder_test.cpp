// The WATCH line splitter and event decoder (bridges/kubernetes/watch_decoder.hpp): no server.
#include "bridges/kubernetes/watch_decoder.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace colony::kube {
namespace {

// Three events as kube-apiserver writes them: one JSON object per line.
const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p1","namespace":"ns","resourceVersion":"11"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"p1","namespace":"ns","resourceVersion":"12"},"note":"line\nbreak in a string"}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"15"}}})"
    "\n";

std::vector<watch_event> decode_in_chunks(const std::string& stream, std::size_t chunk) {
  watch_decoder d("test");
  std::vector<watch_event> out;
  for (std::size_t i = 0; i < stream.size(); i += chunk) {
    auto r = d.feed(std::string_view(stream).substr(i, chunk), out);
    EXPECT_TRUE(r) << r.error().describe();
  }
  EXPECT_TRUE(d.finish());
  EXPECT_EQ(d.bytes(), stream.size());
  return out;
}

TEST(WatchDecoder, SeveralEventsInOneChunk) {
  auto events = decode_in_chunks(kStream, kStream.size());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, watch_event_type::added);
  EXPECT_EQ(events[1].type, watch_event_type::modified);
  EXPECT_EQ(events[2].type, watch_event_type::bookmark);
  EXPECT_EQ(events[0].object["metadata"]["resourceVersion"], "11");
  // JSON escapes a newline inside a string, so it never splits a line.
  EXPECT_EQ(events[1].object["note"], "line\nbreak in a string");
  EXPECT_EQ(events[0].offset, 0u);
  EXPECT_EQ(events[1].offset, kStream.find("{\"type\":\"MODIFIED\""));
  EXPECT_EQ(events[2].offset, kStream.find("{\"type\":\"BOOKMARK\""));
}

TEST(WatchDecoder, EventsSplitAcrossChunksDecodeTheSame) {
  const auto whole = decode_in_chunks(kStream, kStream.size());
  for (std::size_t chunk : {1u, 2u, 7u, 64u, 100u}) {
    const auto split = decode_in_chunks(kStream, chunk);
    ASSERT_EQ(split.size(), whole.size()) << "chunk " << chunk;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(split[i].type, whole[i].type) << "chunk " << chunk;
      EXPECT_EQ(split[i].object, whole[i].object) << "chunk " << chunk;
      EXPECT_EQ(split[i].offset, whole[i].offset) << "chunk " << chunk;
    }
  }
}

TEST(WatchDecoder, KeepsAPartialLineUntilItsNewline) {
  watch_decoder d("test");
  std::vector<watch_event> out;
  const std::string first = kStream.substr(0, kStream.find('\n') + 1);
  ASSERT_TRUE(d.feed(first.substr(0, 30), out));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(d.pending(), 30u);
  EXPECT_FALSE(d.finish());  // cut mid-event
  ASSERT_TRUE(d.feed(first.substr(30), out));
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(d.pending(), 0u);
  EXPECT_TRUE(d.finish());
}

TEST(WatchDecoder, ErrorEventCarriesTheStatus) {
  watch_decoder d("test");
  std::vector<watch_event> out;
  const std::string line =
      R"js({"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"too old resource version: 5 (9)","reason":"Expired","code":410}})js"
      "\r\n\n";
  ASSERT_TRUE(d.feed(line, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, watch_event_type::error);
  EXPECT_EQ(out[0].object["code"], 410);
}

TEST(WatchDecoder, MalformedLineIsAnErrorWithItsByteOffset) {
  const std::string good = kStream.substr(0, kStream.find('\n') + 1);
  const std::string bad = "{\"type\":\"ADDED\",\"object\":{\"metadata\":}\n";
  for (std::size_t chunk : {1u, 5u, 1000u}) {
    watch_decoder d("GET https://127.0.0.1:1/api/v1/pods?watch=1");
    std::vector<watch_event> out;
    const std::string stream = good + bad + good;
    result<void> r;
    for (std::size_t i = 0; i < stream.size() && r; i += chunk) {
      r = d.feed(std::string_view(stream).substr(i, chunk), out);
    }
    ASSERT_FALSE(r) << "chunk " << chunk;
    EXPECT_EQ(r.error().code, errc::invalid_input);
    EXPECT_EQ(r.error().where,
              "GET https://127.0.0.1:1/api/v1/pods?watch=1: byte " + std::to_string(good.size()))
        << "chunk " << chunk;
    EXPECT_NE(r.error().message.find("malformed watch event"), std::string::npos);
    EXPECT_EQ(out.size(), 1u) << "the event before the bad line is delivered";
  }
}

TEST(WatchDecoder, RejectsEventsWithoutTypeOrObject) {
  const char* bad_lines[] = {
      "[1,2]\n",
      "{\"object\":{}}\n",
      "{\"type\":\"RENAMED\",\"object\":{}}\n",
      "{\"type\":\"ADDED\"}\n",
      "{\"type\":\"ADDED\",\"object\":3}\n",
  };
  for (const char* line : bad_lines) {
    watch_decoder d("s");
    std::vector<watch_event> out;
    auto r = d.feed(line, out);
    ASSERT_FALSE(r) << line;
    EXPECT_EQ(r.error().where, "s: byte 0") << line;
  }
}

TEST(WatchDecoder, RefusesARunawayLine) {
  watch_decoder d("s", 64);
  std::vector<watch_event> out;
  ASSERT_TRUE(d.feed(std::string(60, 'x'), out));
  auto r = d.feed(std::string(10, 'x'), out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, "s: byte 0");
}

}  // namespace
}  // namespace colony::kube
