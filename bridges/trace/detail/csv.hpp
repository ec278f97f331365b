// detail: the fast splitter and field parsers every trace reader uses (internal header).
//
// Alibaba's trace files are plain comma-separated text with no quoting and no escapes, so
// a field is simply the bytes between two commas. Lines end in "\n" or "\r\n". Columns in
// diagnostics are 1-based byte offsets of the field's first character ("file:line:column").
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridges/trace/read_options.hpp"
#include "messages/result.hpp"

namespace colony::trace::detail {

struct field {
  std::string_view text;
  std::uint32_t column = 1;  // 1-based byte column of the first character
};

// Walks text line by line. A final "\n" does not start another line; a trailing "\r" is
// dropped so CRLF files read like LF files.
class line_reader {
 public:
  explicit line_reader(std::string_view text) : text_(text) {}

  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    std::size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    line = text_.substr(pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = end + 1;
    ++line_;
    return true;
  }
  [[nodiscard]] std::uint32_t line_number() const { return line_; }
  // True if every remaining line is empty (blank lines at the end of a file are allowed).
  [[nodiscard]] bool rest_is_blank() const {
    for (std::size_t i = pos_; i < text_.size(); ++i)
      if (text_[i] != '\n' && text_[i] != '\r') return false;
    return true;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::uint32_t line_ = 0;
};

// Fields are short (a few bytes), so a plain byte loop beats one memchr call per field.
inline void split(std::string_view line, std::vector<field>& out) {
  out.clear();
  const char* b = line.data();
  const std::size_t n = line.size();
  std::size_t start = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i] == ',') {
      out.push_back(
          {std::string_view(b + start, i - start), static_cast<std::uint32_t>(start + 1)});
      start = i + 1;
    }
  }
  out.push_back({std::string_view(b + start, n - start), static_cast<std::uint32_t>(start + 1)});
}

// "file:line:column", the where of every row error.
[[nodiscard]] inline std::string where(std::string_view file, std::uint32_t line,
                                       std::uint32_t column) {
  std::string s(file);
  s += ':';
  s += std::to_string(line);
  s += ':';
  s += std::to_string(column);
  return s;
}

// One row under parse: typed field accessors that remember the first error (message and
// column) and count missing / invalid values, so a reader's row function stays a flat list.
class row_cursor {
 public:
  row_cursor(const std::vector<field>& fields, std::uint32_t line_len)
      : f_(fields), line_len_(line_len) {}

  [[nodiscard]] std::string_view text(std::size_t i) const { return f_[i].text; }
  [[nodiscard]] bool empty(std::size_t i) const { return f_[i].text.empty(); }
  [[nodiscard]] bool ok() const { return !failed_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] std::uint32_t column() const { return column_; }
  [[nodiscard]] std::size_t missing() const { return missing_; }
  [[nodiscard]] std::size_t invalid() const { return invalid_; }
  void count_invalid() { ++invalid_; }
  void count_missing() { ++missing_; }

  // Records an error at field i (the first one wins). Always returns false.
  bool fail(std::size_t i, std::string message) {
    if (!failed_) {
      failed_ = true;
      message_ = std::move(message);
      column_ = i < f_.size() ? f_[i].column : line_len_ + 1;
    }
    return false;
  }

  // "expected integer cpu_milli, got 'abc'"
  bool fail_expected(std::size_t i, std::string_view what, std::string_view name = {}) {
    std::string m = "expected ";
    m += what;
    if (!name.empty()) {
      m += ' ';
      m += name;
    }
    m += ", got ";
    if (f_[i].text.empty()) {
      m += "an empty field";
    } else {
      m += '\'';
      m += f_[i].text;
      m += '\'';
    }
    return fail(i, std::move(m));
  }

  bool required_text(std::size_t i, std::string_view name, std::string& out) {
    if (f_[i].text.empty()) return fail_expected(i, "non-empty", name);
    out.assign(f_[i].text);
    return true;
  }

  bool integer(std::size_t i, std::string_view name, std::int64_t& out) {
    std::string_view t = f_[i].text;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    if (t.empty() || ec != std::errc{} || p != t.data() + t.size())
      return fail_expected(i, "integer", name);
    return true;
  }
  bool non_negative_integer(std::size_t i, std::string_view name, std::int64_t& out) {
    if (!integer(i, name, out)) return false;
    if (out < 0) return fail_expected(i, "non-negative integer", name);
    return true;
  }
  // Empty = missing (never 0).
  bool optional_integer(std::size_t i, std::string_view name, std::optional<std::int64_t>& out) {
    if (f_[i].text.empty()) {
      ++missing_;
      out.reset();
      return true;
    }
    std::int64_t v = 0;
    if (!integer(i, name, v)) return false;
    out = v;
    return true;
  }

