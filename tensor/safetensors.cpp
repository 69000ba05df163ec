#include "tensor/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "base/file_io.h"
#include "base/json.h"

// Tensor bytes are copied as they lie in memory, which is the file's
// little-endian order only on a little-endian host (every platform ordo
// targets). The header length is read and written byte by byte regardless.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ordo's safetensors I/O assumes a little-endian host");

namespace ordo::safetensors {

namespace {

// The reference implementation refuses headers above 100 MB too; a real
// header is a few hundred bytes per tensor.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

constexpr std::pair<DType, const char*> kDTypeNames[] = {
    {DType::f32, "F32"}, {DType::f64, "F64"}, {DType::bf16, "BF16"}, {DType::f16, "F16"},
    {DType::i64, "I64"}, {DType::i32, "I32"}, {DType::u8, "U8"},
};

const char* kInMemory = "(in memory)";

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw Error("safetensors: " + source + ": " + what);
}

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

void append_le64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// A JSON value as it appeared, shortened for an error message.
std::string brief(const json::Value& v) {
  std::string text = json::dump(v);
  return text.size() <= 80 ? text : text.substr(0, 80) + "...";
}

std::string range_str(const Entry& e) {
  return "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
}

// Checks the first 8 bytes (the header length N) against the file size and
// returns N.
uint64_t header_length(const uint8_t* first8, uint64_t file_size, const std::string& source) {
  uint64_t n = read_le64(first8);
  if (n > kMaxHeaderBytes)
    fail(source, "the header length is " + std::to_string(n) + " bytes, over the limit of " +
                     std::to_string(kMaxHeaderBytes) + " (not a safetensors file?)");
  if (n > file_size - 8)
    fail(source, "the header length is " + std::to_string(n) + " bytes, but the file has only " +
                     std::to_string(file_size - 8) + " bytes after the length (truncated file?)");
  return n;
}

// A JSON number that must be a non-negative integer: a dimension or an offset.
uint64_t non_negative_integer(const json::Value& v, const std::string& source,
                              const std::string& where) {
  if (!v.is_number())
    fail(source, where + " must be a non-negative integer, got " + brief(v));
  int64_t n;
  try {
    n = v.as_int();
  } catch (const Error&) {
    fail(source, where + " must be a non-negative integer, got " + brief(v));
  }
  if (n < 0) fail(source, where + " must be a non-negative integer, got " + std::to_string(n));
  return static_cast<uint64_t>(n);
}

Entry parse_entry(const std::string& name, const json::Value& v, const std::string& source) {
  // The writer refuses empty names, so the reader does too: whatever loads can be saved.
  if (name.empty()) fail(source, "a tensor name must not be empty");
  const std::string what = "tensor '" + name + "'";
  if (!v.is_object())
    fail(source, what + ": expected an object with dtype, shape and data_offsets, got " +
                     brief(v));
  for (const auto& [key, _] : v.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail(source, what + ": unexpected field '" + key +
                       "' (a tensor has exactly dtype, shape and data_offsets)");
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(key)) fail(source, what + ": missing field '" + key + "'");
  }

  Entry e;
  e.name = name;
  const json::Value& dtype = v["dtype"];
  if (!dtype.is_string()) fail(source, what + ": dtype must be a string, got " + brief(dtype));
  try {
    e.dtype = dtype_from_name(dtype.as_string());
  } catch (const Error& err) {
    fail(source, what + ": " + err.what());
  }

