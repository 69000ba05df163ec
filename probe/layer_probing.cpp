#include "probe/layer_probing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "base/file_io.h"
#include "downstream/glue.h"
#include "downstream/senteval.h"
#include "model/model.h"
#include "nn/bert.h"
#include "nn/evaluate_batches.h"
#include "nn/position.h"
#include "plot/svg.h"
#include "probe/analysis_linalg.h"
#include "train/checkpoint_paths.h"
#include "train/loop.h"
#include "train/pretrain.h"

namespace ordo::probe {

// ---- the classifier --------------------------------------------------------------------------------

int SoftmaxModel::predict(const double* x) const {
  const int64_t d = w.rows, k = w.cols;
  std::vector<double> s(b);
  for (int64_t f = 0; f < d; ++f) {
    const double z = (x[f] - mean[static_cast<size_t>(f)]) / scale[static_cast<size_t>(f)];
    for (int64_t c = 0; c < k; ++c) s[static_cast<size_t>(c)] += z * w(f, c);
  }
  return static_cast<int>(std::max_element(s.begin(), s.end()) - s.begin());
}

double SoftmaxModel::accuracy(const Matrix& x, const std::vector<int>& y) const {
  ORDO_CHECK(x.rows == static_cast<int64_t>(y.size()) && x.rows > 0, "SoftmaxModel::accuracy: ", x.rows, " rows, ",
             y.size(), " labels");
  int64_t right = 0;
  for (int64_t i = 0; i < x.rows; ++i) right += predict(&x.data[static_cast<size_t>(i * x.cols)]) == y[static_cast<size_t>(i)];
  return static_cast<double>(right) / static_cast<double>(x.rows);
}

SoftmaxModel fit_softmax(const Matrix& x, const std::vector<int>& y, int classes, double l2, int iterations) {
  const int64_t n = x.rows, d = x.cols, k = classes;
  ORDO_CHECK(n > 0 && n == static_cast<int64_t>(y.size()), "fit_softmax: ", n, " feature rows, ", y.size(), " labels");
  ORDO_CHECK(classes >= 2, "fit_softmax: ", classes, " classes");
  for (int label : y) ORDO_CHECK(0 <= label && label < classes, "fit_softmax: label ", label, " outside 0..", classes - 1);
  Standardised st = standardise(x);
  const Matrix& z = st.z;
  SoftmaxModel m;
  m.mean = std::move(st.mean);
  m.scale = std::move(st.scale);
  const double lmax = gram_largest_eigenvalue(z);
  const double step = 1.0 / (0.5 * (lmax + 1.0) + l2);
  Matrix w(d, k), w_prev(d, k), wy(d, k), grad(d, k);
  std::vector<double> b(static_cast<size_t>(k), 0.0), b_prev(b), by(b), gb(b), s(b);
  for (int t = 0; t < iterations; ++t) {
    const double momentum = static_cast<double>(t) / (t + 3.0);
    for (size_t e = 0; e < w.data.size(); ++e) wy.data[e] = w.data[e] + momentum * (w.data[e] - w_prev.data[e]);
    for (int64_t c = 0; c < k; ++c) by[static_cast<size_t>(c)] = b[static_cast<size_t>(c)] + momentum * (b[static_cast<size_t>(c)] - b_prev[static_cast<size_t>(c)]);
    std::fill(grad.data.begin(), grad.data.end(), 0.0);
    std::fill(gb.begin(), gb.end(), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      s = by;
      for (int64_t f = 0; f < d; ++f) {
        const double zi = z(i, f);
        const double* row = &wy.data[static_cast<size_t>(f * k)];
        for (int64_t c = 0; c < k; ++c) s[static_cast<size_t>(c)] += zi * row[c];
      }
      const double top = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - top));
      for (int64_t c = 0; c < k; ++c) {
        s[static_cast<size_t>(c)] = (s[static_cast<size_t>(c)] / sum - (c == y[static_cast<size_t>(i)] ? 1.0 : 0.0)) / static_cast<double>(n);
        gb[static_cast<size_t>(c)] += s[static_cast<size_t>(c)];
      }
      for (int64_t f = 0; f < d; ++f) {
        const double zi = z(i, f);
        double* row = &grad.data[static_cast<size_t>(f * k)];
        for (int64_t c = 0; c < k; ++c) row[c] += zi * s[static_cast<size_t>(c)];
      }
    }
    w_prev = w;
    b_prev = b;
    for (size_t e = 0; e < w.data.size(); ++e) w.data[e] = wy.data[e] - step * (grad.data[e] + l2 * wy.data[e]);
    for (int64_t c = 0; c < k; ++c) b[static_cast<size_t>(c)] = by[static_cast<size_t>(c)] - step * gb[static_cast<size_t>(c)];
  }
  m.w = std::move(w);
  m.b = std::move(b);
  return m;
}

