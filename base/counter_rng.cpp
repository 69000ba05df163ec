#include "base/counter_rng.h"

namespace ordo {

std::vector<int64_t> shuffled_order(int64_t n, CounterRng rng) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  shuffle(order, rng);
  return order;
}

}  // namespace ordo
