# colony::warnings: compile flags every Colony target uses; sanitizer flags when asked.
add_library(colony_warnings INTERFACE)
add_library(colony::warnings ALIAS colony_warnings)
target_compile_options(colony_warnings INTERFACE -Wall -Wextra -Wno-missing-field-initializers)

if(COLONY_FUZZ)
  # Instrument everything for coverage; only fuzz targets link the libFuzzer main.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

if(COLONY_SANITIZE)
  # Checks stay recoverable: UBSan applies its suppressions (tools/ubsan.supp) only to
  # recoverable checks; halt_on_error=1 in UBSAN_OPTIONS still stops at the first report.
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  # Instrumented executables are the bulk of a build's disk (each test binary links the control
  # plane): debug sections compressed (the symbolizers read them) and no PIE, whose dynamic
  # relocations for the sanitizers' data were a quarter of each binary.
  add_compile_options(-gz)
  add_link_options(-gz "$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>")
endif()

# Registers one module's GoogleTest binary with ctest.
# colony_test(NAME name SOURCES a.cpp b.cpp LIBS x y)
function(colony_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest_main GTest::gmock colony::warnings)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60
    PROPERTIES ENVIRONMENT "COLONY_TEST_DATA=${PROJECT_SOURCE_DIR}/tests/data")
endfunction()
