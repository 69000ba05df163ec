#include "base/json_numbers.h"

#include <cmath>
#include <limits>
#include <string>

namespace ordo::json {

Value number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

double to_number(const Value& v) {
  if (v.is_string()) {
    const std::string& s = v.as_string();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    throw Error("expected a number or \"inf\", got the string \"" + s + "\"");
  }
  return v.as_number();
}

}  // namespace ordo::json
