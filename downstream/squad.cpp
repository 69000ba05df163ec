#include "downstream/squad.h"

#include <cmath>
#include <unordered_map>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace ordo::downstream {
namespace {

const json::Value& member(const json::Value& object, const std::string& key, json::Type type,
                          const std::string& where) {
  ORDO_CHECK(object.is_object(), where, ": expected an object, found ", json::type_name(object.type()));
  const json::Value* v = object.find(key);
  ORDO_CHECK(v, where, ": '", key, "' is missing");
  ORDO_CHECK(v->type() == type, where, ": '", key, "' is ", json::type_name(v->type()), ", expected ",
             json::type_name(type));
  return *v;
}

// run_squad's _is_whitespace: what splits a context into words there.
bool squad_whitespace(char32_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0x202F; }

}  // namespace

SquadDataset read_squad(const std::string& path) {
  const json::Value root = json::parse_file(path);
  SquadDataset set;
  set.path = path;
  ORDO_CHECK(root.is_object(), path, ": a SQuAD file is a JSON object with 'data', found ",
             json::type_name(root.type()));
  if (const json::Value* v = root.find("version"); v && v->is_string()) set.version = v->as_string();
  const auto& articles = member(root, "data", json::Type::array, path).as_array();
  std::unordered_map<std::string, std::string> seen;  // id -> where
  for (size_t a = 0; a < articles.size(); ++a) {
    const std::string at_article = path + ": data[" + std::to_string(a) + "]";
    const auto& paragraphs = member(articles[a], "paragraphs", json::Type::array, at_article).as_array();
    std::string title;
    if (const json::Value* t = articles[a].find("title"); t && t->is_string()) title = t->as_string();
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      const std::string at_paragraph = at_article + ".paragraphs[" + std::to_string(p) + "]";
      SquadParagraph paragraph;
      paragraph.title = title;
      paragraph.context = member(paragraphs[p], "context", json::Type::string, at_paragraph).as_string();
      paragraph.code_points = text::utf8::decode_or_throw(paragraph.context, at_paragraph + ".context");
      const int paragraph_index = static_cast<int>(set.paragraphs.size());
      set.paragraphs.push_back(std::move(paragraph));
      const auto& qas = member(paragraphs[p], "qas", json::Type::array, at_paragraph).as_array();
      for (size_t q = 0; q < qas.size(); ++q) {
        std::string where = at_paragraph + ".qas[" + std::to_string(q) + "]";
        SquadQuestion question;
        question.id = member(qas[q], "id", json::Type::string, where).as_string();
        where += " (id '" + question.id + "')";
        auto [it, fresh] = seen.emplace(question.id, where);
        ORDO_CHECK(fresh, where, ": the id is also that of ", it->second);
        question.question = member(qas[q], "question", json::Type::string, where).as_string();
        const auto& answers = member(qas[q], "answers", json::Type::array, where).as_array();
        for (size_t k = 0; k < answers.size(); ++k) {
          const std::string at_answer = where + ".answers[" + std::to_string(k) + "]";
          SquadAnswer answer;
          answer.text = member(answers[k], "text", json::Type::string, at_answer).as_string();
          const json::Value& start = member(answers[k], "answer_start", json::Type::number, at_answer);
          const double number = start.as_number();
          ORDO_CHECK(number == std::floor(number), at_answer, ": answer_start ", json::dump(start),
                     " is not a whole number (a character offset into the context)");
          ORDO_CHECK(number >= 0, at_answer, ": answer_start ", json::dump(start), " is negative");
          const size_t characters = set.paragraphs[static_cast<size_t>(paragraph_index)].code_points.size();
          ORDO_CHECK(number <= static_cast<double>(characters), at_answer, ": answer_start ", json::dump(start),
                     " is beyond the end of the context (", characters, " characters)");
          answer.start = static_cast<int64_t>(number);
          question.answers.push_back(std::move(answer));
        }
        const json::Value* impossible = qas[q].find("is_impossible");
        if (impossible) {
          ORDO_CHECK(impossible->is_bool(), where, ": 'is_impossible' is ", json::type_name(impossible->type()),
                     ", expected boolean");
          question.is_impossible = impossible->as_bool();
        } else {
          question.is_impossible = question.answers.empty();
        }
        question.paragraph = paragraph_index;
        set.questions.push_back(std::move(question));
      }
    }
  }
  return set;
}

