// SHA-256 (FIPS 180-4), the content hash a checkpoint records of its files at
// save time (trainer_state.json) and checks when it is resumed: the same
// digest `sha256sum FILE` prints, so a user can check a file by hand.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ordo {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  std::string hex_digest();  // 64 lowercase hex digits; ends the hash

 private:
  void compress(const uint8_t block[64]);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes hashed
};

// The SHA-256 of a file's bytes, read in pieces; errors name the path.
std::string sha256_file(const std::string& path);

}  // namespace ordo