  bool number(std::size_t i, std::string_view name, double& out) {
    std::string_view t = f_[i].text;
    if (fast_decimal(t, out)) return true;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    if (t.empty() || ec != std::errc{} || p != t.data() + t.size() || out != out)
      return fail_expected(i, "number", name);
    return true;
  }
  // T = double or float (usage tables keep float: ~7 significant digits is plenty for a
  // percent or a normalised rate, and it halves the size of a multi-million-row table).
  template <class T>
  bool optional_number(std::size_t i, std::string_view name, std::optional<T>& out) {
    if (f_[i].text.empty()) {
      ++missing_;
      out.reset();
      return true;
    }
    double v = 0;
    if (!number(i, name, v)) return false;
    out = static_cast<T>(v);
    return true;
  }

  // Seconds on the trace clock ("123", "123.5") to integer milliseconds, exactly for up to
  // three decimals, rounded half up beyond. Negative times are malformed.
  bool seconds_ms(std::size_t i, std::string_view name, std::int64_t& out) {
    std::string_view t = f_[i].text;
    std::size_t dot = t.find('.');
    std::string_view whole = t.substr(0, dot);
    std::int64_t s = 0;
    auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), s);
    if (whole.empty() || whole[0] == '-' || ec != std::errc{} || p != whole.data() + whole.size() ||
        s > 9'000'000'000'000'000LL / 1000)
      return fail_expected(i, "non-negative seconds", name);
    std::int64_t ms = 0;
    if (dot != std::string_view::npos) {
      std::string_view frac = t.substr(dot + 1);
      if (frac.empty()) return fail_expected(i, "non-negative seconds", name);
      int scale = 100;
      for (std::size_t k = 0; k < frac.size(); ++k) {
        char c = frac[k];
        if (c < '0' || c > '9') return fail_expected(i, "non-negative seconds", name);
        if (k < 3) {
          ms += (c - '0') * scale;
          scale /= 10;
        } else if (k == 3 && c >= '5') {
          ms += 1;
        }
      }
    }
    out = s * 1000 + ms;
    return true;
  }
  bool optional_seconds_ms(std::size_t i, std::string_view name, std::optional<std::int64_t>& out) {
    if (f_[i].text.empty()) {
      ++missing_;
      out.reset();
      return true;
    }
    std::int64_t v = 0;
    if (!seconds_ms(i, name, v)) return false;
    out = v;
    return true;
  }

  // A percent in [0, 100]; the documented invalid markers -1 and 101 read as missing and
  // are counted; empty is missing; anything else outside the range is malformed. With
  // open_top, values above 101 are accepted (container_usage can exceed one machine share).
  template <class T>
  bool percent(std::size_t i, std::string_view name, std::optional<T>& out, bool open_top = false) {
    if (!optional_number(i, name, out)) return false;
    if (!out) return true;
    if (*out == T(-1) || *out == T(101)) {
      ++invalid_;
      out.reset();
      return true;
    }
    if (*out < T(0) || (!open_top && *out > T(100)))
      return fail_expected(i,
                           open_top ? "percent >= 0 (or -1/101 for invalid)"
                                    : "percent in [0, 100] (or -1/101 for invalid)",
                           name);
    return true;
  }

 private:
  // Plain decimals ("-12", "43.04") with at most 15 significant digits: mantissa / 10^k is
  // one correctly rounded division of two exact doubles, so the result equals from_chars'.
  // Anything else (exponents, long digit strings, junk) goes to from_chars.
  static bool fast_decimal(std::string_view t, double& out) {
    static constexpr double pow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    std::size_t i = 0;
    bool neg = false;
    if (i < t.size() && t[i] == '-') neg = true, ++i;
    std::uint64_t m = 0;
    int digits = 0, frac = 0;
    bool dot = false, any = false;
    for (; i < t.size(); ++i) {
      char c = t[i];
      if (c >= '0' && c <= '9') {
        m = m * 10 + static_cast<std::uint64_t>(c - '0');
        any = true;
        if (++digits > 15) return false;
        frac += dot ? 1 : 0;
      } else if (c == '.' && !dot) {
        dot = true;
      } else {
        return false;
      }
    }
    if (!any || (dot && frac == 0)) return false;
    double v = static_cast<double>(m) / pow10[frac];
    out = neg ? -v : v;
    return true;
  }

  const std::vector<field>& f_;
  std::uint32_t line_len_;
  bool failed_ = false;
  std::string message_;
  std::uint32_t column_ = 1;
  std::size_t missing_ = 0;
  std::size_t invalid_ = 0;
};

