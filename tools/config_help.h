// `ordo help config`: every key a run config accepts — its type, default and
// range — and every PE variant's options, listed by running the validators
// themselves under a ConfigKeyLog (base/config.h), so the listing cannot drift
// from what is accepted.
#pragma once

#include <string>

namespace ordo::tools {

std::string config_help();           // the run config's (ordo pretrain)
std::string finetune_config_help();  // the fine-tuning config's (ordo finetune)

}  // namespace ordo::tools
