// ordo — the command-line entry point. Subcommands live in tools/cmd_*.cpp.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "base/error.h"
#include "tensor/device_runtime.h"
#include "tools/cli.h"
#include "tools/config_help.h"

namespace {

void print_help() {
  std::printf("ordo — a from-scratch framework for studying position encodings in transformers\n\n"
              "usage: ordo COMMAND [flags]\n\ncommands:\n");
  for (const auto& c : ordo::cli::commands()) std::printf("  %-18s %s\n", c.name.c_str(), c.summary.c_str());
  std::printf("\n`ordo help COMMAND` shows a command's flags; `ordo help config` every run-config key and PE option.\n");
}

const ordo::cli::Command* find(const std::vector<std::string>& words, size_t& used) {
  // Two-word commands ("data synth") win over one-word ones.
  for (size_t n : {size_t(2), size_t(1)}) {
    if (words.size() < n) continue;
    std::string name = words[0];
    for (size_t i = 1; i < n; ++i) name += " " + words[i];
    for (const auto& c : ordo::cli::commands()) {
      if (c.name == name) {
        used = n;
        return &c;
      }
    }
  }
  return nullptr;
}

// A command's help: its summary and its flags (pretrain's and finetune's: and their configs' keys).
void print_command_help(const ordo::cli::Command& c) {
  std::printf("ordo %s — %s\nusage: ordo %s %s\n", c.name.c_str(), c.summary.c_str(), c.name.c_str(), c.usage.c_str());
  if (c.name == "pretrain") std::printf("\n%s", ordo::tools::config_help().c_str());
  if (c.name == "finetune") std::printf("\n%s", ordo::tools::finetune_config_help().c_str());
}

// `ordo CMD ... --help` (or -h) anywhere among the command's arguments.
bool asks_for_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
}

int info(const std::vector<std::string>&) {
  std::printf("ordo %s\nbuild: %s\n", "0.1", ORDO_BUILD_INFO);
  int n = ordo::cuda_device_count();
  // Without a GPU the CUDA runtime's reason is a driver message ("CUDA driver
  // version is insufficient") that reads as a fault; say what it means.
  if (n == 0) std::printf("cuda: no GPU%s\n", ordo::cuda_compiled() ? "" : " (this build has no CUDA backend)");
  for (int i = 0; i < n; ++i) std::printf("cuda:%d: %s\n", i, ordo::cuda_device_description(i).c_str());
  return 0;
}

ordo::cli::Register info_command({"info", "what this build has and which devices it sees", "", info});

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty() || words[0] == "help" || words[0] == "--help" || words[0] == "-h") {
    if (words.size() == 2 && words[1] == "config") {
      std::fputs(ordo::tools::config_help().c_str(), stdout);
      std::printf("\n%s", ordo::tools::finetune_config_help().c_str());
      return 0;
    }
    if (words.size() >= 2) {
      size_t used = 0;
      std::vector<std::string> rest(words.begin() + 1, words.end());
      if (const auto* c = find(rest, used)) {
        print_command_help(*c);
        return 0;
      }
      std::fprintf(stderr, "ordo help: unknown command '%s' (see `ordo help`)\n", words[1].c_str());
      return 2;
    }
    print_help();
    return words.empty() ? 2 : 0;
  }
  size_t used = 0;
  const ordo::cli::Command* command = find(words, used);
  if (!command) {
    std::fprintf(stderr, "ordo: unknown command '%s' (see `ordo help`)\n", words[0].c_str());
    return 2;
  }
  const std::vector<std::string> args(words.begin() + used, words.end());
  if (asks_for_help(args)) {
    print_command_help(*command);
    return 0;
  }
  try {
    return command->run(args);
  } catch (const ordo::cli::UsageError& e) {
    std::fprintf(stderr, "ordo %s: error: %s\n", command->name.c_str(), e.what());
    // The usage's first line: the flags at a glance; `ordo help CMD` has the rest.
    if (!command->usage.empty()) {
      const size_t end = command->usage.find('\n');
      const std::string more = end == std::string::npos ? "" : "   (more: ordo help " + command->name + ")";
      std::fprintf(stderr, "usage: ordo %s %s%s\n", command->name.c_str(), command->usage.substr(0, end).c_str(),
                   more.c_str());
    }
    return 1;
  } catch (const std::exception& e) {  // ordo::Error among them: the message says it all
    std::fprintf(stderr, "ordo %s: error: %s\n", command->name.c_str(), e.what());
    return 1;
  }
}
