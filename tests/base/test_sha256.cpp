// SHA-256 against FIPS 180-2's known answers and sha256sum.
#include "base/file_io.h"
#include "base/sha256.h"
#include "tests/helpers.h"

TEST_CASE("SHA-256: FIPS 180-2's examples, pieces of any size, a file as sha256sum reads it", "[base][sha256]") {
  auto hash = [](const std::string& text) {
    ordo::Sha256 h;
    h.update(text);
    return h.hex_digest();
  };
  // FIPS 180-2, Appendix B.1 and B.2, and the empty message.
  CHECK(hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // B.3: a million 'a', fed in pieces that straddle the 64-byte blocks.
  ordo::Sha256 million;
  const std::string piece(997, 'a');
  size_t fed = 0;
  for (; fed + piece.size() <= 1000000; fed += piece.size()) million.update(piece);
  million.update(std::string(1000000 - fed, 'a'));
  CHECK(million.hex_digest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  ordo::test::TempDir dir("sha256");
  const std::string path = dir.write("f.bin", std::string(3 * (1 << 20) + 5, 'x'));
  const auto sum = ordo::test::run_command("sha256sum " + path);
  CHECK(ordo::sha256_file(path) == sum.output.substr(0, 64));
}
