#include "downstream/tsv.h"

#include "base/error.h"
#include "base/file_io.h"
#include "text/utf8.h"

namespace ordo::downstream {

std::vector<TsvRow> read_tsv(const std::string& path) { return parse_tsv(read_file(path), path); }

std::vector<TsvRow> parse_tsv(std::string_view bytes, const std::string& path) {
  if (bytes.substr(0, 3) == "\xEF\xBB\xBF") bytes.remove_prefix(3);
  std::vector<TsvRow> rows;
  int line = 0;
  size_t start = 0;
  while (start < bytes.size()) {
    ++line;
    // Python's universal newlines, as the processors open the files: \n, \r\n and a lone \r end a line.
    size_t end = bytes.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = bytes.size();
    std::string_view text = bytes.substr(start, end - start);
    start = end + (bytes.substr(end, 2) == "\r\n" ? 2 : 1);
    text::utf8::Invalid invalid;
    ORDO_CHECK(text::utf8::valid(text, &invalid), path, ":", line, ": invalid UTF-8 at byte ", invalid.offset + 1,
               " of the line (", invalid.reason, ")");
    ORDO_CHECK(text.find('\0') == std::string_view::npos, path, ":", line, ": holds a NUL byte");
    TsvRow row{line, {}};
    size_t field_start = 0;
    while (true) {
      const size_t tab = text.find('\t', field_start);
      row.fields.emplace_back(text.substr(field_start, tab == std::string_view::npos ? tab : tab - field_start));
      if (tab == std::string_view::npos) break;
      field_start = tab + 1;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string tsv_line(const std::vector<std::string>& fields, const std::string& what) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    ORDO_CHECK(fields[i].find_first_of("\t\n\r") == std::string::npos, what, ": field ", i + 1, " ('", fields[i],
               "') holds a tab or a line break, which an unquoted TSV file cannot hold");
    if (i > 0) out += '\t';
    out += fields[i];
  }
  out += '\n';
  return out;
}

std::string join_fields(const std::vector<std::string>& fields, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += separator;
    out += fields[i];
  }
  return out;
}

}  // namespace ordo::downstream
