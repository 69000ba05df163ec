#include "text/tokenizer.h"

#include <algorithm>

#include "base/error.h"
#include "base/file_io.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace ordo::text {

const std::vector<std::string>& special_token_names() {
  static const std::vector<std::string> names = {kPad, kUnk, kCls, kSep, kMask};
  return names;
}

// ---- Vocab ----------------------------------------------------------------------

Vocab Vocab::from_tokens(std::vector<std::string> tokens, const std::string& origin) {
  ORDO_CHECK(!tokens.empty(), "vocabulary ", origin, " is empty");
  Vocab vocab;
  vocab.ids_.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    const size_t line = i + 1;
    utf8::Invalid invalid;
    ORDO_CHECK(utf8::valid(token, &invalid), "vocabulary ", origin, " line ", line, ": invalid UTF-8 at byte ",
               invalid.offset, " (", invalid.reason, ")");
    ORDO_CHECK(!token.empty(), "vocabulary ", origin, " line ", line, " is empty (one token per line expected)");
    ORDO_CHECK(token.find('\r') == std::string::npos, "vocabulary ", origin, " line ", line,
               " holds a carriage return (Windows line endings?); vocab.txt uses \\n only");
    // BERT's reader would keep a byte-order mark in the first token ([PAD] would go missing): name it instead.
    ORDO_CHECK(line > 1 || token.compare(0, 3, "\xEF\xBB\xBF") != 0, "vocabulary ", origin,
               " begins with a UTF-8 byte-order mark, which vocab.txt does not have (save it as UTF-8 without one)");
    auto [it, inserted] = vocab.ids_.emplace(token, static_cast<int32_t>(i));
    ORDO_CHECK(inserted, "vocabulary ", origin, ": token '", token, "' appears twice, on lines ", it->second + 1,
               " and ", line);
    vocab.continuation_.push_back(token.size() > 2 && token.compare(0, 2, "##") == 0);
  }
  vocab.tokens_ = std::move(tokens);

  std::string missing;
  auto find_special = [&](const char* name) {
    int32_t id = vocab.id(name);
    if (id < 0) missing += std::string(missing.empty() ? "" : " ") + name;
    return id;
  };
  vocab.special_ = SpecialIds{find_special(kPad), find_special(kUnk), find_special(kCls), find_special(kSep),
                              find_special(kMask)};
  ORDO_CHECK(missing.empty(), "vocabulary ", origin, " lacks the special token(s) ", missing,
             " (BERT needs [PAD] [UNK] [CLS] [SEP] [MASK])");
  return vocab;
}

Vocab Vocab::load(const std::string& path) {
  std::string bytes = read_file(path);
  std::vector<std::string> tokens;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    tokens.emplace_back(bytes, start, end - start);
    start = end + 1;
  }
  return from_tokens(std::move(tokens), path);
}

void Vocab::save(const std::string& path) const {
  std::string bytes;
  for (const auto& token : tokens_) {
    bytes += token;
    bytes += '\n';
  }
  write_file_atomic(path, bytes);
}

int32_t Vocab::id(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

const std::string& Vocab::token(int32_t id) const {
  ORDO_CHECK(id >= 0 && id < size(), "token id ", id, " is outside the vocabulary [0, ", size(), ")");
  return tokens_[static_cast<size_t>(id)];
}

bool Vocab::is_special(int32_t id) const {
  return id == special_.pad || id == special_.unk || id == special_.cls || id == special_.sep ||
         id == special_.mask;
}

// ---- BasicTokenizer ----------------------------------------------------------------

BasicTokenizer::BasicTokenizer(bool lower_case, std::vector<std::string> never_split)
    : lower_case_(lower_case), never_split_(std::move(never_split)) {}

void BasicTokenizer::split(std::string_view text, const WordSink& on_word) const {
  utf8::Invalid invalid;
  ORDO_CHECK(utf8::valid(text, &invalid), "invalid UTF-8 in text at byte ", invalid.offset, ": ", invalid.reason);
  // Cut out the never-split strings first, leftmost and then longest, as HF's
  // added-token trie does; everything between goes through the BasicTokenizer.
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best = std::string_view::npos, best_length = 0;
    for (const auto& special : never_split_) {
      size_t at = text.find(special, pos);
      if (at < best || (at == best && at != std::string_view::npos && special.size() > best_length)) {
        best = at;
        best_length = special.size();
      }
    }
    size_t chunk_end = std::min(best, text.size());
    if (chunk_end > pos) split_chunk(text.substr(pos, chunk_end - pos), on_word);
    if (best == std::string_view::npos) break;
    std::u32string special;
    utf8::decode(text.substr(best, best_length), special);
    on_word(special, true);
    pos = best + best_length;
  }
}