// Reads a whole file into memory (the readers parse from memory).
[[nodiscard]] result<std::string> slurp(const std::string& path);

// The loop every reader shares: optional header check, field-count check, row parse,
// strict error or counted warning. parse_row(row_cursor&, Row&) returns false on error.
template <class Row, class ParseRow>
[[nodiscard]] result<trace_table<Row>> parse_rows(std::string_view text, std::string_view file,
                                                  const read_options& opt, std::size_t n_fields,
                                                  std::string_view header, ParseRow&& parse_row) {
  trace_table<Row> table;
  table.file.assign(file);
  line_reader lines(text);
  std::string_view line;
  std::vector<field> fields;
  fields.reserve(n_fields + 2);
  // One row per line: reserving up front avoids regrowing (and re-faulting) a large table.
  table.rows.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  // A UTF-8 byte-order mark is not part of any column name or value.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3), lines = line_reader(text);
  if (!header.empty()) {
    if (!lines.next(line))
      return fail(errc::invalid_input,
                  "expected header '" + std::string(header) + "', got an empty file",
                  where(file, 1, 1));
    if (line != header) {
      std::vector<field> want;
      split(header, want);
      split(line, fields);
      for (std::size_t i = 0; i < want.size(); ++i) {
        if (i >= fields.size())
          return fail(errc::invalid_input,
                      "expected header column " + std::to_string(i + 1) + " '" +
                          std::string(want[i].text) + "', got end of line",
                      where(file, 1, static_cast<std::uint32_t>(line.size() + 1)));
        if (fields[i].text != want[i].text)
          return fail(errc::invalid_input,
                      "expected header column " + std::to_string(i + 1) + " '" +
                          std::string(want[i].text) + "', got '" + std::string(fields[i].text) +
                          "'",
                      where(file, 1, fields[i].column));
      }
      return fail(errc::invalid_input,
                  "expected header '" + std::string(header) + "', got extra column '" +
                      std::string(fields[want.size()].text) + "'",
                  where(file, 1, fields[want.size()].column));
    }
  }
  auto bad = [&](std::uint32_t ln, std::uint32_t col, std::string msg) -> bool {
    if (!opt.skip_bad_rows) return false;
    table.warnings.push_back({where(file, ln, col), std::move(msg)});
    return true;
  };
  while (lines.next(line)) {
    const std::uint32_t ln = lines.line_number();
    if (line.empty()) {
      if (lines.rest_is_blank()) break;  // blank lines at the end of a file are fine
      std::string msg = "expected " + std::to_string(n_fields) + " fields, got an empty line";
      if (bad(ln, 1, msg)) continue;
      return fail(errc::invalid_input, std::move(msg), where(file, ln, 1));
    }
    split(line, fields);
    if (fields.size() != n_fields) {
      std::uint32_t col = fields.size() > n_fields ? fields[n_fields].column
                                                   : static_cast<std::uint32_t>(line.size() + 1);
      std::string msg =
          "expected " + std::to_string(n_fields) + " fields, got " + std::to_string(fields.size());
      if (bad(ln, col, msg)) continue;
      return fail(errc::invalid_input, std::move(msg), where(file, ln, col));
    }
    row_cursor cur(fields, static_cast<std::uint32_t>(line.size()));
    Row& row = table.rows.emplace_back();  // parsed in place; dropped again if bad
    row.line = ln;
    if (!parse_row(cur, row) || !cur.ok()) {
      table.rows.pop_back();
      if (bad(ln, cur.column(), cur.message())) continue;
      return fail(errc::invalid_input, cur.message(), where(file, ln, cur.column()));
    }
    table.missing_values += cur.missing();
    table.invalid_values += cur.invalid();
  }
  return table;
}