  // The element count and the count with zero dims read as 1 must both fit
  // int64: the first sizes the data, the second bounds the strides a Tensor
  // of this shape computes.
  const json::Value& shape = v["shape"];
  if (!shape.is_array())
    fail(source, what + ": shape must be an array, got " + brief(shape));
  int64_t numel = 1, stride_span = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    uint64_t d = non_negative_integer(shape[i], source,
                                      what + ": shape " + brief(shape) + " dim " +
                                          std::to_string(i));
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(numel, static_cast<int64_t>(d), &numel) ||
        __builtin_mul_overflow(stride_span, std::max<int64_t>(static_cast<int64_t>(d), 1),
                               &stride_span))
      fail(source, what + ": shape " + brief(shape) + " has more elements than fit int64");
    e.shape.push_back(static_cast<int64_t>(d));
  }

  const json::Value& offsets = v["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail(source, what + ": data_offsets must be an array [begin, end], got " + brief(offsets));
  e.begin = non_negative_integer(offsets[0], source, what + ": data_offsets begin");
  e.end = non_negative_integer(offsets[1], source, what + ": data_offsets end");
  if (e.end < e.begin)
    fail(source, what + ": data_offsets " + range_str(e) + " end before they begin");

  uint64_t nbytes;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype_size(e.dtype), &nbytes))
    fail(source, what + ": shape " + shape_str(e.shape) + " has more bytes than fit 64 bits");
  if (e.end - e.begin != nbytes)
    fail(source, what + ": data_offsets " + range_str(e) + " hold " +
                     std::to_string(e.end - e.begin) + " bytes, but " + dtype.as_string() +
                     " with shape " + shape_str(e.shape) + " needs " + std::to_string(nbytes));
  return e;
}

// Checks the header text (N bytes) of a file of file_size bytes.
Header check_header(std::string_view text, uint64_t file_size, const std::string& source) {
  Header header;
  header.data_start = 8 + text.size();
  const uint64_t buffer_size = file_size - header.data_start;

  json::Value root;
  try {
    // Depth 3 is all a valid header needs (object -> entry -> shape); a
    // little slack lets a wrong structure be reported as such, not as depth.
    root = json::parse(text, json::ParseLimits{text.size(), 8});
  } catch (const Error& err) {
    fail(source, std::string("header: ") + err.what());  // duplicate names arrive here too
  }
  if (!root.is_object())
    fail(source, "the header must be a JSON object, got " + brief(root));

  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      if (!value.is_object())
        fail(source, "__metadata__ must be an object of strings, got " + brief(value));
      for (const auto& [key, text_value] : value.items()) {
        if (!text_value.is_string())
          fail(source, "__metadata__: the value of '" + key + "' must be a string, got " +
                           brief(text_value));
        header.metadata.emplace_back(key, text_value.as_string());
      }
      continue;
    }
    header.entries.push_back(parse_entry(name, value, source));
  }

  // The tensors' byte ranges must tile the data buffer exactly.
  for (const Entry& e : header.entries) {
    if (e.end > buffer_size)
      fail(source, "tensor '" + e.name + "': data_offsets " + range_str(e) +
                       " run past the end of the data buffer, which has " +
                       std::to_string(buffer_size) + " bytes (truncated file?)");
  }
  std::stable_sort(header.entries.begin(), header.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < header.entries.size(); ++i) {
    const Entry& e = header.entries[i];
    if (e.begin > covered)
      fail(source, "bytes [" + std::to_string(covered) + ", " + std::to_string(e.begin) +
                       ") of the data buffer belong to no tensor (a gap before tensor '" +
                       e.name + "')");
    if (e.begin < covered) {
      const Entry& previous = header.entries[i - 1];
      fail(source, "tensor '" + e.name + "' (data_offsets " + range_str(e) +
                       ") overlaps tensor '" + previous.name + "' (data_offsets " +
                       range_str(previous) + ")");
    }
    covered = e.end;
  }
  if (covered != buffer_size)
    fail(source, "the file has trailing bytes after the last tensor's data: it is " +
                     std::to_string(file_size) + " bytes, the header accounts for " +
                     std::to_string(header.data_start + covered));
  return header;
}

Header parse_header_from(const uint8_t* data, size_t size, const std::string& source) {
  if (size < 8)
    fail(source, "the file is " + std::to_string(size) +
                     " bytes, too short for the 8-byte header length");
  uint64_t n = header_length(data, size, source);
  return check_header(std::string_view(reinterpret_cast<const char*>(data) + 8, n), size, source);
}

}  // namespace