void BasicTokenizer::split_chunk(std::string_view chunk, const WordSink& on_word) const {
  thread_local std::u32string decoded, cleaned, normalized;
  decoded.clear();
  cleaned.clear();
  normalized.clear();
  utf8::decode(chunk, decoded);  // validated by split()
  // HF _clean_text and _tokenize_chinese_chars in one pass.
  for (char32_t cp : decoded) {
    if (cp == 0 || cp == 0xFFFD || unicode::is_control(cp)) continue;
    if (unicode::is_whitespace(cp)) {
      cleaned.push_back(' ');
    } else if (unicode::is_chinese_char(cp)) {
      cleaned.push_back(' ');
      cleaned.push_back(cp);
      cleaned.push_back(' ');
    } else {
      cleaned.push_back(cp);
    }
  }
  unicode::nfc(cleaned, normalized);
  // Python's str.split(): runs of str.isspace() characters separate words.
  size_t start = 0;
  const size_t n = normalized.size();
  while (start < n) {
    while (start < n && unicode::is_python_space(normalized[start])) ++start;
    size_t end = start;
    while (end < n && !unicode::is_python_space(normalized[end])) ++end;
    if (end > start) {
      std::u32string_view word(normalized.data() + start, end - start);
      if (is_never_split(word)) {
        on_word(word, true);
      } else {
        split_word(word, on_word);
      }
    }
    start = end;
  }
}

bool BasicTokenizer::is_never_split(std::u32string_view word) const {
  return std::any_of(never_split_.begin(), never_split_.end(), [&](const std::string& s) {
    return s.size() == word.size() &&
           std::equal(word.begin(), word.end(), s.begin(), [](char32_t a, char b) { return a == char32_t(uint8_t(b)); });
  });
}

void BasicTokenizer::split_word(std::u32string_view word, const WordSink& on_word) const {
  thread_local std::u32string lowered, decomposed, stripped;
  std::u32string_view text = word;
  if (lower_case_) {
    // HF: token.lower(), then _run_strip_accents (NFD, drop Mn).
    lowered.clear();
    decomposed.clear();
    stripped.clear();
    unicode::lower(word, lowered);
    unicode::nfd(lowered, decomposed);
    for (char32_t cp : decomposed) {
      if (!unicode::is_nonspacing_mark(cp)) stripped.push_back(cp);
    }
    text = stripped;
  }
  // HF _run_split_on_punc: every punctuation character is a word of its own.
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!unicode::is_punctuation(text[i])) continue;
    if (i > start) on_word(text.substr(start, i - start), false);
    on_word(text.substr(i, 1), false);
    start = i + 1;
  }
  if (start < text.size()) on_word(text.substr(start), false);
}

std::vector<std::string> BasicTokenizer::words(std::string_view text) const {
  std::vector<std::string> out;
  split(text, [&](std::u32string_view word, bool) { out.push_back(utf8::encode(word)); });
  return out;
}

// ---- PieceTrie ---------------------------------------------------------------------

PieceTrie::PieceTrie(std::vector<std::pair<std::string, int32_t>> pieces) {
  std::sort(pieces.begin(), pieces.end());
  build(pieces);
  root_children_.assign(256, -1);
  for (uint32_t e = 0; e < nodes_[0].edge_count; ++e) root_children_[edges_[e].byte] = edges_[e].child;
}

// The nodes from the sorted pieces, with a stack of pending nodes instead of
// recursion: a piece of a million bytes is a path a million nodes deep, which
// a recursive build would follow with a million stack frames. A node's
// children are made together, so its edges stay contiguous and in byte order
// (std::string sorts bytes as unsigned char).
void PieceTrie::build(const std::vector<std::pair<std::string, int32_t>>& sorted) {
  struct Pending {
    int32_t node;
    size_t lo, hi, depth;  // the pieces [lo, hi) share their first `depth` bytes
  };
  nodes_.emplace_back();
  std::vector<Pending> stack{{0, 0, sorted.size(), 0}};
  while (!stack.empty()) {
    const Pending p = stack.back();
    stack.pop_back();
    size_t lo = p.lo;
    if (lo < p.hi && sorted[lo].first.size() == p.depth) nodes_[static_cast<size_t>(p.node)].id = sorted[lo].second;
    while (lo < p.hi && sorted[lo].first.size() == p.depth) ++lo;  // a repeated piece: its first id stays
    const uint32_t first = static_cast<uint32_t>(edges_.size());
    for (size_t i = lo; i < p.hi;) {  // a child per run of pieces with the same next byte
      const char byte = sorted[i].first[p.depth];
      size_t j = i;
      while (j < p.hi && sorted[j].first[p.depth] == byte) ++j;
      const int32_t child = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      edges_.push_back(Edge{static_cast<uint8_t>(byte), child});
      stack.push_back({child, i, j, p.depth + 1});
      i = j;
    }
    nodes_[static_cast<size_t>(p.node)].first_edge = first;
    nodes_[static_cast<size_t>(p.node)].edge_count = static_cast<uint32_t>(edges_.size()) - first;
  }
}

