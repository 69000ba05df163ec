// GPT-2's byte-level BPE: see text/bpe.h.
#include "text/bpe.h"

#include <algorithm>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace ordo::text {

namespace {

// GPT-2's bytes_to_unicode (encoder.py): the printable bytes ! .. ~, ¡ .. ¬
// and ® .. ÿ stand for themselves; the other 68 take U+0100, U+0101, ... in
// byte order.
struct ByteTable {
  char32_t to_unicode[256];
  std::unordered_map<char32_t, uint8_t> to_byte;
  ByteTable() {
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_unicode[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      to_byte[to_unicode[b]] = static_cast<uint8_t>(b);
    }
  }
};
const ByteTable& byte_table() {
  static const ByteTable table;
  return table;
}

// The special tokens known by name (RoBERTa's and GPT-2's), cut out of text
// whole when the vocabulary has them.
const std::vector<std::string>& known_specials() {
  static const std::vector<std::string> names = {"<s>", "</s>", "<pad>", "<unk>", "<mask>", "<|endoftext|>"};
  return names;
}

bool other_class(char32_t c) { return !unicode::is_regex_space(c) && !unicode::is_letter(c) && !unicode::is_number(c); }

// The end of the match of GPT-2's pattern at i (its alternatives in order).
size_t match_end(std::u32string_view t, size_t i) {
  const size_t n = t.size();
  if (t[i] == U'\'') {  // 's|'t|'re|'ve|'m|'ll|'d
    for (std::u32string_view suffix : {U"s", U"t", U"re", U"ve", U"m", U"ll", U"d"})
      if (t.substr(i + 1, suffix.size()) == suffix) return i + 1 + suffix.size();
  }
  // ' ?X+' for X = \p{L}, \p{N}, [^\s\p{L}\p{N}]: a space (U+0020 only) before a run of X joins it.
  for (bool (*in_class)(char32_t) : {+[](char32_t c) { return unicode::is_letter(c); },
                                      +[](char32_t c) { return unicode::is_number(c); }, &other_class}) {
    size_t j = i;
    if (t[j] == U' ' && j + 1 < n && in_class(t[j + 1])) ++j;
    if (!in_class(t[j])) continue;
    while (j < n && in_class(t[j])) ++j;
    return j;
  }
  // \s+(?!\S) | \s+ : a whitespace run, less its last character when a word follows it.
  size_t j = i;
  while (j < n && unicode::is_regex_space(t[j])) ++j;
  if (j == n || j - i == 1) return j;
  return j - 1;
}

std::string json_path_error(const std::string& path, const std::string& what) { return path + ": " + what; }

}  // namespace

char32_t byte_to_unicode(uint8_t b) { return byte_table().to_unicode[b]; }

std::vector<CharSpan> gpt2_pretokenize(std::u32string_view text) {
  std::vector<CharSpan> out;
  for (size_t i = 0; i < text.size();) {
    const size_t end = match_end(text, i);
    out.push_back({static_cast<int32_t>(i), static_cast<int32_t>(end)});
    i = end;
  }
  return out;
}

BpeTokenizer::BpeTokenizer(std::vector<std::string> tokens,
                           const std::vector<std::pair<std::string, std::string>>& merges,
                           const std::vector<std::string>& extra_specials, const std::string& origin)
    : tokens_(std::move(tokens)) {
  ORDO_CHECK(!tokens_.empty(), origin, ": the vocabulary is empty");
  for (size_t i = 0; i < tokens_.size(); ++i) {
    ORDO_CHECK(!tokens_[i].empty(), origin, ": no token has id ", i, " (ids must run 0..", tokens_.size() - 1,
               " without gaps)");
    token_bytes_.push_back(utf8::decode_or_throw(tokens_[i], origin + ": token " + std::to_string(i)).size());
    auto [it, inserted] = ids_.emplace(tokens_[i], static_cast<int32_t>(i));
    ORDO_CHECK(inserted, origin, ": token '", tokens_[i], "' has two ids, ", it->second, " and ", i);
  }
  for (int b = 0; b < 256; ++b) {
    std::string symbol;
    utf8::append(symbol, byte_to_unicode(static_cast<uint8_t>(b)));
    byte_ids_[b] = id(symbol);
    ORDO_CHECK(byte_ids_[b] >= 0, origin, ": byte 0x", "0123456789ABCDEF"[b >> 4], "0123456789ABCDEF"[b & 15],
               " has no token ('", symbol, "'): not a byte-level BPE vocabulary (it must hold all 256 bytes)");
  }
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [a, b] = merges[r];
    const int32_t left = id(a), right = id(b), result = id(a + b);
    ORDO_CHECK(left >= 0 && right >= 0 && result >= 0, origin, ": merge ", r + 1, " '", a, " ", b, "': '",
               left < 0 ? a : right < 0 ? b : a + b, "' is not in the vocabulary");
    const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32 | static_cast<uint32_t>(right);
    // A repeated pair keeps its first (lowest) rank, as HF's BPE does.
    if (merges_.emplace(key, Merge{static_cast<int32_t>(r), result}).second) merge_list_.emplace_back(left, right);
  }
  special_.assign(tokens_.size(), false);
  std::vector<std::string> specials = known_specials();
  specials.insert(specials.end(), extra_specials.begin(), extra_specials.end());
  for (const std::string& s : specials) {
    const int32_t sid = id(s);
    if (sid < 0 || special_[static_cast<size_t>(sid)]) continue;
    special_[static_cast<size_t>(sid)] = true;
    specials_.push_back(s);
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const std::string& x, const std::string& y) { return x.size() > y.size(); });
  for (const std::string& s : specials_) special_cps_.push_back(utf8::decode_or_throw(s, "a special token"));
  const int32_t bos = id("<s>"), eos = id("</s>"), endoftext = id("<|endoftext|>");
  if (bos >= 0 && eos >= 0) {  // RoBERTa: <s> a </s> </s> b </s>
    layout_.cls = bos, layout_.sep = eos, layout_.pair_separators = 2, layout_.second_segment = 0;
  }
  layout_.unk = id("<unk>");
  layout_.mask = id("<mask>");
  // GPT-2 has no padding token; HF's recipes pad with <|endoftext|> (the mask hides it).
  layout_.pad = id("<pad>") >= 0 ? id("<pad>") : endoftext;
}

