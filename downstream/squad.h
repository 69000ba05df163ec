// SQuAD v1.1 and v2.0 files: the dataset JSON, the official predictions file
// ({question id: answer text}) and v2.0's no-answer probabilities
// ({question id: number}, evaluate-v2.0.py's --na-prob-file).
//
// The dataset: {"version": .., "data": [{"title": .., "paragraphs": [{"context": ..,
// "qas": [{"id": .., "question": .., "answers": [{"text": .., "answer_start": N}, ..],
// "is_impossible": bool (v2.0)}, ..]}, ..]}, ..]}. answer_start counts Unicode
// code points of the context (Python str indices). In v2.0 an unanswerable
// question has "answers": [] (its "plausible_answers" are not read).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ordo::downstream {

struct SquadAnswer {
  std::string text;
  int64_t start = 0;  // code points into the context
};

struct SquadQuestion {
  std::string id, question;
  std::vector<SquadAnswer> answers;  // several in dev sets; none when unanswerable (v2.0)
  bool is_impossible = false;        // "is_impossible" when given, else: no answers
  int paragraph = 0;                 // index into SquadDataset::paragraphs
};

struct SquadParagraph {
  std::string title;
  std::string context;       // UTF-8
  std::u32string code_points;  // the context as code points: what offsets count
};

struct SquadDataset {
  std::string path, version;
  std::vector<SquadParagraph> paragraphs;
  std::vector<SquadQuestion> questions;  // in file order
};

// Reads a SQuAD JSON file. Errors (ordo::Error) name the file and the place:
// "dev.json: data[2].paragraphs[0].qas[3] (id '5733..'): 'answers' is missing".
// A question id given twice is an error. Answers are not checked against the
// context here (scoring uses their text only): squad_answer_span does that.
SquadDataset read_squad(const std::string& path);

// Google's and HuggingFace's run_squad check of a training answer, which skip
// the example ("Could not find answer") when it fails: the context is split
// into words on whitespace (space, \t, \r, \n, U+202F); the words holding the
// answer's first and last characters (by answer_start and the text's length),
// joined by single spaces, must contain the answer text with its whitespace
// collapsed. When it holds, the answer's span of context code points:
// [answer_start, + length) when the text is there exactly, else where the text
// occurs inside those words, else the words themselves. Returns false (and
// leaves `begin`/`end` alone) when the check fails or answer_start is outside
// the context.
bool squad_answer_span(const SquadParagraph& paragraph, const SquadAnswer& answer, int64_t& begin, int64_t& end);

// Predictions {id: text} in the file's order. Errors: not an object, a value
// that is not a string.
std::vector<std::pair<std::string, std::string>> read_squad_predictions(const std::string& path);
// No-answer probabilities (or scores) {id: number}, in the file's order.
std::vector<std::pair<std::string, double>> read_squad_na_probs(const std::string& path);

}  // namespace ordo::downstream
