// The `ordo` command: subcommands and their flags.
//
// Each tools/cmd_*.cpp registers its subcommands with a static Register object;
// tools/main.cpp dispatches on argv[1]. Flags are parsed by Args, which turns
// every mistake (unknown flag, missing value, a value of the wrong type or out
// of range) into ordo::Error with the flag's name, so main can print one clear
// line and exit non-zero.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "tensor/dtype.h"

namespace ordo::cli {

// A mistake in the command line itself (an unknown or missing flag, a value
// of the wrong form, a stray argument): the command's usage line follows its
// message. Any other error (a file that cannot be read, a bad config) prints
// only its message: the flags were right.
class UsageError : public Error {
 public:
  using Error::Error;
};

// ORDO_CHECK for the command line: its failure is a UsageError.
#define ORDO_USAGE_CHECK(cond, ...)                                               \
  do {                                                                            \
    if (!(cond)) throw ::ordo::cli::UsageError(::ordo::detail::cat(__VA_ARGS__)); \
  } while (0)

struct Command {
  std::string name;     // "bench", "data synth" (two words: a command and its verb)
  std::string summary;  // one line for `ordo help`
  std::string usage;    // flags, shown by `ordo help NAME` and on a usage error
  std::function<int(const std::vector<std::string>& args)> run;
};

// Adds a command to the registry at static-initialisation time.
struct Register {
  explicit Register(Command command);
};
const std::vector<Command>& commands();

// Flags of the form --name value, --name=value or a bare --switch.
class Args {
 public:
  // Whether a command takes arguments that are not flags (`ordo report RUN...`).
  enum class Positional { refused, taken };
  // `flags` lists the accepted flag names (without "--"); `switches` the ones
  // that take no value. Anything else is an error naming the flag, and so is
  // an argument that is not a flag where the command takes none (a stray word
  // silently ignored would run something other than what was asked).
  Args(const std::vector<std::string>& argv, const std::vector<std::string>& flags,
       const std::vector<std::string>& switches = {}, Positional positional = Positional::refused);

  bool has(const std::string& name) const;
  std::string str(const std::string& name, const std::string& fallback) const;
  std::string required(const std::string& name) const;
  int64_t integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  double number(const std::string& name, double fallback, double min, double max) const;
  // A comma-separated list of numbers (--lr 1e-4,3e-5), each finite and in
  // [min, max], none twice; empty when the flag is absent.
  std::vector<double> numbers(const std::string& name, double min, double max) const;
  // A device flag (cpu, cuda, cuda:N): parsed, and one this machine has; the
  // errors name the flag.
  Device device(const std::string& name, const std::string& fallback) const;
  // Every value given for a repeatable flag (e.g. --set a=1 --set b=2), in order.
  std::vector<std::string> all(const std::string& name) const;
  // Arguments that are not flags (Positional::taken).
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::multimap<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace ordo::cli