BpeTokenizer BpeTokenizer::load(const std::string& vocab_json, const std::string& merges_txt) {
  json::Value v;
  try {
    v = json::parse(read_file(vocab_json));
  } catch (const Error& e) {
    throw Error(json_path_error(vocab_json, e.what()));
  }
  ORDO_CHECK(v.is_object(), vocab_json, ": expected an object {\"token\": id, ...}");
  // N tokens hold the ids 0..N-1. An id beyond that means one of them is
  // missing: the error names the missing id, not the token past the end.
  std::vector<std::string> tokens(v.size());
  std::vector<bool> given(v.size(), false);
  std::string beyond;  // a token whose id is N or more
  int64_t beyond_id = -1;
  for (const auto& [token, idv] : v.items()) {
    ORDO_CHECK(idv.is_number(), vocab_json, ": the id of '", token, "' is not a number");
    const int64_t i = idv.as_int();
    ORDO_CHECK(i >= 0, vocab_json, ": token '", token, "' has the negative id ", i);
    if (i >= static_cast<int64_t>(tokens.size())) {
      beyond = token, beyond_id = i;
      continue;
    }
    ORDO_CHECK(!given[static_cast<size_t>(i)], vocab_json, ": id ", i, " is given to both '",
               tokens[static_cast<size_t>(i)], "' and '", token, "'");
    tokens[static_cast<size_t>(i)] = token;
    given[static_cast<size_t>(i)] = true;
  }
  if (beyond_id >= 0) {
    const size_t missing = static_cast<size_t>(std::find(given.begin(), given.end(), false) - given.begin());
    throw Error(detail::cat(vocab_json, ": no token has id ", missing, ": the ", tokens.size(),
                            " tokens must hold the ids 0..", tokens.size() - 1, " without gaps, but '", beyond,
                            "' has id ", beyond_id));
  }
  const std::string bytes = read_file(merges_txt);
  std::vector<std::pair<std::string, std::string>> merges;
  size_t line_no = 0;
  for (size_t start = 0; start < bytes.size();) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    std::string line = bytes.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    ORDO_CHECK(space != std::string::npos && space > 0 && space + 1 < line.size() &&
                   line.find(' ', space + 1) == std::string::npos,
               merges_txt, " line ", line_no, ": expected two tokens separated by one space, got '", line, "'");
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return BpeTokenizer(std::move(tokens), merges, {}, vocab_json + " + " + merges_txt);
}

