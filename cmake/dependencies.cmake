# Every third-party dependency, found once, as Debian 12 ships it (see docs/architecture.md).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(FlatBuffers 2.0.8 EXACT CONFIG REQUIRED)
find_package(RocksDB 7.8 CONFIG REQUIRED)
find_package(spdlog 1.10 CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka>=2.0 rdkafka++>=2.0)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# cpp-httplib (libcpp-httplib-dev): Debian builds it as a library; its .pc file carries the
# defines (OpenSSL, zlib, brotli) the library was built with, which change its classes' layout.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib>=0.11)
if(COLONY_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(COLONY_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()

# tl::expected (libexpected-dev) is header-only and ships no CMake config.
find_path(TL_EXPECTED_INCLUDE_DIR tl/expected.hpp REQUIRED)
add_library(tl_expected INTERFACE)
target_include_directories(tl_expected SYSTEM INTERFACE ${TL_EXPECTED_INCLUDE_DIR})
add_library(tl::expected ALIAS tl_expected)

# CAF 0.17 ships only headers and shared objects, no CMake config and no .pc file.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIB caf_core REQUIRED)
find_library(CAF_IO_LIB caf_io REQUIRED)
add_library(caf_core INTERFACE)
target_include_directories(caf_core SYSTEM INTERFACE ${CAF_INCLUDE_DIR})
target_link_libraries(caf_core INTERFACE ${CAF_CORE_LIB} Threads::Threads)
add_library(CAF::core ALIAS caf_core)

find_program(GNUPLOT_PROGRAM gnuplot)
