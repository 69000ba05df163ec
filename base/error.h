// ordo::Error — the one exception type ordo throws for a mistake a caller can fix
// (a shape, dtype or device that does not fit, a file that lies, a bad flag).
// The message always says what was found and what was expected.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ordo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
// Streams any number of values into one string: cat("got ", 3, " dims").
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace ordo

// ORDO_CHECK(cond, parts...) throws ordo::Error("<parts...>") when cond is false.
// Use it for every condition a user of the library can violate.
#define ORDO_CHECK(cond, ...)                                     \
  do {                                                            \
    if (!(cond)) throw ::ordo::Error(::ordo::detail::cat(__VA_ARGS__)); \
  } while (0)

// ORDO_ASSERT is for internal invariants: a failure is a bug in ordo, not in the caller.
#define ORDO_ASSERT(cond)                                                          \
  do {                                                                             \
    if (!(cond))                                                                   \
      throw ::ordo::Error(::ordo::detail::cat("internal error: ", #cond, " at ", \
                                              __FILE__, ":", __LINE__));           \
  } while (0)
