// Tab-separated files as GLUE ships them: one record per line, fields split on
// every tab, nothing quoted (Python's csv.reader with quotechar=None, which is
// how BERT's and HuggingFace's GLUE processors read them) — a quote is just a
// character. A UTF-8 byte-order mark at the start (utf-8-sig) is dropped;
// lines end as Python's universal newlines end them (\n, \r\n or a lone \r);
// the last line may lack its line end.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ordo::downstream {

struct TsvRow {
  int line = 0;  // 1-based line number in the file, for errors (path:line)
  std::vector<std::string> fields;
};

// The rows of a file. Throws ordo::Error naming path:line for invalid UTF-8
// (the processors decode the files as UTF-8) and for a NUL byte.
std::vector<TsvRow> read_tsv(const std::string& path);
// The same, from bytes already read; `path` names them in errors.
std::vector<TsvRow> parse_tsv(std::string_view bytes, const std::string& path);

// One line, fields joined by tabs, ended by '\n'. A field holding a tab or a
// line break cannot be written unquoted: ordo::Error naming `what`.
std::string tsv_line(const std::vector<std::string>& fields, const std::string& what);

// "index\tprediction": the fields joined by tabs, for messages.
std::string join_fields(const std::vector<std::string>& fields, std::string_view separator = "\\t");

}  // namespace ordo::downstream
