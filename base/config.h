// Reading configuration objects strictly: every key typed and range-checked,
// every unknown key an error naming where it was, and --set overrides.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/json.h"

namespace ordo {

// Reads the members of one JSON object. Each getter records the key as known;
// finish() throws for a key no getter asked for ("unknown key 'hiden_size' in
// model"), so a typo in a config never passes silently.
class FieldReader {
 public:
  FieldReader(const json::Value& object, std::string where);

  int64_t integer(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  double number(const std::string& key, double fallback, double min, double max);
  bool boolean(const std::string& key, bool fallback);
  // With `choices` non-empty, the value must be one of them.
  std::string string(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& choices = {});
  // A nested object (nullptr when absent); an error if present but not an object.
  const json::Value* object(const std::string& key);
  // An array (nullptr when absent); an error if present but not an array.
  const json::Value* array(const std::string& key);
  // Marks keys as known without reading them (e.g. HF fields ordo ignores).
  void ignore(const std::vector<std::string>& keys);
  bool has(const std::string& key) const { return object_.contains(key); }
  void finish() const;

 private:
  const json::Value* get(const std::string& key, json::Type type);
  void log(const std::string& key, const char* type, std::string fallback, std::string range) const;
  const json::Value& object_;
  std::string where_;
  std::set<std::string> known_;
};

// What a FieldReader accepted, as `ordo help config` lists it: recorded by
// every getter while a ConfigKeyLog is alive on the calling thread, so the
// listing is made by the code that validates and cannot drift from it.
struct ConfigKey {
  std::string where;     // the reader's `where`, as given to FieldReader
  std::string key;
  std::string type;      // integer, number, boolean, string, object, ignored
  std::string fallback;  // the default, as JSON ("" for objects and ignored keys)
  std::string range;     // "1..1024", one of "a, b", or ""
};

class ConfigKeyLog {
 public:
  ConfigKeyLog();
  ~ConfigKeyLog();
  ConfigKeyLog(const ConfigKeyLog&) = delete;
  ConfigKeyLog& operator=(const ConfigKeyLog&) = delete;
  const std::vector<ConfigKey>& keys() const { return keys_; }

 private:
  friend class FieldReader;
  std::vector<ConfigKey> keys_;
  ConfigKeyLog* previous_;
};

// Applies "a.b.c=value" to root: the value is read as JSON when it parses
// (numbers, true/false, null, quoted strings, arrays) and as a plain string
// otherwise; intermediate objects are created; null removes the key (its
// default applies, as in a JSON merge patch). Errors name the assignment.
void apply_override(json::Value& root, const std::string& assignment);
// Whether `assignment` has apply_override's shape, KEY=VALUE with a dotted KEY
// of non-empty names; an error says `where` ("experiment.json: finetune.set[2]
// 'x'"). For lists of assignments read before they are applied.
void check_assignment(const std::string& assignment, const std::string& where);
// Each of a list's assignments, an error naming its index: "WHERE[2] 'x': ...".
void check_assignments(const std::vector<std::string>& assignments, const std::string& where);

}  // namespace ordo
