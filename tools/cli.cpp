#include "tools/cli.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "base/error.h"
#include "tensor/device_runtime.h"
#include "text/utf8.h"

namespace ordo::cli {

namespace {
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

// Every path and name a command is given ends up in a JSON record (the run's
// config.json, results.json, a report), and JSON holds UTF-8 only: a value
// that is not UTF-8 is refused here, before any work, rather than when the
// first record is written, maybe hours later.
void check_utf8(const std::string& value, const std::string& what) {
  text::utf8::Invalid invalid;
  ORDO_USAGE_CHECK(text::utf8::valid(value, &invalid), what, " is not valid UTF-8 (byte ", invalid.offset + 1, " of ",
                   value.size(), ": ", invalid.reason, "); ordo writes the paths and names it is given into its JSON "
                   "records, which hold UTF-8 only: rename the file or folder");
}
}  // namespace

Register::Register(Command command) { registry().push_back(std::move(command)); }

const std::vector<Command>& commands() {
  auto& all = registry();
  std::sort(all.begin(), all.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  return all;
}

Args::Args(const std::vector<std::string>& argv, const std::vector<std::string>& flags,
           const std::vector<std::string>& switches, Positional positional) {
  auto known = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      check_utf8(arg, "argument " + std::to_string(positional_.size() + 1) + " (not a flag)");
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    size_t eq = name.find('=');
    bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (known(switches, name)) {
      ORDO_USAGE_CHECK(!inline_value, "flag --", name, " takes no value");
      values_.emplace(name, "");
      continue;
    }
    ORDO_USAGE_CHECK(known(flags, name), "unknown flag --", name);
    if (!inline_value) {
      ORDO_USAGE_CHECK(i + 1 < argv.size(), "flag --", name, " needs a value");
      value = argv[++i];
      // "--rungs --list": the value forgotten, the next flag taken for it.
      const std::string next = value.rfind("--", 0) == 0 ? value.substr(2, value.find('=') - 2) : "";
      ORDO_USAGE_CHECK(next.empty() || (!known(flags, next) && !known(switches, next)), "flag --", name,
                       " needs a value, got the flag ", value, " (--", name, "=", value, " if that is the value)");
    }
    check_utf8(value, "the value of --" + name);
    values_.emplace(name, value);
  }
  if (positional == Positional::refused && !positional_.empty()) {
    std::string accepted;
    for (const auto* list : {&flags, &switches})
      for (const std::string& f : *list) accepted += (accepted.empty() ? "--" : ", --") + f;
    throw UsageError("unexpected argument '" + positional_[0] + "': this command takes flags only (" +
                     (accepted.empty() ? "none" : accepted) + ")");
  }
}

bool Args::has(const std::string& name) const { return values_.count(name) > 0; }

std::string Args::str(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  ORDO_USAGE_CHECK(values_.count(name) == 1, "flag --", name, " is given more than once");
  return it->second;
}

std::string Args::required(const std::string& name) const {
  ORDO_USAGE_CHECK(has(name), "missing required flag --", name);
  return str(name, "");
}

int64_t Args::integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  if (!has(name)) return fallback;
  std::string text = str(name, "");
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  ORDO_USAGE_CHECK(!text.empty() && *end == '\0' && errno == 0, "flag --", name,
             " expects an integer, got '", text, "'");
  ORDO_USAGE_CHECK(value >= min && value <= max, "flag --", name, " must be between ", min, " and ",
             max, ", got ", value);
  return value;
}

double Args::number(const std::string& name, double fallback, double min, double max) const {
  if (!has(name)) return fallback;
  std::string text = str(name, "");
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  ORDO_USAGE_CHECK(!text.empty() && *end == '\0' && std::isfinite(value), "flag --", name,
             " expects a number, got '", text, "'");
  ORDO_USAGE_CHECK(value >= min && value <= max, "flag --", name, " must be between ", min, " and ",
             max, ", got ", value);
  return value;
}

std::vector<double> Args::numbers(const std::string& name, double min, double max) const {
  std::vector<double> values;
  if (!has(name)) return values;
  const std::string text = str(name, "");
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    ORDO_USAGE_CHECK(!item.empty() && *end == '\0' && std::isfinite(value), "flag --", name,
               " expects numbers separated by commas, got '", item, "' in '", text, "'");
    ORDO_USAGE_CHECK(value >= min && value <= max, "flag --", name, " takes numbers between ", min, " and ", max, ", got ",
               item);
    ORDO_USAGE_CHECK(std::find(values.begin(), values.end(), value) == values.end(), "flag --", name, " lists ", item,
               " twice");
    values.push_back(value);
    if (comma == std::string::npos) return values;
    start = comma + 1;
  }
}

Device Args::device(const std::string& name, const std::string& fallback) const {
  Device d;
  try {
    d = Device::parse(str(name, fallback));
  } catch (const Error& e) {
    throw UsageError("flag --" + name + ": " + e.what());
  }
  ORDO_USAGE_CHECK(d.is_cpu() || d.index < cuda_device_count(), "flag --", name, " ", d.str(), " is not available (",
             cuda_device_description(0), ")");
  return d;
}

std::vector<std::string> Args::all(const std::string& name) const {
  std::vector<std::string> out;
  auto range = values_.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

}  // namespace ordo::cli