// ---- the tasks -------------------------------------------------------------------------------------

const std::vector<std::string>& layer_probe_tasks() {
  static const std::vector<std::string> names = {"sentence_length", "word_content",  "tree_depth", "top_constituents",
                                                 "bigram_shift",    "tense",         "subject_number",
                                                 "object_number"};
  return names;
}

namespace {

ProbeSplit split_of(const downstream::GlueSet& set, size_t first, size_t end) {
  ProbeSplit s;
  for (size_t i = first; i < end && i < set.examples.size(); ++i) {
    s.sentences.push_back(set.examples[i].text_a);
    s.labels.push_back(set.examples[i].label);
  }
  return s;
}

}  // namespace

ProbeTask read_probe_task(const std::string& tasks_dir, const std::string& name, int64_t max_fit) {
  ORDO_CHECK(std::find(layer_probe_tasks().begin(), layer_probe_tasks().end(), name) != layer_probe_tasks().end(),
             "layer probing: '", name, "' is not one of the synthetic probing tasks");
  ORDO_CHECK(max_fit >= 2, "layer probing: max_fit must be at least 2, got ", max_fit);
  ProbeTask t;
  t.name = name;
  const std::string senteval = tasks_dir + "/" + name + "/" + name + ".txt";
  if (file_exists(senteval)) {
    const downstream::SentEvalData data = downstream::read_senteval(senteval);
    ORDO_CHECK(!data.test.examples.empty(), senteval, ": no te partition to report on");
    t.classes = static_cast<int>(data.task->labels.size());
    t.fit = split_of(data.train, 0, static_cast<size_t>(max_fit));
    t.select = split_of(data.dev, 0, data.dev.examples.size());
    t.report = split_of(data.test, 0, data.test.examples.size());
    return t;
  }
  const std::string train = tasks_dir + "/" + name + "/train.tsv", dev = tasks_dir + "/" + name + "/dev.tsv";
  ORDO_CHECK(file_exists(train) && file_exists(dev), "layer probing: task ", name, " has neither ", senteval,
             " nor ", train, " and dev.tsv (the run's tasks stage writes them)");
  const downstream::GlueTask& sst2 = downstream::glue_task("sst2");
  const downstream::GlueSet tr = downstream::read_glue(sst2, train), dv = downstream::read_glue(sst2, dev);
  t.classes = 2;
  const size_t select_from = tr.examples.size() - tr.examples.size() / 10;  // the last tenth selects
  t.fit = split_of(tr, 0, std::min(select_from, static_cast<size_t>(max_fit)));
  t.select = split_of(tr, select_from, tr.examples.size());
  t.report = split_of(dv, 0, dv.examples.size());
  ORDO_CHECK(!t.select.sentences.empty(), train, ": too few examples to hold a tenth out for the selection");
  return t;
}

// ---- features ---------------------------------------------------------------------------------------

