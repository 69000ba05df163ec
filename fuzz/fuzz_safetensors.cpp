// libFuzzer target for ordo's safetensors reader (tensor/safetensors.h).
//
// An ordo::Error from the reader is it refusing a lying file. Anything else is
// a bug: a crash, a sanitizer report, an uncaught exception, a hang, or a file
// that loads but does not survive being written out and loaded again.
//
// Each input is read twice: as a whole file, and as a header alone, to which
// the harness adds the length prefix and a zeroed data buffer reaching the
// largest end offset the header names. Without the second reading nearly
// every mutation of a header is refused for the length prefix or the file
// size no longer matching, and the checks past those are rarely reached.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "tensor/safetensors.h"

namespace st = ordo::safetensors;

namespace {

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what);
  std::abort();  // libFuzzer saves the input that got here
}

size_t nbytes(const ordo::Tensor& t) {
  return static_cast<size_t>(t.numel()) * ordo::dtype_size(t.dtype());
}

void check_file(const uint8_t* data, size_t size) {
  st::Header header;
  std::vector<std::pair<std::string, ordo::Tensor>> tensors;
  try {
    header = st::parse_header(data, size);
    tensors = st::load_bytes(data, size);
  } catch (const ordo::Error&) {
    return;
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
}

// The largest data_offsets end in a header, capped so a claim of terabytes
// costs nothing; 0 when the text is not a JSON object.
size_t largest_end(std::string_view text) {
  constexpr double kCap = 1 << 16;
  ordo::json::Value root;
  try {
    root = ordo::json::parse(text);
  } catch (const ordo::Error&) {
    return 0;
  }
  if (!root.is_object()) return 0;
  double end = 0;
  for (const auto& [name, entry] : root.items()) {
    const ordo::json::Value* offsets = entry.is_object() ? entry.find("data_offsets") : nullptr;
    if (offsets && offsets->is_array() && offsets->size() == 2 && (*offsets)[1].is_number()) {
      double e = (*offsets)[1].as_number();
      if (e > end && e <= kCap) end = e;
    }
  }
  return static_cast<size_t>(end);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_file(data, size);

  std::string_view header(reinterpret_cast<const char*>(data), size);
  std::string file;
  for (int i = 0; i < 8; ++i) file += static_cast<char>((uint64_t{size} >> (8 * i)) & 0xFF);
  file += header;
  file.append(largest_end(header), '\0');
  check_file(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  return 0;
}
