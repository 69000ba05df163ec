#include "tools/bench_model.h"

#include <vector>

#include "base/file_io.h"
#include "tensor/ops.h"

namespace ordo::bench {

std::string resolve_config(const std::string& name) {
  if (file_exists(name)) return name;
  std::string path = std::string(ORDO_CONFIG_DIR) + "/" + name + ".json";
  ORDO_CHECK(file_exists(path), "no config '", name, "': neither a file nor ", path);
  return path;
}

nn::BertInputs random_batch(int64_t batch, int64_t length, int64_t vocab, Device device, Tensor& labels) {
  Tensor u = Tensor::empty({batch, length}, DType::f64);
  uniform_(u, 5, static_cast<double>(vocab), 7, 0);  // ids above the specials
  std::vector<double> draws = u.to_doubles();
  std::vector<int64_t> ids(draws.size()), targets(draws.size(), -100);
  for (size_t i = 0; i < draws.size(); ++i) {
    ids[i] = static_cast<int64_t>(draws[i]);
    if (i % 7 == 3) targets[i] = ids[i];
  }
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(ids, {batch, length}, device);
  in.attention_mask = Tensor::ones({batch, length}, DType::i64, device);
  labels = Tensor::from_vector(targets, {batch, length}, device);
  return in;
}

}  // namespace ordo::bench
