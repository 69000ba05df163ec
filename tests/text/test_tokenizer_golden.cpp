// ordo's tokenizer against HuggingFace's: tests/data/tokenizer_golden.json was
// written by scripts/tokenizer_twin.py running transformers' Python BertTokenizer
// on tricky sentences with tests/data/tokenizer_vocab.txt.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "text/tokenizer.h"

using namespace ordo::text;

namespace {

std::vector<std::string> strings(const ordo::json::Value& array) {
  std::vector<std::string> out;
  for (const auto& v : array.as_array()) out.push_back(v.as_string());
  return out;
}

}  // namespace

TEST_CASE("tokenizer matches HuggingFace's BertTokenizer on the golden sentences", "[text][tokenizer]") {
  const std::string dir = std::string(ORDO_SOURCE_DIR) + "/tests/data/";
  ordo::json::Value golden = ordo::json::parse(ordo::read_file(dir + "tokenizer_golden.json"));
  Vocab vocab = Vocab::load(dir + "tokenizer_vocab.txt");
  Tokenizer lower(vocab, TokenizerOptions{true, 100});
  Tokenizer cased(vocab, TokenizerOptions{false, 100});
  BasicTokenizer basic_lower(true), basic_cased(false);

  const auto& cases = golden["cases"].as_array();
  REQUIRE(cases.size() > 50);
  for (const auto& c : cases) {
    const std::string& text = c["text"].as_string();
    bool lower_case = c["lower_case"].as_bool();
    INFO("text: " << text << "  lower_case: " << lower_case);
    const Tokenizer& tokenizer = lower_case ? lower : cased;
    const BasicTokenizer& basic = lower_case ? basic_lower : basic_cased;
    CHECK(basic.words(text) == strings(c["basic"]));
    CHECK(tokenizer.tokenize(text) == strings(c["tokens"]));
    std::vector<int32_t> ids;
    for (const auto& v : c["ids"].as_array()) ids.push_back(static_cast<int32_t>(v.as_int()));
    CHECK(tokenizer.encode(text) == ids);
  }
}