std::vector<Matrix> layer_features(nn::PretrainingModel& model, const text::Tokenizer& tokenizer,
                                   const std::vector<std::string>& sentences, nn::Ablation ablation,
                                   int64_t max_length) {
  const nn::BertConfig& config = model.bert.config();
  const bool encoder = !config.decoder;
  const text::SpecialIds& sp = tokenizer.vocab().special();
  const int64_t layers = config.num_hidden_layers + 1, hidden = config.hidden_size, n = static_cast<int64_t>(sentences.size());
  ORDO_CHECK(max_length >= (encoder ? 3 : 1), "layer_features: max_length ", max_length, " is too short");
  std::vector<Matrix> out(static_cast<size_t>(layers), Matrix(n, hidden));
  constexpr int64_t kBatch = 64;
  // Every batch tokenized and padded here, in order; then the
  // forwards a batch a thread (nn/evaluate_batches.h), each writing its own rows of `out`.
  struct Batch {
    int64_t first = 0;
    std::vector<std::vector<int64_t>> rows;
    nn::BertInputs in;
  };
  std::vector<Batch> batches;
  for (int64_t first = 0; first < n; first += kBatch) {
    Batch batch;
    batch.first = first;
    const int64_t count = std::min(kBatch, n - first);
    std::vector<std::vector<int64_t>>& rows = batch.rows;
    int64_t width = 1;
    for (int64_t r = 0; r < count; ++r) {
      std::vector<int32_t> pieces = tokenizer.encode(sentences[static_cast<size_t>(first + r)]);
      pieces.resize(std::min<size_t>(pieces.size(), static_cast<size_t>(max_length - (encoder ? 2 : 0))));
      std::vector<int64_t> ids;
      if (encoder) ids.push_back(sp.cls);
      ids.insert(ids.end(), pieces.begin(), pieces.end());
      if (encoder) ids.push_back(sp.sep);
      if (ids.empty()) ids.push_back(sp.unk);  // an empty sentence for a decoder: one unknown token
      width = std::max<int64_t>(width, static_cast<int64_t>(ids.size()));
      rows.push_back(std::move(ids));
    }
    std::vector<int64_t> ids(static_cast<size_t>(count * width), sp.pad), mask(static_cast<size_t>(count * width), 0);
    for (int64_t r = 0; r < count; ++r)
      for (size_t t = 0; t < rows[static_cast<size_t>(r)].size(); ++t) {
        ids[static_cast<size_t>(r * width) + t] = rows[static_cast<size_t>(r)][t];
        mask[static_cast<size_t>(r * width) + t] = 1;
      }
    batch.in.input_ids = Tensor::from_vector(ids, Shape{count, width});
    batch.in.attention_mask = Tensor::from_vector(mask, Shape{count, width});
    batches.push_back(std::move(batch));
  }
  nn::evaluate_batches(static_cast<int64_t>(batches.size()), Device::cpu(), [&](int64_t b) {
    const Batch& batch = batches[static_cast<size_t>(b)];
    const int64_t width = batch.in.input_ids.size(1);
    nn::Context ctx = nn::Context::eval();
    ctx.ablate = ablation;
    nn::ForwardTrace trace;
    trace.keep_hidden_states = true;
    model.bert.forward(batch.in, ctx, &trace);
    ORDO_CHECK(static_cast<int64_t>(trace.hidden_states.size()) == layers, "layer_features: ",
               trace.hidden_states.size(), " hidden states for ", layers - 1, " layers");
    for (int64_t l = 0; l < layers; ++l) {
      const std::vector<double> h = trace.hidden_states[static_cast<size_t>(l)].to(Device::cpu()).contiguous().to_doubles();
      for (size_t r = 0; r < batch.rows.size(); ++r) {
        const double real = static_cast<double>(batch.rows[r].size());
        for (size_t t = 0; t < batch.rows[r].size(); ++t)
          for (int64_t c = 0; c < hidden; ++c)
            out[static_cast<size_t>(l)](batch.first + static_cast<int64_t>(r), c) +=
                h[static_cast<size_t>((static_cast<int64_t>(r) * width + static_cast<int64_t>(t)) * hidden + c)] / real;
      }
    }
  });
  return out;
}

// ---- the whole probe ----------------------------------------------------------------------------------

