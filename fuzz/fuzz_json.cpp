// libFuzzer target for ordo's JSON reader (base/json.h).
//
// An ordo::Error from parse is the reader doing its job. Anything else is a
// bug: a crash, a sanitizer report, an uncaught exception, a hang, or a value
// that does not survive being written out and read back.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/json.h"

namespace {

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_json: %s\n", what);
  std::abort();  // libFuzzer saves the input that got here
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo::json;
  Value value;
  try {
    value = parse(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const ordo::Error&) {
    return 0;
  }
  // Everything a parse accepts, dump must write (no NaN, valid UTF-8) and
  // parse must read back: no try here, so an exception is reported as a bug.
  std::string compact = dump(value);
  Value back = parse(compact);
  require(back == value, "parse(dump(v)) != v");
  require(dump(back) == compact, "dump(parse(dump(v))) != dump(v): the text is not stable");
  require(parse(dump(value, 2)) == value, "parse(dump(v, 2)) != v");
  return 0;
}
