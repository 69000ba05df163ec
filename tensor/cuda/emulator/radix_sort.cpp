// The emulator's cub::DeviceRadixSort::SortPairs (the stand-in
// cub/device/device_radix_sort.cuh): cub's two-phase temp-storage protocol,
// and a stable least-significant-digit radix sort, 8 bits a pass, of the bits
// [begin_bit, end_bit) of the keys only (bits outside the range neither order
// the keys nor change: two keys that differ only there keep their input
// order). The passes ping-pong through the caller's temp storage, so storage
// smaller than it should be faults on its guard page.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "tensor/cuda/emulator/emulator.h"

namespace ordo::cuda::emulator {

namespace {

constexpr int kDigitBits = 8;
constexpr size_t kAlign = 256;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

uint64_t load_key(const char* keys, int key_bytes, long long i) {
  uint64_t k = 0;
  std::memcpy(&k, keys + i * key_bytes, static_cast<size_t>(key_bytes));  // little-endian: the low bytes
  return k;
}

int refuse(const std::string& why) {
  set_launch_error(cudaErrorInvalidValue, "cub::DeviceRadixSort::SortPairs: " + why);
  return cudaErrorInvalidValue;
}

}  // namespace

int radix_sort_pairs(void* temp, size_t& temp_bytes, const void* keys_in, void* keys_out, int key_bytes,
                     const void* values_in, void* values_out, int value_bytes, long long count, int begin_bit,
                     int end_bit) {
  // Two arrays of keys and two of values to ping-pong between.
  const size_t needed = 2 * aligned(static_cast<size_t>(count) * key_bytes) +
                        2 * aligned(static_cast<size_t>(count) * value_bytes);
  if (temp == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (count < 0) return refuse("num_items is negative");
  if (begin_bit < 0 || end_bit > 8 * key_bytes || begin_bit > end_bit)
    return refuse("the bit range [" + std::to_string(begin_bit) + ", " + std::to_string(end_bit) +
                  ") is not inside the key's " + std::to_string(8 * key_bytes) + " bits");
  if (temp_bytes < needed)
    return refuse(std::to_string(temp_bytes) + " bytes of temp storage, " + std::to_string(needed) +
                  " needed (the size the first call returned)");
  if (!is_device_range(temp, temp_bytes)) return refuse("the temp storage is not device memory of that size");
  if (count == 0) return cudaSuccess;
  const size_t key_array = static_cast<size_t>(count) * key_bytes, value_array = static_cast<size_t>(count) * value_bytes;
  if (!is_device_range(keys_in, key_array) || !is_device_range(keys_out, key_array) ||
      !is_device_range(values_in, value_array) || !is_device_range(values_out, value_array))
    return refuse("a key or value array is not device memory of num_items elements");

  DeviceSection section("cub::DeviceRadixSort::SortPairs");
  stand_in_read("cub::DeviceRadixSort::SortPairs (keys_in)", keys_in, key_array);
  stand_in_read("cub::DeviceRadixSort::SortPairs (values_in)", values_in, value_array);
  stand_in_write("cub::DeviceRadixSort::SortPairs (temp storage)", temp, needed);
  stand_in_write("cub::DeviceRadixSort::SortPairs (keys_out)", keys_out, key_array);
  stand_in_write("cub::DeviceRadixSort::SortPairs (values_out)", values_out, value_array);
  char* base = static_cast<char*>(temp);
  char* keys[2] = {base, base + aligned(key_array)};
  char* values[2] = {keys[1] + aligned(key_array), keys[1] + aligned(key_array) + aligned(value_array)};
  std::memcpy(keys[0], keys_in, key_array);
  std::memcpy(values[0], values_in, value_array);
  int from = 0;
  for (int bit = begin_bit; bit < end_bit; bit += kDigitBits) {
    const int bits = std::min(kDigitBits, end_bit - bit);
    const uint64_t digit_mask = (uint64_t(1) << bits) - 1;
    long long offsets[1 << kDigitBits] = {};
    for (long long i = 0; i < count; ++i) ++offsets[(load_key(keys[from], key_bytes, i) >> bit) & digit_mask];
    long long start = 0;
    for (uint64_t d = 0; d <= digit_mask; ++d) {  // counts to starting positions
      const long long c = offsets[d];
      offsets[d] = start;
      start += c;
    }
    const int to = 1 - from;
    for (long long i = 0; i < count; ++i) {  // in input order: stable
      const long long dst = offsets[(load_key(keys[from], key_bytes, i) >> bit) & digit_mask]++;
      std::memcpy(keys[to] + dst * key_bytes, keys[from] + i * key_bytes, static_cast<size_t>(key_bytes));
      std::memcpy(values[to] + dst * value_bytes, values[from] + i * value_bytes, static_cast<size_t>(value_bytes));
    }
    from = to;
  }
  std::memcpy(keys_out, keys[from], key_array);
  std::memcpy(values_out, values[from], value_array);
  return cudaSuccess;
}

}  // namespace ordo::cuda::emulator
