#include "tensor/gpu_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <regex>
#include <sstream>

#include "base/error.h"

namespace ordo {

namespace {

// The classes of ordo's backend kernels (tensor/kernels.inc). The products
// and the attention are classed by the call's precision and tiles flag.
const std::map<std::string, std::string>& backend_classes() {
  static const std::map<std::string, std::string> table = {
      {"copy", "copies"}, {"pad_slice", "copies"}, {"index_select", "copies"}, {"gather", "copies"},
      {"select_rows", "copies"}, {"scatter_rows", "copies"}, {"split_heads", "copies"},
      {"split_heads_backward", "copies"}, {"relative_gather", "copies"},
      {"fill", "elementwise"}, {"unary", "elementwise"}, {"unary_backward", "elementwise"},
      {"affine_to", "elementwise"}, {"binary", "elementwise"}, {"where", "elementwise"},
      {"dropout", "elementwise"}, {"random", "elementwise"}, {"rotary", "elementwise"},
      // Row kernels, with the column sums their backward makes (the bias,
      // gamma and beta gradients: column_sums.cuh, launched by these calls).
      {"softmax", "rows"}, {"softmax_backward", "rows"}, {"layernorm", "rows"}, {"layernorm_backward", "rows"},
      {"residual_layernorm", "rows"}, {"residual_layernorm_backward", "rows"}, {"bias_activation", "rows"},
      {"bias_activation_backward", "rows"}, {"bias_activation_layernorm", "rows"},
      {"bias_activation_layernorm_backward", "rows"}, {"operand_column_sums", "rows"},
      {"cross_entropy", "rows"}, {"cross_entropy_backward", "rows"}, {"embedding_sum", "rows"},
      {"embedding_layernorm", "rows"},
      {"reduce", "reductions"}, {"argmax", "reductions"}, {"sum_squares", "reductions"},
      {"adamw", "optimizer"}, {"adamw_multi", "optimizer"}, {"global_norm_and_clip", "optimizer"},
      // A sort of the indices, then runs of equal ones added (indexing.cu).
      {"index_add", "scatter_adds"}, {"embedding_sum_backward", "scatter_adds"}, {"scatter_add", "scatter_adds"},
      {"relative_scatter", "scatter_adds"}, {"embedding_layernorm_backward", "scatter_adds"},
      {"relative_product", "relative"}, {"relative_product_backward", "relative"}, {"band_scores", "relative"},
      {"band_apply", "relative"}, {"band_table_grad", "relative"},
  };
  return table;
}

// A CUDA kernel's name as KernelTiming gives it, to its class: the backend
// calls that launch it. Keyed by the name before its template arguments.
const std::map<std::string, std::string>& cuda_classes() {
  static const std::map<std::string, std::string> table = {
      {"cublas gemm (bf16)", "products_bf16"}, {"cublas gemm (fp32)", "products_fp32"},
      {"cublas gemm (tf32)", "products_tf32"},
      {"copy_kernel", "copies"}, {"copy_rows_kernel", "copies"}, {"index_select_kernel", "copies"},
      {"gather_kernel", "copies"}, {"scatter_kernel", "copies"}, {"pad_slice_kernel", "copies"},
      {"select_rows_kernel", "copies"}, {"scatter_rows_kernel", "copies"}, {"split_heads_kernel", "copies"},
      {"densify_kernel", "copies"},
      {"map_contiguous_kernel", "elementwise"}, {"map_strided_kernel", "elementwise"},
      {"dropout_kernel", "elementwise"}, {"fill_kernel", "elementwise"}, {"random_kernel", "elementwise"},
      {"affine_to_kernel", "elementwise"}, {"rotary_kernel", "elementwise"}, {"scale_kernel", "elementwise"},
      {"softmax_kernel", "rows"}, {"softmax_backward_kernel", "rows"}, {"softmax_warp_kernel", "rows"},
      {"softmax_backward_warp_kernel", "rows"}, {"softmax_block_kernel", "rows"},
      {"softmax_backward_block_kernel", "rows"}, {"layernorm_kernel", "rows"}, {"layernorm_backward_kernel", "rows"},
      {"layernorm_param_partials_kernel", "rows"}, {"layernorm_param_finish_kernel", "rows"},
      {"residual_layernorm_kernel", "rows"}, {"residual_layernorm_backward_kernel", "rows"},
      {"residual_layernorm_warp_kernel", "rows"}, {"residual_layernorm_backward_warp_kernel", "rows"},
      {"bias_activation_kernel", "rows"}, {"bias_activation_layernorm_kernel", "rows"},
      {"bias_activation_layernorm_backward_kernel", "rows"}, {"column_partials_kernel", "rows"},
      {"column_finish_kernel", "rows"}, {"column_sums_kernel", "rows"}, {"rows_and_column_sums_kernel", "rows"},
      {"write_row_sums_kernel", "rows"}, {"cross_entropy_kernel", "rows"}, {"cross_entropy_backward_kernel", "rows"},
      {"embedding_sum_kernel", "rows"}, {"embedding_layernorm_kernel", "rows"},
      {"reduce_rows_kernel", "reductions"}, {"reduce_columns_kernel", "reductions"},
      {"reduce_finish_kernel", "reductions"},
      {"adamw_kernel", "optimizer"}, {"adamw_multi_kernel", "optimizer"}, {"chunk_sum_squares_kernel", "optimizer"},
      {"global_norm_kernel", "optimizer"},
      {"add_row_runs_kernel", "scatter_adds"}, {"cub radix sort (index)", "scatter_adds"},
      {"row_keys_kernel", "scatter_adds"}, {"element_keys_kernel", "scatter_adds"},
      {"add_element_runs_kernel", "scatter_adds"}, {"add_batch_pieces_kernel", "scatter_adds"},
      {"sum_row_pieces_kernel", "scatter_adds"},
      {"attention_forward_kernel", "attention_cuda_cores"}, {"attention_backward_kernel", "attention_cuda_cores"},
      {"attention_table_grads_kernel", "attention_cuda_cores"},
  };
  return table;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A non-negative decimal number, the whole token; false otherwise.
bool number(const std::string& token, double& value) {
  if (token.empty() || !(std::isdigit(static_cast<unsigned char>(token[0])) || token[0] == '.')) return false;
  size_t used = 0;
  try {
    value = std::stod(token, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == token.size() && std::isfinite(value);
}

std::string where(const std::string& source, size_t line) { return source + ":" + std::to_string(line + 1); }

// "base 32 x 128": a step table row's first four tokens.
bool step_label(const std::vector<std::string>& t, std::string& label) {
  double b = 0, l = 0;
  if (t.size() < 4 || t[2] != "x" || !number(t[1], b) || !number(t[3], l)) return false;
  label = t[0] + " " + t[1] + " x " + t[3];
  return true;
}

// One kernel table row: NAME... calls ms us-a-call share%.
bool kernel_row(const std::string& line, std::string& name, double& calls, double& ms) {
  const std::vector<std::string> t = tokens(line);
  double us = 0;
  if (t.size() < 5 || t.back().empty() || t.back().back() != '%') return false;
  const size_t n = t.size();
  if (!number(t[n - 4], calls) || !number(t[n - 3], ms) || !(t[n - 2] == "-" || number(t[n - 2], us))) return false;
  name.clear();
  for (size_t i = 0; i + 4 < n; ++i) name += (i ? " " : "") + t[i];
  return true;
}

bool ends_with_word(const std::string& label, const std::string& word) {
  return label.size() > word.size() && label.compare(label.size() - word.size(), word.size(), word) == 0 &&
         label[label.size() - word.size() - 1] == ' ';
}

}  // namespace

std::string kernel_class(const KernelCall& call) {
  const std::string name = call.kernel;
  if (name == "gemm") {
    switch (call.precision) {
      case MatmulPrecision::bf16: return "products_bf16";
      case MatmulPrecision::tf32: return "products_tf32";
      case MatmulPrecision::fp32: break;
    }
    return "products_fp32";
  }
  if (name == "attention_forward" || name == "attention_backward") {
    // Its tiles flag: the third integer after the first (kernel_calls.cpp's order, roofline.cpp reads it).
    const size_t first = name == "attention_forward" ? 0 : 1;
    const bool tiles = call.integers.size() > first + 2 && call.integers[first + 2] != 0;
    return tiles ? "attention_tiles" : "attention_cuda_cores";
  }
  auto it = backend_classes().find(name);
  return it == backend_classes().end() ? "other" : it->second;
}

std::string measured_kernel_class(const std::string& cuda_kernel) {
  std::string key = cuda_kernel;
  if (key.rfind("cublas", 0) != 0 && key.rfind("cub ", 0) != 0) key = key.substr(0, key.find('<'));
  auto it = cuda_classes().find(key);
  ORDO_CHECK(it != cuda_classes().end(), "gpu calibration: no kernel class for the CUDA kernel '", cuda_kernel,
             "' (tensor/gpu_calibration.cpp's cuda_classes: add it beside the backend kernel that launches it)");
  return it->second;
}

std::string nearest_measured_class(const std::string& kernel_class) {
  // The tiles are bf16 tensor-core products with FP32 softmax between them;
  // TF32 products are tensor-core products too; the relative products and
  // band kernels stream [B, H, L, *] rows as the row kernels do. The scatter
  // adds as they are since the lease (runs added in pieces of 256, no thread
  // summing a whole token type alone) stream the gradient tables with a
  // binary search an element: the streaming class with the worst ratio.
  static const std::map<std::string, std::string> nearest = {
      {"attention_tiles", "products_bf16"}, {"products_tf32", "products_bf16"}, {"relative", "rows"},
      {"attention_cuda_cores", "rows"}, {"other", "elementwise"}, {"scatter_adds", "elementwise"}};
  auto it = nearest.find(kernel_class);
  return it == nearest.end() ? kernel_class : it->second;
}

ClassTimes modeled_by_class(const std::vector<KernelCall>& calls, const RooflineMachine& machine) {
  ClassTimes t;
  for (const KernelCall& call : calls) {
    const std::string c = kernel_class(call);
    t.seconds[c] += std::max(call.bytes / machine.bytes_per_second, kernel_compute_seconds(call, machine));
    t.calls[c] += 1;
    t.launches += static_cast<double>(std::max<int64_t>(1, kernel_launches(call)));
  }
  return t;
}

std::vector<MeasuredStep> parse_measured_log(const std::string& text, const std::string& source) {
  const std::vector<std::string> lines = lines_of(text);
  std::vector<MeasuredStep> steps;
  // By run (the count of "ordo bench step:" banners so far: a log may hold
  // several runs, of the same steps under other settings) and label.
  using Key = std::pair<int, std::string>;
  std::map<Key, double> graph, eager;
  std::vector<int> run_of;  // of each step
  int run = 0;
  static const std::regex header_re(R"(^(.*), one eager step kernel by kernel \(MEASURED(.*))");
  static const std::regex figures_re(
      R"(([0-9.]+) launches, their spans' sum ([0-9.]+) ms, the timed step's wall time ([0-9.]+) ms)");
  enum class Table { none, steps, parts } table = Table::none;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trim(lines[i]);
    const std::vector<std::string> t = tokens(line);
    std::smatch m;
    if (line.empty() || line.rfind("ordo bench step:", 0) == 0) {  // a table's end, or the next run's banner
      table = Table::none;
      if (!line.empty()) ++run;
    } else if (line.rfind("config", 0) == 0 && line.find("step ms") != std::string::npos) {
      table = Table::steps;
    } else if (line.rfind("config", 0) == 0 && line.find("eager (no graph)") != std::string::npos) {
      table = Table::parts;
    } else if (table != Table::none) {
      std::string label;
      double before = 0, after = 0, eager_ms = 0;
      // steps: ... before -> after (ms); parts: after eager ...
      if (table == Table::steps && step_label(t, label) && t.size() >= 7 && t[t.size() - 2] == "->" &&
          number(t[t.size() - 3], before) && number(t.back(), after)) {
        eager[{run, label + " before"}] = before / 1e3;
        graph[{run, label + " after"}] = after / 1e3;
      } else if (table == Table::parts && step_label(t, label) && t.size() >= 6 && number(t[5], eager_ms)) {
        eager[{run, label + " after"}] = eager_ms / 1e3;
      } else if (!(table == Table::steps && t.size() >= 4 && t.back() == "-")) {  // the emulator's rows have no ms
        throw Error(where(source, i) + ": a step table row that does not parse: '" + line + "'");
      }
    } else if (std::regex_search(line, m, header_re)) {
      ORDO_CHECK(m[2].str().rfind(" on the emulated GPU", 0) != 0, where(source, i),
                 ": the kernel times of '", m[1].str(), "' were measured on the emulated GPU (the CPU's time): "
                 "a calibration takes a real GPU's");
      MeasuredStep s;
      s.label = m[1].str();
      s.source = where(source, i);
      // The header runs on until the table's column names.
      std::string header = line;
      size_t j = i + 1;
      for (; j < lines.size() && trim(lines[j]).rfind("kernel ", 0) != 0; ++j) header += " " + trim(lines[j]);
      ORDO_CHECK(j < lines.size(), s.source, ": the kernel table of '", s.label, "' has no column names");
      std::smatch f;
      ORDO_CHECK(std::regex_search(header, f, figures_re), s.source, ": the header of '", s.label,
                 "' does not give its launches, spans' sum and wall time");
      s.launches = std::stod(f[1].str());
      s.spans_seconds = std::stod(f[2].str()) / 1e3;
      auto table_end = [&](size_t k) {  // a blank line, or the next run's banner
        const std::string l = trim(lines[k]);
        return l.empty() || l.rfind("ordo bench step:", 0) == 0;
      };
      for (i = j + 1; i < lines.size() && !table_end(i); ++i) {
        std::string name;
        double calls = 0, ms = 0;
        ORDO_CHECK(kernel_row(lines[i], name, calls, ms), where(source, i),
                   ": a kernel table row that does not parse (NAME calls ms 'us a call' share%): '", trim(lines[i]),
                   "'");
        if (name == "(the rest)") {  // the table's last row (a log's next run may follow without a blank)
          s.unlisted_seconds += ms / 1e3, s.unlisted_calls += calls;
          break;
        } else {
          std::string c;
          try {
            c = measured_kernel_class(name);
          } catch (const Error& e) {
            throw Error(where(source, i) + ": " + e.what());
          }
          s.kernels.seconds[c] += ms / 1e3;
          s.kernels.calls[c] += calls;
        }
      }
      if (i < lines.size() && table_end(i)) --i;  // the outer loop reads the banner (a new run)
      ORDO_CHECK(!s.kernels.seconds.empty(), s.source, ": the kernel table of '", s.label, "' has no rows");
      steps.push_back(s);
      run_of.push_back(run);
    }
  }
  // The steps timed whole without a kernel table (tiny's): checked, not fitted.
  for (const std::map<Key, double>* times : {&graph, &eager})
    for (const auto& [key, seconds] : *times) {
      bool known = false;
      for (size_t k = 0; k < steps.size(); ++k) known = known || (run_of[k] == key.first && steps[k].label == key.second);
      if (known) continue;
      MeasuredStep s;
      s.label = key.second;
      s.source = source;
      steps.push_back(s);
      run_of.push_back(key.first);
    }
  ORDO_CHECK(!steps.empty(), source, ": no step timed ('per step' table with step ms) and no kernel table ('<step>, "
             "one eager step kernel by kernel (MEASURED...'): a calibration takes `ordo bench step` logs of a GPU");
  for (size_t k = 0; k < steps.size(); ++k) {  // a step's times: its own run's
    const Key key{run_of[k], steps[k].label};
    if (graph.count(key)) steps[k].graph_seconds = graph[key];
    if (eager.count(key)) steps[k].eager_seconds = eager[key];
  }
  return steps;
}

std::map<std::string, ClassTimes> parse_modeled_log(const std::string& text, const std::string& source) {
  const std::vector<std::string> lines = lines_of(text);
  std::map<std::string, ClassTimes> steps;
  static const std::regex header_re(R"(^(.*): MODELED by kernel class, ([0-9.]+) launches)");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    const std::string line = trim(lines[i]);
    if (!std::regex_search(line, m, header_re)) continue;
    ClassTimes& c = steps[m[1].str()];
    c = ClassTimes{};
    c.launches = std::stod(m[2].str());
    const std::vector<std::string> columns = i + 1 < lines.size() ? tokens(lines[i + 1]) : std::vector<std::string>();
    ORDO_CHECK(columns.size() >= 4 && columns[0] == "class" && columns[1] == "calls" && columns[2] == "modeled" &&
                   columns[3] == "us",
               where(source, i + 1), ": the class table of '", m[1].str(),
               "' wants its first columns 'class calls modeled us'");
    for (i += 2; i < lines.size() && !trim(lines[i]).empty(); ++i) {
      const std::vector<std::string> t = tokens(lines[i]);  // then the PREDICTED columns, if any
      double calls = 0, us = 0;
      ORDO_CHECK(t.size() >= 3 && number(t[1], calls) && number(t[2], us), where(source, i),
                 ": a class table row that does not parse (class calls 'modeled us'): '", trim(lines[i]), "'");
      c.seconds[t[0]] += us / 1e6;
      c.calls[t[0]] += calls;
    }
  }
  ORDO_CHECK(!steps.empty(), source, ": no class table ('<step>: MODELED by kernel class, N launches'): "
             "`ordo bench step --classes` prints them");
  return steps;
}

Calibration fit_calibration(const std::vector<MeasuredStep>& measured,
                            const std::map<std::string, ClassTimes>& modeled, const std::string& device,
                            const std::vector<std::string>& sources,
                            const std::map<std::string, std::string>& fit_on) {
  Calibration c;
  c.device = device;
  c.sources = sources;
  c.fit_on = fit_on;
  std::vector<const MeasuredStep*> paired;
  for (const MeasuredStep& s : measured) {
    if (s.kernels.seconds.empty()) continue;  // timed whole: nothing to fit a class on
    ORDO_CHECK(modeled.count(s.label), s.source, ": the measured step '", s.label,
               "' has no modeled class table of the same label");
    paired.push_back(&s);
  }
  ORDO_CHECK(!paired.empty(), "gpu calibration: no measured step with a kernel table (--kernel-times) to fit");
  // The events' own cost a launch: the spans of an eager step against the same
  // step graphed, whose kernels run back to back without events.
  double event_excess = 0, event_launches = 0;
  for (const MeasuredStep* s : paired)
    if (s->graph_seconds >= 0) event_excess += s->spans_seconds - s->graph_seconds, event_launches += s->launches;
  c.event_seconds_per_launch = event_launches > 0 ? std::max(0.0, event_excess / event_launches) : 0;
  const double e = c.event_seconds_per_launch;
  double listed = 0, unlisted = 0, gap = 0, gap_launches = 0;
  for (const MeasuredStep* s : paired) {
    const ClassTimes& model = modeled.at(s->label);
    for (const auto& [name, seconds] : s->kernels.seconds) {
      const double device_seconds = std::max(0.0, seconds - s->kernels.calls.at(name) * e);
      listed += device_seconds;
      auto rule = fit_on.find(name);
      if (rule != fit_on.end() && !ends_with_word(s->label, rule->second)) continue;
      auto m = model.seconds.find(name);
      ORDO_CHECK(m != model.seconds.end() && m->second > 0, s->source, ": the class '", name, "' of '", s->label,
                 "' was measured but has no modeled time to divide by");
      ClassRatio& r = c.classes[name];
      r.measured_seconds += device_seconds;
      r.modeled_seconds += m->second;
    }
    unlisted += std::max(0.0, s->unlisted_seconds - s->unlisted_calls * e);
    if (s->eager_seconds >= 0) {
      gap += s->eager_seconds - (s->spans_seconds - s->launches * e);
      gap_launches += s->launches;
    }
  }
  for (auto& [name, r] : c.classes) r.ratio = r.measured_seconds / r.modeled_seconds;
  c.unlisted_fraction = listed > 0 ? unlisted / listed : 0;
  c.eager_gap_seconds_per_launch = gap_launches > 0 ? std::max(0.0, gap / gap_launches) : 0;
  return c;
}

std::string format_calibration(const Calibration& c) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out << "# ordo GPU calibration: per kernel class, the measured device time over the roofline's modeled\n"
         "# time (tensor/gpu_calibration.h), fitted by `ordo bench calibrate` on the logs named below.\n"
         "# class NAME RATIO MEASURED_MS MODELED_MS (summed over the steps fitted)\n";
  out << "device " << c.device << "\n";
  for (const std::string& s : c.sources) out << "source " << s << "\n";
  for (const auto& [name, word] : c.fit_on) out << "fit_on " << name << " " << word << "\n";
  for (const auto& [name, why] : c.changed) out << "changed " << name << " " << why << "\n";
  out.precision(3);
  out << "event_us_per_launch " << 1e6 * c.event_seconds_per_launch << "\n";
  out << "eager_gap_us_per_launch " << 1e6 * c.eager_gap_seconds_per_launch << "\n";
  out.precision(4);
  out << "unlisted_fraction " << c.unlisted_fraction << "\n";
  for (const auto& [name, r] : c.classes) {
    out.precision(3);
    out << "class " << name << " " << r.ratio << " " << 1e3 * r.measured_seconds << " " << 1e3 * r.modeled_seconds
        << "\n";
  }
  return out.str();
}

Calibration parse_calibration(const std::string& text, const std::string& source) {
  Calibration c;
  const std::vector<std::string> lines = lines_of(text);
  bool have[3] = {false, false, false};
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trim(lines[i].substr(0, lines[i].find('#')));
    if (line.empty()) continue;
    const std::vector<std::string> t = tokens(line);
    auto value = [&](size_t k) {
      double v = 0;
      ORDO_CHECK(k < t.size() && number(t[k], v), where(source, i), ": '", t[0], "' wants a non-negative number",
                 k < t.size() ? ", not '" + t[k] + "'" : std::string(", and has none"));
      return v;
    };
    if (t[0] == "device") {
      c.device = trim(line.substr(6));
    } else if (t[0] == "source") {
      c.sources.push_back(trim(line.substr(6)));
    } else if (t[0] == "fit_on") {
      ORDO_CHECK(t.size() == 3, where(source, i), ": a fit_on line is 'fit_on CLASS WORD', not '", line, "'");
      c.fit_on[t[1]] = t[2];
    } else if (t[0] == "changed") {
      ORDO_CHECK(t.size() >= 3, where(source, i), ": a changed line is 'changed CLASS WHY...', not '", line, "'");
      c.changed[t[1]] = trim(line.substr(line.find(t[1], 7) + t[1].size()));
    } else if (t[0] == "event_us_per_launch") {
      c.event_seconds_per_launch = value(1) / 1e6, have[0] = true;
    } else if (t[0] == "eager_gap_us_per_launch") {
      c.eager_gap_seconds_per_launch = value(1) / 1e6, have[1] = true;
    } else if (t[0] == "unlisted_fraction") {
      c.unlisted_fraction = value(1), have[2] = true;
    } else if (t[0] == "class") {
      ORDO_CHECK(t.size() == 5, where(source, i), ": a class line is 'class NAME RATIO MEASURED_MS MODELED_MS', not '",
                 line, "'");
      ClassRatio r{value(2), value(3) / 1e3, value(4) / 1e3};
      ORDO_CHECK(r.ratio > 0, where(source, i), ": the class '", t[1], "' has ratio 0");
      c.classes[t[1]] = r;
    } else {
      throw Error(where(source, i) + ": unknown key '" + t[0] +
                  "' (device, source, fit_on, changed, event_us_per_launch, eager_gap_us_per_launch, "
                  "unlisted_fraction, class)");
    }
  }
  ORDO_CHECK(have[0] && have[1] && have[2], source,
             ": a calibration needs event_us_per_launch, eager_gap_us_per_launch and unlisted_fraction");
  ORDO_CHECK(!c.classes.empty(), source, ": a calibration needs at least one 'class' line");
  return c;
}

