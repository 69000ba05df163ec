// Every variant reads its options strictly: a key it does not take is an
// error naming the key, never silently ignored (a misspelt "clip" would
// otherwise train an unclipped model).
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;
using Catch::Matchers::Contains;

TEST_CASE("every variant refuses an option it does not take, naming it", "[pe]") {
  for (const std::string& name : pe::variant_names()) {
    INFO("variant " << name);
    CHECK_NOTHROW(make(tiny_config(name)));
    json::Value options = json::parse(R"({"clipp": 4})");
    CHECK_THROWS_WITH(make(tiny_config(name, options)), Contains("clipp"));
  }
  // A combination hands its options to its attention-level part, strictly too.
  CHECK_THROWS_WITH(make(tiny_config("ape_learned+rpe_shaw", json::parse(R"({"share": "heads", "vlaue": true})"))),
                    Contains("vlaue"));
}
