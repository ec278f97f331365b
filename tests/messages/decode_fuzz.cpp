// libFuzzer target: decode() must never crash on any bytes, and whatever it accepts must be
// safe to read in full (JSON view walks every field).
#include <cstddef>
#include <cstdint>

#include "messages/codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto d = colony::messages::decode(colony::messages::bytes_view(data, size), "fuzz");
  if (d) {
    auto j = colony::messages::to_json(colony::messages::bytes_view(data, size));
    (void)j;
  }
  return 0;
}