BpeTokenizer BpeTokenizer::load_tokenizer_json(const std::string& path) {
  json::Value v;
  try {
    v = json::parse(read_file(path));
  } catch (const Error& e) {
    throw Error(json_path_error(path, e.what()));
  }
  auto kind_of = [](const json::Value* o) -> std::string {
    const json::Value* t = o && o->is_object() ? o->find("type") : nullptr;
    return t && t->is_string() ? t->as_string() : o && !o->is_null() ? "?" : "none";
  };
  ORDO_CHECK(v.is_object(), path, ": expected a tokenizer.json object");
  const json::Value* model = v.find("model");
  ORDO_CHECK(kind_of(model) == "BPE", path, ": model type '", kind_of(model),
             "' is not BPE (ordo reads byte-level BPE tokenizer.json files and WordPiece vocab.txt)");
  const json::Value* pre = v.find("pre_tokenizer");
  ORDO_CHECK(kind_of(pre) == "ByteLevel", path, ": pre_tokenizer '", kind_of(pre),
             "' is not ByteLevel (GPT-2's); ordo's BPE is byte-level only");
  const json::Value* prefix = pre->find("add_prefix_space");
  ORDO_CHECK(!prefix || !prefix->is_bool() || !prefix->as_bool(), path,
             ": add_prefix_space true is not supported (GPT-2's and RoBERTa's tokenizers have false)");
  const json::Value* use_regex = pre->find("use_regex");
  ORDO_CHECK(!use_regex || !use_regex->is_bool() || use_regex->as_bool(), path,
             ": use_regex false is not supported (ordo splits with GPT-2's pattern)");
  ORDO_CHECK(kind_of(v.find("normalizer")) == "none", path, ": normalizer '", kind_of(v.find("normalizer")),
             "' is not supported (byte-level BPE has none)");
  for (const char* key : {"ignore_merges", "byte_fallback"}) {
    const json::Value* flag = model->find(key);
    ORDO_CHECK(!flag || !flag->is_bool() || !flag->as_bool(), path, ": model.", key, " true is not supported");
  }
  const json::Value* vocab = model->find("vocab");
  const json::Value* merges_v = model->find("merges");
  ORDO_CHECK(vocab && vocab->is_object() && merges_v && merges_v->is_array(), path,
             ": model.vocab must be an object and model.merges an array");
  std::vector<std::string> tokens(vocab->size());
  auto place = [&](const std::string& token, int64_t i) {
    if (i >= static_cast<int64_t>(tokens.size()) && i < static_cast<int64_t>(tokens.size()) + 1024)
      tokens.resize(static_cast<size_t>(i) + 1);
    ORDO_CHECK(i >= 0 && i < static_cast<int64_t>(tokens.size()), path, ": token '", token, "' has id ", i,
               ", outside 0..", tokens.size() - 1);
    ORDO_CHECK(tokens[static_cast<size_t>(i)].empty() || tokens[static_cast<size_t>(i)] == token, path, ": id ", i,
               " is given to both '", tokens[static_cast<size_t>(i)], "' and '", token, "'");
    tokens[static_cast<size_t>(i)] = token;
  };
  for (const auto& [token, idv] : vocab->items()) {
    ORDO_CHECK(idv.is_number(), path, ": the id of '", token, "' is not a number");
    place(token, idv.as_int());
  }
  std::vector<std::string> specials;
  if (const json::Value* added = v.find("added_tokens"); added && added->is_array()) {
    for (const json::Value& a : added->as_array()) {
      ORDO_CHECK(a.is_object() && a.find("content") && a.find("id"), path, ": an added token lacks content or id");
      place(a["content"].as_string(), a["id"].as_int());
      if (const json::Value* s = a.find("special"); s && s->is_bool() && s->as_bool())
        specials.push_back(a["content"].as_string());
    }
  }
  std::vector<std::pair<std::string, std::string>> merges;
  for (const json::Value& m : merges_v->as_array()) {
    if (m.is_string()) {  // "a b" (tokenizers before 0.20)
      const std::string& s = m.as_string();
      const size_t space = s.find(' ');
      ORDO_CHECK(space != std::string::npos, path, ": merge '", s, "' is not two tokens separated by a space");
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else {  // ["a", "b"]
      ORDO_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), path,
                 ": a merge is neither \"a b\" nor [\"a\", \"b\"]");
      merges.emplace_back(m[0].as_string(), m[1].as_string());
    }
  }
  return BpeTokenizer(std::move(tokens), merges, specials, path);
}

