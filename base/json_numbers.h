// Numbers that JSON cannot spell: +inf, -inf and NaN.
//
// RFC 8259 has no infinity and no NaN, and base/json.h refuses both, yet the
// indicators (DB = +inf under a causal mask), correlations over constant
// series (NaN) and the tables built from them must be written and read back.
// ordo writes them as the strings "inf", "-inf" and "nan"; these two
// functions are that codec, used by every writer and reader of such figures.
#pragma once

#include "base/json.h"

namespace ordo::json {

// A number for JSON: +inf -> "inf", -inf -> "-inf", NaN -> "nan", else the number.
Value number(double x);
// The inverse: a number, or "inf"/"-inf"/"nan" as written by number(); any
// other string throws ordo::Error quoting it.
double to_number(const Value& v);

}  // namespace ordo::json
