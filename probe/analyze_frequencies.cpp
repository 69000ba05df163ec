// `ordo analyze`: the learned frequencies of a learnable sinusoid against
// the fixed ones, and the psi(m) they imply (Wang et al. 2021, section 3.1,
// App. A.3).
#include <algorithm>
#include <cmath>

#include "probe/analyze_parts.h"

namespace ordo::probe {

using namespace analyses;

namespace {

// Wang et al. 2021, section 3.1: psi(m) = sum_i cos(w_i m).
std::vector<double> psi(const std::vector<double>& w, int64_t span) {
  std::vector<double> p;
  for (int64_t m = 0; m <= span; ++m) {
    double s = 0;
    for (double x : w) s += std::cos(x * static_cast<double>(m));
    p.push_back(s);
  }
  return p;
}

}  // namespace

void analyses::learned_frequencies(RunState& c, Output& out) {
  const std::string title = "Learned frequencies of learnable sinusoids against the fixed ones";
  const nn::BertConfig& m = c.model->bert.config();
  nn::PositionEncoding::LearnedFrequencies f = c.model->bert.position_encoding().learned_frequencies(0);
  if (!f.fixed.defined()) return out.skip(title, "variant " + m.pe + " has no learnable sinusoid");
  const std::vector<double> fixed = f.fixed.to_doubles(), learned = f.learned.to_doubles();
  const std::string& which = f.source;
  std::vector<std::vector<double>> rows;
  std::vector<double> idx;
  for (size_t i = 0; i < fixed.size(); ++i) {
    rows.push_back({static_cast<double>(i), fixed[i], learned[i], learned[i] / fixed[i]});
    idx.push_back(static_cast<double>(i));
  }
  out.file("frequencies.csv", table_csv({"i", "fixed", "learned", "ratio"}, rows));
  plot::svg::ChartStyle fs = chart("frequencies w_i", "index i", "|w_i| (radians per position)");
  fs.log_y = true;
  std::vector<double> abs_learned;
  for (double x : learned) abs_learned.push_back(std::max(std::fabs(x), 1e-12));
  plot::svg::Figure left =
      plot::svg::line_chart({{"fixed 10000^(-2i/D)", idx, fixed, 0}, {"learned", idx, abs_learned, 1}}, fs);
  const int64_t span = std::max<int64_t>(c.trained, 2);
  std::vector<double> ms;
  for (int64_t k = 0; k <= span; ++k) ms.push_back(static_cast<double>(k));
  plot::svg::ChartStyle ps = chart("psi(m) = sum_i cos(w_i m)", "offset m (positions)", "psi(m)");
  plot::svg::Figure right =
      plot::svg::line_chart({{"fixed", ms, psi(fixed, span), 0}, {"learned", ms, psi(learned, span), 1}}, ps);
  out.svg("frequencies.svg", plot::svg::grid({left, right}, 2, m.pe + ": learned frequencies (" + c.label + ")"));
  out.analysis(title, "frequencies.svg", "csv", "frequencies.csv",
               "Frequencies of " + which + " after training against their initial values 10000^(-2i/D) (Wang et al. "
               "2021, section 3.1, App. A.3), and the dot product of two positions m apart they imply, psi(m) = "
               "sum_i cos(w_i m): where it decreases, the encoding is monotone in the distance.");
}

}  // namespace ordo::probe
