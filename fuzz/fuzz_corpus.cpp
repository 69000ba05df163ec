// libFuzzer target for the corpus reader (text::CorpusReader): a plain-text
// corpus, one sentence a line, a blank line between documents, UTF-8.
// Every document read must hold at least one sentence and no empty one.
#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "text/corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo;
  const std::string& path = fuzz::scratch_file(data, size, "corpus.txt");
  try {
    text::CorpusReader reader(path);
    text::Document doc;
    while (reader.next(doc)) {
      if (doc.sentences.empty()) std::abort();
      for (const std::string& s : doc.sentences)
        if (s.empty()) std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