int32_t BpeTokenizer::id(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

const std::string& BpeTokenizer::token(int32_t id) const {
  ORDO_CHECK(id >= 0 && id < id_bound(), "token id ", id, " is outside the vocabulary [0, ", id_bound(), ")");
  return tokens_[static_cast<size_t>(id)];
}

bool BpeTokenizer::is_special(int32_t id) const { return special_[static_cast<size_t>(id)]; }

bool BpeTokenizer::is_word(int32_t id) const {
  if (is_special(id)) return false;
  const std::u32string cps = utf8::decode_or_throw(tokens_[static_cast<size_t>(id)], "a vocabulary token");
  if (cps.size() < 2 || cps[0] != byte_to_unicode(' ')) return false;  // "Ġ" + the word
  return std::all_of(cps.begin() + 1, cps.end(), [](char32_t c) { return unicode::is_letter(c); });
}

void BpeTokenizer::encode_piece(std::string_view bytes, std::vector<int32_t>& symbols) const {
  symbols.clear();
  for (unsigned char b : bytes) symbols.push_back(byte_ids_[b]);
  // The pair of lowest rank is merged wherever it occurs, left to right, until none is listed.
  std::vector<int32_t> next;
  while (symbols.size() > 1) {
    const Merge* best = nullptr;
    int32_t left = -1, right = -1;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(symbols[i])) << 32 |
                           static_cast<uint32_t>(symbols[i + 1]);
      auto it = merges_.find(key);
      if (it != merges_.end() && (!best || it->second.rank < best->rank))
        best = &it->second, left = symbols[i], right = symbols[i + 1];
    }
    if (!best) break;
    next.clear();
    for (size_t i = 0; i < symbols.size(); ++i) {
      if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
        next.push_back(best->result);
        ++i;
      } else {
        next.push_back(symbols[i]);
      }
    }
    symbols.swap(next);
  }
}

Encoding BpeTokenizer::encode_with_offsets(std::string_view text) const {
  const std::u32string cps = utf8::decode_or_throw(text, "the text to tokenize");
  Encoding out;
  std::string piece;
  std::vector<int32_t> piece_chars, symbols;  // piece_chars[b]: the code point byte b of the piece came from
  auto encode_plain = [&](size_t begin, size_t end) {
    for (const CharSpan& span : gpt2_pretokenize(std::u32string_view(cps).substr(begin, end - begin))) {
      piece.clear();
      piece_chars.clear();
      for (int32_t c = span.begin; c < span.end; ++c) {
        const size_t before = piece.size();
        utf8::append(piece, cps[begin + static_cast<size_t>(c)]);
        piece_chars.insert(piece_chars.end(), piece.size() - before, static_cast<int32_t>(begin) + c);
      }
      encode_piece(piece, symbols);
      size_t byte = 0;
      for (int32_t s : symbols) {
        const size_t n = token_bytes_[static_cast<size_t>(s)];
        out.ids.push_back(s);
        out.offsets.push_back({piece_chars[byte], piece_chars[byte + n - 1] + 1});
        byte += n;
      }
    }
  };
  size_t plain = 0;
  for (size_t i = 0; i < cps.size();) {
    size_t matched = 0, which = 0;
    for (size_t k = 0; k < special_cps_.size() && !matched; ++k)
      if (std::u32string_view(cps).substr(i, special_cps_[k].size()) == special_cps_[k])
        matched = special_cps_[k].size(), which = k;
    if (!matched) {
      ++i;
      continue;
    }
    encode_plain(plain, i);
    out.ids.push_back(id(specials_[which]));
    out.offsets.push_back({static_cast<int32_t>(i), static_cast<int32_t>(i + matched)});
    i += matched;
    plain = i;
  }
  encode_plain(plain, cps.size());
  return out;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const { return encode_with_offsets(text).ids; }

std::vector<std::string> BpeTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> out;
  for (int32_t i : encode(text)) out.push_back(tokens_[static_cast<size_t>(i)]);
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string bytes;
  for (int32_t i : ids) {
    const std::string& t = token(i);
    if (is_special(i)) {
      bytes += t;
      continue;
    }
    for (char32_t c : utf8::decode_or_throw(t, "a token")) {
      auto it = byte_table().to_byte.find(c);
      if (it != byte_table().to_byte.end()) bytes.push_back(static_cast<char>(it->second));
      else utf8::append(bytes, c);
    }
  }
  // Bytes that are not UTF-8 (a token ending inside a character) become U+FFFD, as errors="replace".
  std::string text;
  for (size_t i = 0; i < bytes.size();) {
    std::u32string one;
    size_t n = 1;
    while (n <= 4 && i + n <= bytes.size() && !utf8::decode(std::string_view(bytes).substr(i, n), one)) ++n;
    if (n > 4 || i + n > bytes.size()) {
      utf8::append(text, 0xFFFD);
      ++i;
    } else {
      text.append(bytes, i, n);
      i += n;
    }
  }
  return text;
}

void BpeTokenizer::save(const std::string& dir) const {
  json::Value vocab = json::Value::object();
  for (size_t i = 0; i < tokens_.size(); ++i) vocab[tokens_[i]] = static_cast<int64_t>(i);
  write_file_atomic(dir + "/vocab.json", json::dump(vocab) + "\n");
  std::string merges = "#version: 0.2\n";
  for (const auto& [left, right] : merge_list_)
    merges += tokens_[static_cast<size_t>(left)] + " " + tokens_[static_cast<size_t>(right)] + "\n";
  write_file_atomic(dir + "/merges.txt", merges);
}

}  // namespace ordo::text
