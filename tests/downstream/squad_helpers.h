// What the SQuAD tests share: a dataset of one inline paragraph.
#pragma once

#include <string>
#include <vector>

#include "downstream/squad.h"
#include "text/utf8.h"

namespace ordo::test {

// One paragraph with its questions, as read_squad would hold it.
inline downstream::SquadDataset one_paragraph(const std::string& context,
                                              const std::vector<downstream::SquadQuestion>& questions) {
  downstream::SquadDataset d;
  d.path = "inline";
  downstream::SquadParagraph p;
  p.context = context;
  p.code_points = text::utf8::decode_or_throw(context, "context");
  d.paragraphs.push_back(p);
  d.questions = questions;
  return d;
}

}  // namespace ordo::test
