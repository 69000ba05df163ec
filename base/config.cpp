#include "base/config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ordo {

namespace {
thread_local ConfigKeyLog* key_log = nullptr;

// A bound as a person reads it: the extremes of int64 as no bound at all.
std::string bound(int64_t n) {
  if (n == INT64_MAX) return "inf";
  return std::to_string(n);
}
std::string bound(double d) { return json::dump(json::Value(d)); }
}  // namespace

ConfigKeyLog::ConfigKeyLog() : previous_(key_log) { key_log = this; }
ConfigKeyLog::~ConfigKeyLog() { key_log = previous_; }

void FieldReader::log(const std::string& key, const char* type, std::string fallback, std::string range) const {
  if (key_log != nullptr) key_log->keys_.push_back({where_, key, type, std::move(fallback), std::move(range)});
}

FieldReader::FieldReader(const json::Value& object, std::string where)
    : object_(object), where_(std::move(where)) {
  ORDO_CHECK(object.is_object(), where_, ": expected a JSON object, got ", json::type_name(object.type()));
}

const json::Value* FieldReader::get(const std::string& key, json::Type type) {
  known_.insert(key);
  const json::Value* v = object_.find(key);
  if (!v) return nullptr;
  bool ok = v->type() == type;
  ORDO_CHECK(ok, where_, ": '", key, "' must be ", json::with_article(type), ", got ",
             json::type_name(v->type()), " (", json::dump(*v), ")");
  return v;
}

int64_t FieldReader::integer(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  log(key, "integer", std::to_string(fallback), bound(min) + ".." + bound(max));
  const json::Value* v = get(key, json::Type::number);
  if (!v) return fallback;
  const double d = v->as_number();
  ORDO_CHECK(d == std::floor(d), where_, ": '", key, "' must be an integer, got ", json::dump(*v));
  // Beyond int64 the cast would be undefined (found by fuzz_run_config): out of range, whatever the range.
  ORDO_CHECK(d >= -0x1p63 && d < 0x1p63, where_, ": '", key, "' must be between ", min, " and ", max, ", got ",
             json::dump(*v));
  int64_t n = v->as_int();
  ORDO_CHECK(n >= min && n <= max, where_, ": '", key, "' must be between ", min, " and ", max, ", got ", n);
  return n;
}

double FieldReader::number(const std::string& key, double fallback, double min, double max) {
  log(key, "number", bound(fallback), bound(min) + ".." + bound(max));
  const json::Value* v = get(key, json::Type::number);
  if (!v) return fallback;
  double d = v->as_number();
  ORDO_CHECK(d >= min && d <= max, where_, ": '", key, "' must be between ", min, " and ", max, ", got ", d);
  return d;
}

bool FieldReader::boolean(const std::string& key, bool fallback) {
  log(key, "boolean", fallback ? "true" : "false", "");
  const json::Value* v = get(key, json::Type::boolean);
  return v ? v->as_bool() : fallback;
}

std::string FieldReader::string(const std::string& key, const std::string& fallback,
                                const std::vector<std::string>& choices) {
  std::string listed;
  for (const auto& c : choices) listed += (listed.empty() ? "one of " : ", ") + c;
  log(key, "string", json::dump(json::Value(fallback)), listed);
  const json::Value* v = get(key, json::Type::string);
  std::string s = v ? v->as_string() : fallback;
  if (v && !choices.empty() && std::find(choices.begin(), choices.end(), s) == choices.end()) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    throw Error(detail::cat(where_, ": '", key, "' is '", s, "', expected one of: ", list));
  }
  return s;
}

const json::Value* FieldReader::object(const std::string& key) {
  log(key, "object", "", "");
  return get(key, json::Type::object);
}

const json::Value* FieldReader::array(const std::string& key) {
  log(key, "array", "", "");
  return get(key, json::Type::array);
}

void FieldReader::ignore(const std::vector<std::string>& keys) {
  for (const auto& key : keys) log(key, "ignored", "", "");
  known_.insert(keys.begin(), keys.end());
}

void FieldReader::finish() const {
  for (const auto& [key, value] : object_.items()) {
    ORDO_CHECK(known_.count(key), where_, ": unknown key '", key, "'");
  }
}

void check_assignment(const std::string& assignment, const std::string& where) {
  const size_t eq = assignment.find('=');
  ORDO_CHECK(eq != std::string::npos && eq > 0, where, ": expected key=value");
  const std::string path = assignment.substr(0, eq);
  ORDO_CHECK(path.front() != '.' && path.back() != '.' && path.find("..") == std::string::npos, where,
             ": empty key in '", path, "'");
}

void check_assignments(const std::vector<std::string>& assignments, const std::string& where) {
  for (size_t k = 0; k < assignments.size(); ++k)
    check_assignment(assignments[k], detail::cat(where, "[", k, "] '", assignments[k], "'"));
}

void apply_override(json::Value& root, const std::string& assignment) {
  check_assignment(assignment, "--set '" + assignment + "'");
  const size_t eq = assignment.find('=');
  std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  json::Value value;
  try {
    value = json::parse(text);
  } catch (const Error&) {
    value = json::Value(text);  // a bare word: a string
  }
  json::Value* node = &root;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    ORDO_CHECK(node->is_object() || node->is_null(), "--set '", assignment, "': '",
               path.substr(0, start ? start - 1 : 0), "' is not an object");
    if (dot == std::string::npos) {
      // null unsets the key (JSON merge patch's rule): its default applies, as
      // when a file never gave it (train.steps=null makes room for train.phases).
      if (value.is_null()) {
        if (node->is_object()) node->erase(key);
      } else {
        (*node)[key] = value;
      }
      return;
    }
    node = &(*node)[key];
    start = dot + 1;
  }
}

}  // namespace ordo