const char* dtype_to_name(DType dtype) {
  for (const auto& [d, name] : kDTypeNames)
    if (d == dtype) return name;
  throw Error(std::string("safetensors: no name for dtype ") + ordo::dtype_name(dtype));
}

DType dtype_from_name(const std::string& name) {
  for (const auto& [d, n] : kDTypeNames)
    if (name == n) return d;
  // A byte per element, 0 or 1: read as U8 (older GPT-2 files keep their causal masks so).
  if (name == "BOOL") return DType::u8;
  throw Error("unknown dtype '" + name + "' (ordo reads F32, F64, BF16, F16, I64, I32, U8 and BOOL)");
}

Header parse_header(const uint8_t* data, size_t size) {
  return parse_header_from(data, size, kInMemory);
}

std::vector<std::pair<std::string, Tensor>> load_bytes(const uint8_t* data, size_t size) {
  Header header = parse_header_from(data, size, kInMemory);
  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(header.entries.size());
  for (const Entry& e : header.entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.raw_data(), data + header.data_start + e.begin, e.end - e.begin);
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

std::vector<std::pair<std::string, Tensor>> load(const std::string& path) {
  const std::string source = "'" + path + "'";
  InputFile file(path);
  if (file.size() < 8)
    fail(source, "the file is " + std::to_string(file.size()) +
                     " bytes, too short for the 8-byte header length");
  uint8_t first8[8];
  file.read_at(0, first8, 8);
  uint64_t n = header_length(first8, file.size(), source);
  std::string text(n, '\0');
  file.read_at(8, text.data(), n);
  Header header = check_header(text, file.size(), source);

  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(header.entries.size());
  for (const Entry& e : header.entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    file.read_at(header.data_start + e.begin, t.raw_data(), e.end - e.begin);
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

std::string serialize(const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata) {
  json::Value header = json::Value::object();
  if (!metadata.empty()) {
    json::Value meta = json::Value::object();
    for (const auto& [key, value] : metadata) {
      ORDO_CHECK(!meta.contains(key), "safetensors: duplicate metadata key '", key, "'");
      meta[key] = value;
    }
    header["__metadata__"] = std::move(meta);
  }

  std::unordered_set<std::string> names;
  std::vector<Tensor> dense;
  dense.reserve(tensors.size());
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    ORDO_CHECK(!name.empty(), "safetensors: a tensor name must not be empty");
    ORDO_CHECK(name != "__metadata__",
               "safetensors: '__metadata__' is reserved and cannot name a tensor");
    ORDO_CHECK(names.insert(name).second, "safetensors: duplicate tensor name '", name, "'");
    ORDO_CHECK(tensor.defined(), "safetensors: tensor '", name, "' is undefined");
    Tensor t = tensor.to(Device::cpu()).contiguous();
    uint64_t nbytes = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    json::Value entry = json::Value::object();
    entry["dtype"] = dtype_to_name(t.dtype());
    json::Value shape = json::Value::array();
    for (int64_t d : t.shape()) shape.push_back(d);
    entry["shape"] = std::move(shape);
    json::Value offsets = json::Value::array();
    offsets.push_back(offset);
    offsets.push_back(offset + nbytes);
    entry["data_offsets"] = std::move(offsets);
    header[name] = std::move(entry);
    offset += nbytes;
    dense.push_back(std::move(t));
  }

  std::string text = json::dump(header);
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  append_le64(out, text.size());
  out += text;
  for (const Tensor& t : dense)
    out.append(static_cast<const char*>(t.raw_data()), t.numel() * dtype_size(t.dtype()));
  return out;
}

void save(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
          const std::vector<std::pair<std::string, std::string>>& metadata) {
  write_file_atomic(path, serialize(tensors, metadata));
}

}  // namespace ordo::safetensors