std::pair<int32_t, size_t> PieceTrie::longest_prefix(std::string_view bytes) const {
  std::pair<int32_t, size_t> best{-1, 0};
  if (bytes.empty() || root_children_[static_cast<uint8_t>(bytes[0])] < 0) return best;
  uint32_t node = static_cast<uint32_t>(root_children_[static_cast<uint8_t>(bytes[0])]);
  if (nodes_[node].id >= 0) best = {nodes_[node].id, 1};
  for (size_t i = 1; i < bytes.size(); ++i) {
    const uint8_t byte = static_cast<uint8_t>(bytes[i]);
    const Edge* begin = edges_.data() + nodes_[node].first_edge;
    const Edge* end = begin + nodes_[node].edge_count;
    const Edge* edge = std::lower_bound(begin, end, byte, [](const Edge& e, uint8_t b) { return e.byte < b; });
    if (edge == end || edge->byte != byte) break;
    node = static_cast<uint32_t>(edge->child);
    // Pieces are whole UTF-8 characters, so a piece that matches ends on a character boundary.
    if (nodes_[node].id >= 0) best = {nodes_[node].id, i + 1};
  }
  return best;
}

// ---- Tokenizer ---------------------------------------------------------------------

namespace {

size_t code_points(std::string_view utf8_bytes) {
  return static_cast<size_t>(std::count_if(utf8_bytes.begin(), utf8_bytes.end(),
                                           [](char b) { return (static_cast<uint8_t>(b) & 0xC0) != 0x80; }));
}

// The pieces of the vocabulary that a word can match: a word of more than
// `max_chars` characters is [UNK] before any lookup, so a longer token (a
// vocab.txt line of a megabyte, say) can never be a piece and stays out of
// the trie, which would otherwise hold a node per byte of it.
std::vector<std::pair<std::string, int32_t>> pieces_of(const Vocab& vocab, bool continuation, int max_chars) {
  std::vector<std::pair<std::string, int32_t>> pieces;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (continuation && !vocab.is_continuation(id)) continue;
    std::string piece = continuation ? vocab.token(id).substr(2) : vocab.token(id);
    if (code_points(piece) <= static_cast<size_t>(max_chars)) pieces.emplace_back(std::move(piece), id);
  }
  return pieces;
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab, TokenizerOptions options)
    : vocab_(std::move(vocab)),
      options_(options),
      basic_(options.lower_case),
      initial_(pieces_of(vocab_, false, options.max_chars_per_word)),
      continuation_(pieces_of(vocab_, true, options.max_chars_per_word)) {
  ORDO_CHECK(options_.max_chars_per_word > 0, "max_chars_per_word must be positive, got ",
             options_.max_chars_per_word);
}

void Tokenizer::wordpiece(std::u32string_view word, std::vector<int32_t>& out) const {
  if (static_cast<int64_t>(word.size()) > options_.max_chars_per_word) {
    out.push_back(vocab_.special().unk);
    return;
  }
  thread_local std::string bytes;
  bytes.clear();
  for (char32_t cp : word) utf8::append(bytes, cp);
  // Greedy longest-match-first: the first piece from the whole-token trie, the
  // rest from the "##" trie; one unmatched stretch makes the whole word [UNK].
  const size_t before = out.size();
  size_t pos = 0;
  while (pos < bytes.size()) {
    const PieceTrie& trie = pos == 0 ? initial_ : continuation_;
    auto [id, length] = trie.longest_prefix(std::string_view(bytes).substr(pos));
    if (id < 0) {
      out.resize(before);
      out.push_back(vocab_.special().unk);
      return;
    }
    out.push_back(id);
    pos += length;
  }
}

void Tokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
  basic_.split(text, [&](std::u32string_view word, bool special) {
    if (special) {
      // HF keeps a never-split token whole; the vocabulary holds every special.
      out.push_back(vocab_.id(utf8::encode(word)));
    } else {
      wordpiece(word, out);
    }
  });
}

SequenceLayout Tokenizer::layout() const {
  const SpecialIds& s = vocab_.special();
  SequenceLayout l;
  l.cls = s.cls, l.sep = s.sep, l.pad = s.pad, l.unk = s.unk, l.mask = s.mask;
  return l;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  encode_append(text, ids);
  return ids;
}

std::vector<std::string> Tokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> tokens;
  for (int32_t id : encode(text)) tokens.push_back(vocab_.token(id));
  return tokens;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) tokens.push_back(vocab_.token(id));
  return detokenize(tokens);
}

std::string detokenize(const std::vector<std::string>& tokens) {
  std::string joined;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) joined += ' ';
    joined += tokens[i];
  }
  std::string out;
  out.reserve(joined.size());
  for (size_t i = 0; i < joined.size(); ++i) {
    if (joined.compare(i, 3, " ##") == 0) {
      i += 2;
      continue;
    }
    out += joined[i];
  }
  size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(' ') - first + 1);
}

}  // namespace ordo::text