// The streaming form of parse_rows for headerless tables too large to hold: reads the file
// in 4 MiB chunks, parses each line into one reused Row and hands it to sink(const Row&).
// Same checks and diagnostics as parse_rows; rows arrive in file order (no sorting).
template <class Row, class ParseRow, class Sink>
[[nodiscard]] result<scan_summary> scan_rows(const std::string& path, const read_options& opt,
                                             std::size_t n_fields, ParseRow&& parse_row,
                                             Sink&& sink) {
  constexpr std::size_t chunk = 4u << 20;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return fail(errno == ENOENT ? errc::not_found : errc::unavailable, "cannot open", path);
  scan_summary sum;
  sum.file = path;
  std::vector<field> fields;
  fields.reserve(n_fields + 2);
  std::vector<std::uint32_t> blanks;  // blank lines not yet known to be trailing
  std::uint32_t ln = 0;
  Row row{};
  // Returns an error to stop with, or nothing.
  auto step = [&](std::string_view line) -> std::optional<error> {
    ++ln;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (ln == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
    auto bad = [&](std::uint32_t at, std::uint32_t col, std::string msg) -> std::optional<error> {
      if (!opt.skip_bad_rows)
        return error{errc::invalid_input, std::move(msg), where(path, at, col)};
      sum.warnings.push_back({where(path, at, col), std::move(msg)});
      return std::nullopt;
    };
    if (line.empty()) {
      blanks.push_back(ln);
      return std::nullopt;
    }
    for (std::uint32_t b : blanks)
      if (auto e = bad(b, 1, "expected " + std::to_string(n_fields) + " fields, got an empty line"))
        return e;
    blanks.clear();
    split(line, fields);
    if (fields.size() != n_fields) {
      std::uint32_t col = fields.size() > n_fields ? fields[n_fields].column
                                                   : static_cast<std::uint32_t>(line.size() + 1);
      return bad(
          ln, col,
          "expected " + std::to_string(n_fields) + " fields, got " + std::to_string(fields.size()));
    }
    row_cursor cur(fields, static_cast<std::uint32_t>(line.size()));
    row = Row{};
    row.line = ln;
    if (!parse_row(cur, row) || !cur.ok()) return bad(ln, cur.column(), cur.message());
    sum.missing_values += cur.missing();
    sum.invalid_values += cur.invalid();
    ++sum.rows;
    sink(static_cast<const Row&>(row));
    return std::nullopt;
  };
  std::string buf;
  std::size_t pos = 0;
  for (;;) {
    buf.erase(0, pos);
    pos = 0;
    const std::size_t old = buf.size();
    buf.resize(old + chunk);
    const std::size_t n = std::fread(buf.data() + old, 1, chunk, f.get());
    buf.resize(old + n);
    if (n < chunk && std::ferror(f.get())) return fail(errc::unavailable, "read error", path);
    const bool eof = n < chunk;
    for (std::size_t nl; (nl = buf.find('\n', pos)) != std::string::npos; pos = nl + 1)
      if (auto e = step(std::string_view(buf).substr(pos, nl - pos)))
        return tl::unexpected(std::move(*e));
    if (eof) {
      if (pos < buf.size())
        if (auto e = step(std::string_view(buf).substr(pos))) return tl::unexpected(std::move(*e));
      break;
    }
  }
  return sum;
}

// Sorts rows by an int64 key (time in ms); ties keep input order. Sorts (key, index) pairs
// and moves each row once, which is far cheaper than a stable sort of wide rows; input that
// is already in order (openb default, v2018 machine_meta per time) is left untouched.
template <class Row, class Key>
void stable_sort_by(std::vector<Row>& rows, Key key) {
  auto ordered = [&] {
    for (std::size_t i = 1; i < rows.size(); ++i)
      if (key(rows[i]) < key(rows[i - 1])) return false;
    return true;
  };
  if (ordered()) return;
  std::vector<std::pair<std::int64_t, std::uint32_t>> order(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    order[i] = {key(rows[i]), static_cast<std::uint32_t>(i)};
  std::sort(order.begin(), order.end());  // (key, index): ties by original position
  // Apply the permutation in place, cycle by cycle (no second table in memory).
  std::vector<std::uint32_t> from(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) from[i] = order[i].second;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (from[i] == i) continue;
    Row tmp = std::move(rows[i]);
    std::size_t j = i;
    for (;;) {
      const std::size_t k = from[j];
      from[j] = static_cast<std::uint32_t>(j);
      if (k == i) {
        rows[j] = std::move(tmp);
        break;
      }
      rows[j] = std::move(rows[k]);
      j = k;
    }
  }
}

}  // namespace colony::trace::detail