Prediction predict(const ClassTimes& modeled, const Calibration& calibration, PredictionOf of) {
  Prediction p;
  for (const auto& [name, seconds] : modeled.seconds) {
    ClassPrediction cp;
    cp.kernel_class = name;
    const bool own = calibration.classes.count(name) &&
                     (of == PredictionOf::measured_binaries || !calibration.changed.count(name));
    cp.ratio_from = own ? name : nearest_measured_class(name);
    ORDO_CHECK(own || cp.ratio_from != name || !calibration.changed.count(name), "gpu calibration: the kernel class '",
               name, "' changed since the lease and has no nearest measured class to take a ratio from");
    auto it = calibration.classes.find(cp.ratio_from);
    ORDO_CHECK(it != calibration.classes.end(), "gpu calibration: no ratio for the kernel class '", name,
               "' nor for its nearest measured class '", cp.ratio_from, "'");
    cp.modeled_seconds = seconds;
    cp.ratio = it->second.ratio;
    cp.predicted_seconds = cp.ratio * seconds * (1 + calibration.unlisted_fraction);
    p.kernels_seconds += cp.predicted_seconds;
    p.flagged = p.flagged || cp.ratio_from != name;
    p.classes.push_back(cp);
  }
  p.graph_seconds = p.kernels_seconds;
  p.eager_seconds = p.kernels_seconds + modeled.launches * calibration.eager_gap_seconds_per_launch;
  return p;
}

}  // namespace ordo