json::Value probe_layers(const LayerProbeOptions& o) {
  ORDO_CHECK(directory_exists(o.run) && file_exists(o.run + "/config.json"), "layer probing: '", o.run,
             "' holds no pretraining run (no config.json)");
  ORDO_CHECK(!o.l2.empty(), "layer probing: no L2 weight to choose from");
  const std::string tasks_dir = o.tasks_dir.empty() ? o.run + "/tasks" : o.tasks_dir;
  const train::RunConfig config = train::read_run_config(o.run + "/config.json", {});
  const int64_t step = train::latest_checkpoint(o.run);
  ORDO_CHECK(step > 0, "layer probing: '", o.run, "' has no checkpoint");
  std::unique_ptr<nn::PretrainingModel> model = model::load_model(train::checkpoint_dir(o.run, step), Device::cpu());
  text::TokenizerOptions to;
  to.lower_case = config.data.lower_case;
  const text::Tokenizer tokenizer(text::Vocab::load(o.run + "/vocab.txt"), to);
  int64_t length = 0;
  for (const train::Phase& p : config.train.phases) length = std::max(length, p.max_seq_length);

  const std::vector<std::string> names = o.tasks.empty() ? layer_probe_tasks() : o.tasks;
  const std::pair<const char*, nn::Ablation> attentions[3] = {
      {"both", nn::Ablation::none}, {"contextual", nn::Ablation::positional}, {"positional", nn::Ablation::contextual}};
  json::Value tasks = json::Value::object(), not_defined = json::Value::object();
  for (const std::string& name : names) {
    const ProbeTask task = read_probe_task(tasks_dir, name, o.max_fit);
    json::Value t = json::Value::object();
    t["classes"] = task.classes;
    t["fit"] = static_cast<int64_t>(task.fit.sentences.size());
    t["select"] = static_cast<int64_t>(task.select.sentences.size());
    t["report"] = static_cast<int64_t>(task.report.sentences.size());
    json::Value by_attention = json::Value::object();
    for (const auto& [attention, ablation] : attentions) {
      if (not_defined.contains(attention)) continue;
      std::vector<Matrix> fit, select, report;
      try {
        fit = layer_features(*model, tokenizer, task.fit.sentences, ablation, length);
        select = layer_features(*model, tokenizer, task.select.sentences, ablation, length);
        report = layer_features(*model, tokenizer, task.report.sentences, ablation, length);
      } catch (const Error& e) {
        not_defined[attention] = std::string(e.what());
        continue;
      }
      json::Value layers = json::Value::array();
      int64_t best = 0;
      double best_select = -1, best_report = 0;
      for (size_t l = 0; l < fit.size(); ++l) {
        double layer_select = -1, layer_report = 0, layer_l2 = 0;
        for (double l2 : o.l2) {
          const SoftmaxModel m = fit_softmax(fit[l], task.fit.labels, task.classes, l2);
          const double s = m.accuracy(select[l], task.select.labels);
          if (s > layer_select) layer_select = s, layer_report = m.accuracy(report[l], task.report.labels), layer_l2 = l2;
        }
        json::Value e = json::Value::object();
        e["layer"] = static_cast<int64_t>(l);
        e["l2"] = layer_l2;
        e["select_accuracy"] = layer_select;
        e["report_accuracy"] = layer_report;
        layers.push_back(e);
        if (layer_select > best_select) best_select = layer_select, best_report = layer_report, best = static_cast<int64_t>(l);
      }
      json::Value a = json::Value::object();
      a["best_layer"] = best;
      a["accuracy"] = best_report;
      a["by_layer"] = layers;
      by_attention[attention] = a;
      if (!o.quiet)
        std::fprintf(stderr, "layer probing: %s, %s: layer %lld, %.1f%%\n", name.c_str(), attention,
                     static_cast<long long>(best), 100 * best_report);
    }
    t["attentions"] = by_attention;
    tasks[name] = t;
  }
  json::Value result = json::Value::object();
  result["run"] = o.run;
  result["checkpoint"] = "step_" + std::to_string(step);
  result["layers"] = model->bert.config().num_hidden_layers + 1;
  json::Value l2 = json::Value::array();
  for (double v : o.l2) l2.push_back(v);
  result["l2"] = l2;
  result["max_fit"] = o.max_fit;
  result["tasks"] = tasks;
  result["not_defined"] = not_defined;
  return result;
}

std::string layer_probing_svg(const json::Value& result, const std::string& title) {
  std::vector<plot::svg::Figure> panels;
  std::vector<std::pair<std::string, int>> legend;  // each attention keeps its look in every panel
  for (const auto& [name, task] : result["tasks"].items()) {
    std::vector<plot::svg::Line> series;
    int next_look = 0;
    for (const char* attention : {"contextual", "positional", "both"}) {
      const int look = next_look++;
      if (!task["attentions"].contains(attention)) continue;
      if (std::none_of(legend.begin(), legend.end(), [&](const auto& e) { return e.first == attention; }))
        legend.emplace_back(attention, look);
      plot::svg::Line s{attention, {}, {}, look};
      const json::Value& layers = task["attentions"][attention]["by_layer"];
      for (size_t l = 0; l < layers.size(); ++l) {
        s.x.push_back(static_cast<double>(layers[l]["layer"].as_int()));
        s.y.push_back(100 * layers[l]["report_accuracy"].as_number());
      }
      series.push_back(s);
    }
    plot::svg::ChartStyle style;
    style.title = name;
    style.x_label = "layer (0: embeddings)";
    style.y_label = "accuracy (%)";
    style.width = 400;
    style.height = 320;
    style.legend = false;  // the grid's legend
    panels.push_back(plot::svg::line_chart(series, style));
  }
  ORDO_CHECK(!panels.empty(), "layer_probing_svg: no task");
  std::sort(legend.begin(), legend.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return plot::svg::document(plot::svg::grid(panels, 3, title, legend));
}

}  // namespace ordo::probe
