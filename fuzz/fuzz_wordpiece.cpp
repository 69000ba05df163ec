// libFuzzer target for BERT's WordPiece vocab.txt (text::Vocab::load and the
// tokenizer built on it, as every command reading a checkpoint builds it),
// then a text through it. The input: the first byte picks the options (bit 0:
// lower-casing; bit 1: a word limit of 100 000 characters instead of BERT's
// 100), then vocab.txt's bytes, the line "#ordo-file#", and the text.
// fuzz/tokenizer_checks.h says what a loaded tokenizer must do.
#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "fuzz/tokenizer_checks.h"
#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo;
  if (size == 0) return 0;
  const text::TokenizerOptions options{(data[0] & 1) != 0, (data[0] & 2) != 0 ? 100000 : 100};
  const std::vector<std::string> files = fuzz::parts(data + 1, size - 1, 2);
  const std::string& path = fuzz::scratch_file(reinterpret_cast<const uint8_t*>(files[0].data()), files[0].size(),
                                                "vocab.txt");
  try {
    const text::Tokenizer tokenizer(text::Vocab::load(path), options);
    fuzz::check_encoding(tokenizer, files[1]);
    const text::Tokenizer again(text::Vocab::load(fuzz::saved(tokenizer, "wordpiece") + "/vocab.txt"), options);
    if (text::utf8::valid(files[1]) && again.encode(files[1]) != tokenizer.encode(files[1])) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
