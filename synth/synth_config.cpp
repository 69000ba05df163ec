// The synthetic grammar's Config by field name: checks, JSON and --set.
#include <cerrno>
#include <cstdlib>

#include "base/error.h"
#include "synth/synth.h"

namespace ordo::synth {

namespace {

// One Config field: a double or an int member, and its allowed range.
struct Field {
  const char* name;
  double Config::*real;
  int Config::*integer;
  double min, max;
};

constexpr double kUnbounded = 1e300;

#define ORDO_PROB(f) Field{#f, &Config::f, nullptr, 0.0, 1.0}
#define ORDO_WEIGHT(f) Field{#f, &Config::f, nullptr, 0.0, kUnbounded}
#define ORDO_INT(f, lo, hi) Field{#f, nullptr, &Config::f, lo, hi}

const Field kFields[] = {
    ORDO_INT(min_sentences, 1, 1000),
    ORDO_INT(max_sentences, 1, 1000),
    ORDO_INT(cast_animate, 0, 100),
    ORDO_INT(cast_things, 0, 100),
    ORDO_PROB(p_cast),
    Field{"zipf_shift", &Config::zipf_shift, nullptr, 1e-6, 1e9},
    ORDO_PROB(p_coordinate),
    ORDO_PROB(p_adverbial),
    ORDO_WEIGHT(w_intransitive),
    ORDO_WEIGHT(w_transitive_animate),
    ORDO_WEIGHT(w_transitive_thing),
    ORDO_WEIGHT(w_clausal),
    ORDO_PROB(p_passive),
    ORDO_PROB(p_by_agent),
    ORDO_PROB(p_past),
    ORDO_PROB(p_adverb),
    ORDO_PROB(p_adverb_first),
    ORDO_PROB(p_vp_pp),
    ORDO_PROB(p_plural),
    ORDO_PROB(p_definite),
    ORDO_PROB(p_numeral),
    ORDO_PROB(p_adjective),
    ORDO_PROB(p_collocation),
    ORDO_PROB(p_degree),
    ORDO_PROB(p_np_pp),
    ORDO_PROB(p_relative),
    ORDO_PROB(p_object_relative),
    ORDO_PROB(p_that),
    ORDO_PROB(p_np_coordinate),
    ORDO_INT(max_depth, 0, 8),
    // "the dog ran ." is the shortest sentence the grammar makes.
    ORDO_INT(max_words, 4, 10000),
};

#undef ORDO_PROB
#undef ORDO_WEIGHT
#undef ORDO_INT

double value_of(const Config& c, const Field& f) {
  return f.real ? c.*f.real : static_cast<double>(c.*f.integer);
}

const Field& field_named(const std::string& name) {
  for (const Field& f : kFields)
    if (name == f.name) return f;
  std::string known;
  for (const Field& f : kFields) known += std::string(known.empty() ? "" : ", ") + f.name;
  throw Error("unknown synthetic-grammar setting '" + name + "' (known: " + known + ")");
}

}  // namespace

void validate(const Config& c) {
  for (const Field& f : kFields) {
    double v = value_of(c, f);
    // !(a <= v) also catches NaN.
    ORDO_CHECK(f.min <= v && v <= f.max, "synthetic grammar: ", f.name, " = ", v, " is out of range [",
               f.min, ", ", f.max, "]");
  }
  ORDO_CHECK(c.min_sentences <= c.max_sentences, "synthetic grammar: min_sentences = ", c.min_sentences,
             " is more than max_sentences = ", c.max_sentences);
  // Clausal complements are not drawn at max_depth, so another frame must be possible.
  ORDO_CHECK(c.w_intransitive + c.w_transitive_animate + c.w_transitive_thing > 0,
             "synthetic grammar: w_intransitive, w_transitive_animate and w_transitive_thing are "
             "all 0; at least one must be positive");
}

json::Value to_json(const Config& c) {
  json::Value out = json::Value::object();
  for (const Field& f : kFields) {
    if (f.real)
      out[f.name] = c.*f.real;
    else
      out[f.name] = c.*f.integer;
  }
  return out;
}

void set_field(Config& c, const std::string& name, const std::string& value) {
  const Field& f = field_named(name);
  errno = 0;
  char* end = nullptr;
  if (f.real) {
    double v = std::strtod(value.c_str(), &end);
    ORDO_CHECK(!value.empty() && *end == '\0' && errno == 0, "synthetic grammar: ", name,
               " needs a number, got '", value, "'");
    c.*f.real = v;
  } else {
    long long v = std::strtoll(value.c_str(), &end, 10);
    ORDO_CHECK(!value.empty() && *end == '\0' && errno == 0 && v >= f.min && v <= f.max,
               "synthetic grammar: ", name, " needs an integer in [", f.min, ", ", f.max,
               "], got '", value, "'");
    c.*f.integer = static_cast<int>(v);
  }
}

}  // namespace ordo::synth
