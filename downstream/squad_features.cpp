#include "downstream/squad_features.h"

#include <algorithm>

#include "base/error.h"

namespace ordo::downstream {
namespace {

struct Window {
  int start = 0, length = 0;
};

// run_squad's doc spans over n context tokens.
std::vector<Window> windows_over(int n, int max_tokens, int stride) {
  std::vector<Window> out;
  for (int start = 0; start < n;) {
    const int length = std::min(n - start, max_tokens);
    out.push_back({start, length});
    if (start + length == n) break;
    start += std::min(length, stride);
  }
  return out;
}

// _check_is_max_context for every context token at once: the first window
// with the best min(left, right) + 0.01 * length among those holding it.
// Walking each window's tokens costs the windows' total length (n times
// max_tokens / doc_stride at most), where asking every window for every token,
// as run_squad does, costs n times the number of windows: quadratic in n.
std::vector<int> max_context_windows(const std::vector<Window>& windows, int n) {
  std::vector<int> best(static_cast<size_t>(n), -1);
  std::vector<double> best_score(static_cast<size_t>(n), 0);
  for (size_t w = 0; w < windows.size(); ++w) {
    const int end = windows[w].start + windows[w].length - 1;
    for (int position = windows[w].start; position <= end; ++position) {
      const double score = std::min(position - windows[w].start, end - position) + 0.01 * windows[w].length;
      const size_t p = static_cast<size_t>(position);
      if (best[p] < 0 || score > best_score[p]) best[p] = static_cast<int>(w), best_score[p] = score;
    }
  }
  return best;
}

}  // namespace

std::string SquadFeatureStats::skipped_report() const {
  if (skipped.empty()) return "";
  std::string ids;
  for (size_t i = 0; i < skipped.size() && i < 10; ++i) ids += (i ? ", " : "") + skipped[i];
  if (skipped.size() > 10) ids += ", ...";
  return "skipped " + std::to_string(skipped.size()) + " training question" + (skipped.size() == 1 ? "" : "s") +
         " whose answer text is not at its answer_start (run_squad's 'Could not find answer'): " + ids;
}

std::vector<SquadFeature> make_squad_features(const SquadDataset& data, const text::SubwordTokenizer& tokenizer,
                                              const SquadWindowOptions& options, bool training,
                                              SquadFeatureStats* stats) {
  ORDO_CHECK(options.max_query_length >= 1, "max_query_length must be >= 1, got ", options.max_query_length);
  ORDO_CHECK(options.doc_stride >= 1, "doc_stride must be >= 1, got ", options.doc_stride);
  // [CLS] q [SEP] c [SEP] with the model's specials (RoBERTa: <s> q </s> </s> c </s>, one segment).
  const text::SequenceLayout layout = tokenizer.layout();
  const int specials = (layout.cls >= 0 ? 1 : 0) + (layout.sep >= 0 ? layout.pair_separators + 1 : 0);
  SquadFeatureStats local;
  SquadFeatureStats& st = stats ? *stats : local;
  std::vector<SquadFeature> features;
  int cached_paragraph = -1;
  text::Encoding context;
  for (size_t qi = 0; qi < data.questions.size(); ++qi) {
    const SquadQuestion& q = data.questions[qi];
    const SquadParagraph& paragraph = data.paragraphs[static_cast<size_t>(q.paragraph)];
    if (q.paragraph != cached_paragraph) {  // questions of one paragraph come together
      context = tokenizer.encode_with_offsets(paragraph.context);
      cached_paragraph = q.paragraph;
    }
    // The training answer's token span among the context tokens.
    int answer_first = -1, answer_last = -1;
    const bool answerable = training && !q.is_impossible;
    if (answerable) {
      int64_t begin = 0, end = 0;
      ORDO_CHECK(!q.answers.empty(), data.path, ": question '", q.id,
                 "' is not marked is_impossible but has no answer to train on");
      if (!squad_answer_span(paragraph, q.answers[0], begin, end)) {
        st.skipped.push_back(q.id);
        continue;
      }
      const int n = static_cast<int>(context.offsets.size());
      for (int t = 0; t < n && answer_first < 0; ++t)
        if (context.offsets[static_cast<size_t>(t)].end > begin) answer_first = t;
      for (int t = n - 1; t >= 0 && answer_last < 0; --t)
        if (context.offsets[static_cast<size_t>(t)].begin < end) answer_last = t;
      if (answer_first < 0 || answer_last < answer_first) {  // the answer is characters no token holds
        st.skipped.push_back(q.id);
        continue;
      }
    }
    std::vector<int32_t> query = tokenizer.encode(q.question);
    if (static_cast<int>(query.size()) > options.max_query_length) query.resize(static_cast<size_t>(options.max_query_length));
    const int max_tokens = options.max_seq_length - static_cast<int>(query.size()) - specials;
    ORDO_CHECK(max_tokens >= 1, "max_seq_length ", options.max_seq_length, " leaves no room for the context of "
               "question '", q.id, "' after its ", query.size(), " query tokens and ", specials, " special tokens (lower "
               "max_query_length, now ", options.max_query_length, ", or raise max_seq_length)");
    // run_squad advances by min(window, doc_stride): a stride beyond the window
    // would be silently cut to it, so the windows would not be the ones asked for.
    ORDO_CHECK(static_cast<int>(context.ids.size()) <= max_tokens || options.doc_stride <= max_tokens, "doc_stride ",
               options.doc_stride, " is larger than the window of question '", q.id, "', whose ",
               context.ids.size(), "-token context needs several: max_seq_length ", options.max_seq_length, " - ",
               query.size(), " query tokens - 3 = ", max_tokens,
               " context tokens a window. Give doc_stride <= ", max_tokens, " (squad.doc_stride), or a longer "
               "max_seq_length (BERT's SQuAD recipe: 384 with doc_stride 128)");
    const std::vector<Window> windows =
        windows_over(static_cast<int>(context.ids.size()), max_tokens, options.doc_stride);
    const std::vector<int> max_context = max_context_windows(windows, static_cast<int>(context.ids.size()));
    ++st.questions;
    for (size_t w = 0; w < windows.size(); ++w) {
      SquadFeature f;
      f.question = static_cast<int>(qi);
      f.window = static_cast<int>(w);
      if (layout.cls >= 0) f.input_ids.push_back(layout.cls);
      f.input_ids.insert(f.input_ids.end(), query.begin(), query.end());
      if (layout.sep >= 0) f.input_ids.insert(f.input_ids.end(), static_cast<size_t>(layout.pair_separators), layout.sep);
      f.token_type_ids.assign(f.input_ids.size(), 0);
      f.context_offset = static_cast<int>(f.input_ids.size());
      f.context_start = windows[w].start;
      for (int k = 0; k < windows[w].length; ++k) {
        const size_t t = static_cast<size_t>(windows[w].start + k);
        f.input_ids.push_back(context.ids[t]);
        f.context_spans.push_back(context.offsets[t]);
        f.max_context.push_back(max_context[t] == static_cast<int>(w) ? 1 : 0);
      }
      if (layout.sep >= 0) f.input_ids.push_back(layout.sep);
      f.token_type_ids.resize(f.input_ids.size(), layout.second_segment);
      if (answerable) {
        const int first = windows[w].start, last = windows[w].start + windows[w].length - 1;
        if (answer_first >= first && answer_last <= last) {
          f.start_position = answer_first - first + f.context_offset;
          f.end_position = answer_last - first + f.context_offset;
        } else {
          ++st.out_of_window;
        }
      }
      features.push_back(std::move(f));
      ++st.features;
    }
  }
  return features;
}

}  // namespace ordo::downstream
