// libFuzzer target for GPT-2's and RoBERTa's byte-level BPE files, as every
// command reading such a checkpoint loads them: the first byte picks the
// files (even: vocab.json + merges.txt; odd: tokenizer.json), then their
// bytes with the line "#ordo-file#" after each, then a text to tokenize.
// fuzz/tokenizer_checks.h says what a loaded tokenizer must do; byte-level
// BPE also gives the text back from its ids, byte for byte, and reads back
// what it saved.
#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "fuzz/tokenizer_checks.h"
#include "text/bpe.h"

namespace {

ordo::text::BpeTokenizer load(bool tokenizer_json, const std::vector<std::string>& files) {
  using ordo::fuzz::scratch_file;
  auto file = [](const std::string& bytes, const char* name) {
    return scratch_file(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
  };
  if (tokenizer_json) return ordo::text::BpeTokenizer::load_tokenizer_json(file(files[0], "tokenizer.json"));
  return ordo::text::BpeTokenizer::load(file(files[0], "vocab.json"), file(files[1], "merges.txt"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo;
  if (size == 0) return 0;
  const bool tokenizer_json = (data[0] & 1) != 0;
  const std::vector<std::string> files = fuzz::parts(data + 1, size - 1, tokenizer_json ? 2 : 3);
  const std::string& input = files.back();
  try {
    const text::BpeTokenizer tokenizer = load(tokenizer_json, files);
    fuzz::check_encoding(tokenizer, input);
    if (text::utf8::valid(input) && tokenizer.decode(tokenizer.encode(input)) != input) std::abort();
    // Saved as vocab.json + merges.txt and read back, it tokenizes alike
    // (tokenizer.json's own special tokens have no place in those files).
    if (!tokenizer_json) {
      const std::string dir = fuzz::saved(tokenizer, "bpe");
      const text::BpeTokenizer again = text::BpeTokenizer::load(dir + "/vocab.json", dir + "/merges.txt");
      if (text::utf8::valid(input) && again.encode(input) != tokenizer.encode(input)) std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
