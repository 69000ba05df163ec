// ordo — the command-line entry point. Subcommands live in tools/cmd_*.cpp.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/json.h"
#include "nn/bert.h"
#include "pe/registry.h"
#include "tensor/cpu/blas_core.h"
#include "tensor/cpu/cpu_paths.h"
#include "tensor/cpu/gemm_amx.h"
#include "tensor/cpu/gemm_own.h"
#include "tensor/device_runtime.h"
#include "tools/cli.h"
#include "tools/config_help.h"

namespace {

void print_help() {
  std::printf("ordo — a from-scratch framework for studying position encodings in transformers\n\n"
              "usage: ordo COMMAND [flags]\n\ncommands:\n");
  for (const auto& c : ordo::cli::commands()) std::printf("  %-18s %s\n", c.name.c_str(), c.summary.c_str());
  std::printf("\n`ordo help COMMAND` shows a command's flags; `ordo help config` every run-config key and PE option.\n");
  std::printf("\nenvironment (CPU runs; docs/determinism.md):\n"
              "  ORDO_DETERMINISTIC=1   the same bits on every x86-64 CPU with AVX2 and FMA, at any thread count:\n"
              "                         every product on ordo's own kernel (one FMA chain over k in order),\n"
              "                         no OpenBLAS, no AMX tiles, GELU by the portable code (slower)\n"
              "  ORDO_CPU=avx2          run ordo's own kernels' AVX2 code on an AVX-512 machine (and no AMX);\n"
              "                         with OPENBLAS_CORETYPE=Haswell, what an AVX2-only CPU computes\n"
              "  ORDO_AMX=off           bf16 products widened to FP32 instead of on AMX tiles\n"
              "  OMP_NUM_THREADS=N      threads (train.threads in a run config)\n");
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

// Which variants the fused attention runs on a GPU, what their attention
// holds per layer at BERT-base, 8 x 512, beyond Q, K, V and the output, and
// the modeled time of its two kernels (nn::attention_memory: from the
// shapes of one call, not measured).
void print_fused_attention() {
  ordo::nn::BertConfig c;  // BERT-base: 12 heads of 64
  c.num_hidden_layers = 1;
  constexpr int64_t kBatch = 8, kLength = 512;
  auto mib = [](double bytes) { return bytes / (1024.0 * 1024.0); };
  std::printf("\nattention on a GPU, per variant, BERT-base (12 heads of 64), batch %lld x %lld, training, per layer:\n"
              "MiB kept for the backward + transient beyond Q, K, V and the output (%.0f MiB), and the fused\n"
              "kernels' roofline time on an H100 (FP32 CUDA cores; 'tiles us': under bf16 products, on\n"
              "tensor-core tiles where the variant runs on them) -- modeled from shapes, not measured:\n",
              static_cast<long long>(kBatch), static_cast<long long>(kLength),
              mib(4.0 * kBatch * kLength * static_cast<double>(c.hidden_size) * 4));
  std::printf("  %-28s %14s %14s %7s %9s %8s %14s  %s\n", "variant", "unfused MiB", "fused MiB", "QKVO+f", "fused us",
              "vs none", "tiles us", "attention");
  std::vector<std::pair<std::string, std::string>> variants;
  for (const std::string& name : ordo::pe::variant_names()) variants.push_back({name, "{}"});
  variants.push_back({"rpe_shaw", R"({"value": true})"});
  variants.push_back({"alibi", R"({"learned": true})"});
  variants.push_back({"attenuated", R"({"learned": true})"});
  double none_seconds = 0, none_tiles = 0;
  std::string auto_reason;  // why the fused kernels do not run by default, where a variant could
  for (const auto& [name, options] : variants) {
    c.pe = name;
    c.pe_options = ordo::json::parse(options);
    auto pe = ordo::pe::make_position_encoding(c, ordo::Device::cpu());
    const ordo::nn::AttentionMemory m = ordo::nn::attention_memory(*pe, c, kBatch, kLength, /*training=*/true);
    if (name == "none") none_seconds = m.fused_seconds, none_tiles = m.tiles_seconds;
    const std::string label = options == "{}" ? name : name + " " + options;
    char unfused[40], fused[40] = "-", ratio[16] = "-", time[16] = "-", relative[16] = "-", tiles[32] = "-";
    std::snprintf(unfused, sizeof unfused, "%.0f + %.0f", mib(m.unfused_kept), mib(m.unfused_transient));
    const bool fusable = m.fused_seconds > 0;
    if (fusable) {
      std::snprintf(fused, sizeof fused, "%.1f + %.1f", mib(m.fused_kept), mib(m.fused_transient));
      std::snprintf(ratio, sizeof ratio, "%.2fx", (m.qkvo + m.fused_kept + m.fused_transient) / m.qkvo);
      std::snprintf(time, sizeof time, "%.0f", m.fused_seconds * 1e6);
      std::snprintf(relative, sizeof relative, "%.2fx", m.fused_seconds / none_seconds);
    }
    if (m.tiles_seconds > 0)
      std::snprintf(tiles, sizeof tiles, "%.0f (%.2fx)", m.tiles_seconds * 1e6, m.tiles_seconds / none_tiles);
    const bool automatic = fusable && ordo::nn::fused_attention() == ordo::nn::FusedAttention::automatic;
    if (automatic) auto_reason = m.unfused_reason;
    const std::string runs = m.unfused_reason.empty() ? "fused"
                             : automatic              ? "unfused (auto, below)"
                                                      : "unfused: " + m.unfused_reason;
    std::printf("  %-28s %14s %14s %7s %9s %8s %14s  %s\n", label.c_str(), unfused, fused, ratio, time, relative,
                tiles, runs.c_str());
  }
  if (!auto_reason.empty()) std::printf("  auto: %s\n", auto_reason.c_str());
}

int info(const std::vector<std::string>&) {
  std::printf("ordo %s\nbuild: %s\n", "0.1", ORDO_BUILD_INFO);
  std::printf("blas: %s\n", ordo::cpu::blas_description().c_str());
  const std::string bf16_products = ordo::cpu::amx_enabled() ? std::string("AMX-BF16 tiles")
                                                              : "widened to FP32 (" + ordo::cpu::amx_description() + ")";
  std::printf("bf16 products on the CPU: %s\n", bf16_products.c_str());
  std::printf("ordo's own CPU kernels: %s\n", ordo::cpu::vector_path_description().c_str());
  std::printf("deterministic mode: %s\n", ordo::cpu::deterministic_description().c_str());
  int n = ordo::cuda_device_count();
  // Without a GPU the CUDA runtime's reason is a driver message ("CUDA driver
  // version is insufficient") that reads as a fault; say what it means.
  if (n == 0) std::printf("cuda: no GPU%s\n", ordo::cuda_compiled() ? "" : " (this build has no CUDA backend)");
  for (int i = 0; i < n; ++i) std::printf("cuda:%d: %s\n", i, ordo::cuda_device_description(i).c_str());
  print_fused_attention();
  return 0;
}

ordo::cli::Register info_command({"info", "what this build has and which devices it sees", "", info});

}  // namespace

int main(int argc, char** argv) {
  ordo::cpu::restart_with_blas_core(argv);  // before anything else: OpenBLAS's kernels (tensor/cpu/blas_core.h)
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
    ordo::cpu::vector_path();  // ORDO_CPU and ORDO_DETERMINISTIC checked before anything is written
    ordo::cpu::deterministic();
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
