// safetensors: named tensors in one file, readable by the Python ecosystem.
//
// Layout: an 8-byte little-endian length N, N bytes of JSON header, then the
// data buffer. The header maps each tensor name to
//   {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
// with byte offsets relative to the start of the data buffer, plus an optional
// "__metadata__" object of string -> string.
//
// A file is checked completely before anything in it is trusted: the header
// length against the file size, the header's JSON and every field's type, the
// dtype, the shape (no negative dims, no overflow), that each tensor's byte
// range fits its dtype and shape exactly, and that the ranges tile the data
// buffer from its first byte to the last byte of the file, with no gap, no
// overlap and nothing after. Each failure is an ordo::Error naming the file
// and the tensor.
//
// dtypes: F32 F64 BF16 F16 I64 I32 U8 (ordo's f32 f64 bf16 f16 i64 i32 u8).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace ordo::safetensors {

struct Entry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range within the data buffer
};

struct Header {
  std::vector<Entry> entries;  // sorted by offset: the order the data lies in the file
  std::vector<std::pair<std::string, std::string>> metadata;  // in header order
  uint64_t data_start = 0;     // file offset of the data buffer: 8 + N
};

// Validates a whole file held in memory (the header and the data buffer's
// extent; the data bytes themselves can be anything).
Header parse_header(const uint8_t* data, size_t size);

// CPU tensors in file order (by offset). load reads each tensor straight into
// its storage, so a checkpoint is not held in memory twice.
std::vector<std::pair<std::string, Tensor>> load(const std::string& path);
std::vector<std::pair<std::string, Tensor>> load_bytes(const uint8_t* data, size_t size);

// Lays the tensors out in the order given (any device, any strides: each is
// copied to a dense CPU tensor). Names must be non-empty, unique and not
// "__metadata__"; metadata keys must be unique. The header is padded with
// spaces to a multiple of 8 bytes, as the reference implementation does, so
// the data buffer starts 8-byte aligned.
std::string serialize(const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata = {});
// serialize, then write_file_atomic.
void save(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
          const std::vector<std::pair<std::string, std::string>>& metadata = {});

// "F32" <-> DType::f32 and so on; dtype_from_name throws for unknown names.
const char* dtype_to_name(DType dtype);
DType dtype_from_name(const std::string& name);

}  // namespace ordo::safetensors
