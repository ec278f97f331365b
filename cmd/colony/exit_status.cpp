#include <cstdio>
#include <exception>

#include "cmd/colony/commands.hpp"
#include "cmd/colony/exit_codes.hpp"

namespace colony::cli {

int& exit_status() {
  static int code = exit_ok;
  return code;
}

int parse_and_run(CLI::App& app, int argc, char** argv, const char* program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? exit_ok : exit_usage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", program, e.what());
    return exit_internal;
  }
  return exit_status();
}

}  // namespace colony::cli
