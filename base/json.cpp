// The one translation unit that compiles ordo's JSON implementation (see json.h).
#define ORDO_JSON_IMPLEMENTATION
#include "base/json.h"

#include "base/file_io.h"

namespace ordo::json {

Value parse_file(const std::string& path, const ParseLimits& limits) {
  const std::string text = read_file(path);  // its errors name the path
  try {
    return parse(text, limits);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace ordo::json
