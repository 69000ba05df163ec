// libFuzzer target for ordo's safetensors reader (tensor/safetensors.h).
//
// An ordo::Error from the reader is it refusing a lying file. Anything else is
// a bug: a crash, a sanitizer report, an uncaught exception, a hang, or a file
// that loads but does not survive being written out and loaded again.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tensor/safetensors.h"

namespace {

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what);
  std::abort();  // libFuzzer saves the input that got here
}

size_t nbytes(const ordo::Tensor& t) { return static_cast<size_t>(t.numel()) * ordo::dtype_size(t.dtype()); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace st = ordo::safetensors;
  st::Header header;
  std::vector<std::pair<std::string, ordo::Tensor>> tensors;
  try {
    header = st::parse_header(data, size);
    tensors = st::load_bytes(data, size);
  } catch (const ordo::Error&) {
    return 0;
  }
  require(tensors.size() == header.entries.size(), "load_bytes and parse_header disagree");

  // Whatever loads must save (no try: an exception here is a bug) and load
  // back to the same names, dtypes, shapes, bytes and metadata.
  std::string bytes = st::serialize(tensors, header.metadata);
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  auto again = st::load_bytes(p, bytes.size());
  require(st::parse_header(p, bytes.size()).metadata == header.metadata, "metadata changed");
  require(again.size() == tensors.size(), "tensor count changed");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ordo::Tensor& a = tensors[i].second;
    const ordo::Tensor& b = again[i].second;
    require(again[i].first == tensors[i].first, "name or order changed");
    require(a.dtype() == b.dtype() && a.shape() == b.shape(), "dtype or shape changed");
    require(std::memcmp(a.raw_data(), b.raw_data(), nbytes(a)) == 0, "bytes changed");
  }
  return 0;
}
