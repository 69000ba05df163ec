#include "pe/registry.h"

#include "nn/checkpoint.h"
#include "pe/absolute.h"
#include "tensor/safetensors.h"
#include "tensor/config.h"

namespace ordo::pe {

const std::vector<std::string>& variant_names() {
  static const std::vector<std::string> names = {"none", "ape_learned"};
  return names;
}

std::unique_ptr<nn::PositionEncoding> make_position_encoding(const nn::BertConfig& config, Device device) {
  const std::string& name = config.pe;
  // Each variant reads its options from here; finish() rejects any it did not read.
  FieldReader options(config.pe_options, "pe_options of '" + name + "'");
  std::unique_ptr<nn::PositionEncoding> pe;
  if (name == "none") {
    pe = std::make_unique<NoPosition>();
  } else if (name == "ape_learned") {
    pe = std::make_unique<LearnedAbsolute>(config, device);
  } else {
    std::string known;
    for (const auto& n : variant_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown position encoding '" + name + "': known variants are " + known);
  }
  options.finish();
  return pe;
}

std::unique_ptr<nn::PretrainingModel> build_model(const nn::BertConfig& config, Device device, bool nsp,
                                                  uint64_t seed) {
  auto model = std::make_unique<nn::PretrainingModel>(config, make_position_encoding(config, device), device, nsp);
  nn::initialize_bert(*model, seed);
  return model;
}

std::unique_ptr<nn::PretrainingModel> load_model(const std::string& dir, Device device, bool nsp, uint64_t seed) {
  nn::BertConfig config = nn::load_config(dir);
  auto model = build_model(config, device, nsp, seed);
  std::string path = dir + "/model.safetensors";
  std::vector<std::string> fresh;
  if (nsp) fresh = {"bert.pooler.", "cls.seq_relationship."};
  nn::load_weights(*model, safetensors::load(path), path, fresh);
  return model;
}

}  // namespace ordo::pe