bool squad_answer_span(const SquadParagraph& paragraph, const SquadAnswer& answer, int64_t& begin, int64_t& end) {
  const std::u32string& context = paragraph.code_points;
  const std::u32string text = text::utf8::decode_or_throw(answer.text, "answer text");
  const int64_t n = static_cast<int64_t>(context.size());
  const int64_t length = static_cast<int64_t>(text.size());
  if (length == 0 || answer.start + length > n) return false;
  // run_squad's doc_tokens and char_to_word_offset, with each word's character range.
  std::vector<std::pair<int64_t, int64_t>> words;  // [begin, end) in code points
  std::vector<int64_t> word_of(static_cast<size_t>(n));
  bool after_space = true;
  for (int64_t i = 0; i < n; ++i) {
    if (squad_whitespace(context[static_cast<size_t>(i)])) {
      after_space = true;
    } else {
      if (after_space) words.push_back({i, i});
      words.back().second = i + 1;
      after_space = false;
    }
    word_of[static_cast<size_t>(i)] = static_cast<int64_t>(words.size()) - 1;
  }
  const int64_t first = word_of[static_cast<size_t>(answer.start)];
  const int64_t last = word_of[static_cast<size_t>(answer.start + length - 1)];
  if (first < 0 || last < first) return false;
  // " ".join(doc_tokens[first:last+1]).find(" ".join(answer.split())) != -1
  std::u32string actual, cleaned;
  for (int64_t w = first; w <= last; ++w) {
    if (w > first) actual += U' ';
    const auto [b, e] = words[static_cast<size_t>(w)];
    actual.append(context, static_cast<size_t>(b), static_cast<size_t>(e - b));
  }
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && text::unicode::is_python_space(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !text::unicode::is_python_space(text[j])) ++j;
    if (j > i) cleaned += (cleaned.empty() ? U"" : U" ") + text.substr(i, j - i);
    i = j;
  }
  if (actual.find(cleaned) == std::u32string::npos) return false;
  const int64_t words_begin = words[static_cast<size_t>(first)].first;
  const int64_t words_end = words[static_cast<size_t>(last)].second;
  if (context.compare(static_cast<size_t>(answer.start), text.size(), text) == 0) {
    begin = answer.start;
    end = answer.start + length;
  } else if (const size_t at = context.substr(0, static_cast<size_t>(words_end)).find(text, static_cast<size_t>(words_begin));
             at != std::u32string::npos) {
    begin = static_cast<int64_t>(at);
    end = begin + length;
  } else {
    begin = words_begin;
    end = words_end;
  }
  return true;
}

std::vector<std::pair<std::string, std::string>> read_squad_predictions(const std::string& path) {
  const json::Value root = json::parse_file(path);
  ORDO_CHECK(root.is_object(), path, ": SQuAD predictions are a JSON object {question id: answer text}, found ",
             json::type_name(root.type()));
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [id, value] : root.items()) {
    ORDO_CHECK(value.is_string(), path, ": the prediction for '", id, "' is ", json::type_name(value.type()),
               ", expected a string (\"\" for no answer)");
    out.emplace_back(id, value.as_string());
  }
  return out;
}

std::vector<std::pair<std::string, double>> read_squad_na_probs(const std::string& path) {
  const json::Value root = json::parse_file(path);
  ORDO_CHECK(root.is_object(), path, ": no-answer probabilities are a JSON object {question id: number}, found ",
             json::type_name(root.type()));
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [id, value] : root.items()) {
    ORDO_CHECK(value.is_number(), path, ": the no-answer probability of '", id, "' is ",
               json::type_name(value.type()), ", expected a number");
    out.emplace_back(id, value.as_number());
  }
  return out;
}

}  // namespace ordo::downstream
