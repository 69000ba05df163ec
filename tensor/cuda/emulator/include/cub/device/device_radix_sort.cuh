// Stand-in for cub's DeviceRadixSort under the emulator: SortPairs with cub's
// two-phase temp-storage protocol (a call with d_temp_storage == nullptr only
// says how many bytes the sort needs; the second call must bring at least that
// many, in device memory, and the sort works in them) and a stable LSD radix
// sort of the bits [begin_bit, end_bit) of unsigned keys
// (tensor/cuda/emulator/radix_sort.cpp).
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

namespace ordo::cuda::emulator {
int radix_sort_pairs(void* temp, size_t& temp_bytes, const void* keys_in, void* keys_out, int key_bytes,
                     const void* values_in, void* values_out, int value_bytes, long long count, int begin_bit,
                     int end_bit);
}  // namespace ordo::cuda::emulator

namespace cub {

struct DeviceRadixSort {
  template <class KeyT, class ValueT, class NumItemsT>
  static cudaError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes, const KeyT* d_keys_in,
                               KeyT* d_keys_out, const ValueT* d_values_in, ValueT* d_values_out,
                               NumItemsT num_items, int begin_bit = 0, int end_bit = sizeof(KeyT) * 8,
                               cudaStream_t stream = nullptr) {
    static_assert(std::is_integral<KeyT>::value && std::is_unsigned<KeyT>::value,
                  "the emulator's radix sort takes unsigned integer keys (all ordo sorts)");
    // Everything runs at once, in issue order, or (a capturing stream: a
    // size query is answered now) when the graph is launched.
    namespace emu = ::ordo::cuda::emulator;
    if (d_temp_storage != nullptr && emu::capturing(stream)) {
      const size_t bytes = temp_storage_bytes;
      emu::record(stream, "cub::DeviceRadixSort::SortPairs", [=] {
        size_t b = bytes;
        emu::radix_sort_pairs(d_temp_storage, b, d_keys_in, d_keys_out, sizeof(KeyT), d_values_in, d_values_out,
                              sizeof(ValueT), static_cast<long long>(num_items), begin_bit, end_bit);
      });
      return cudaSuccess;
    }
    return static_cast<cudaError_t>(emu::radix_sort_pairs(
        d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out, sizeof(KeyT), d_values_in, d_values_out,
        sizeof(ValueT), static_cast<long long>(num_items), begin_bit, end_bit));
  }
};

}  // namespace cub
