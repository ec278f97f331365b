#include "actors/admission/profile_loader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

namespace colony::admission {

using nlohmann::json;

namespace {

// ---- where an error is ----------------------------------------------------------------------

// JSON pointer ("/spec/selector") -> 1-based line, filled while converting YAML.
using line_table = std::map<std::string, int, std::less<>>;

struct locator {
  std::string source;
  const line_table* lines = nullptr;

  // "<source>:<line>" of the pointer, or of its nearest ancestor that has a line.
  [[nodiscard]] std::string where(std::string_view pointer) const {
    if (lines == nullptr) return source;
    while (true) {
      if (auto it = lines->find(pointer); it != lines->end())
        return source + ":" + std::to_string(it->second);
      if (pointer.empty()) return source;
      pointer = pointer.substr(0, pointer.rfind('/'));
    }
  }
};

// A position in the document: the field path people read, the JSON pointer lines are keyed by.
struct path {
  std::string field;    // "items[0].spec.selector"
  std::string pointer;  // "/items/0/spec/selector"

  [[nodiscard]] path child(std::string_view key) const {
    std::string esc;
    for (char c : key) {
      if (c == '~')
        esc += "~0";
      else if (c == '/')
        esc += "~1";
      else
        esc += c;
    }
    return {field.empty() ? std::string(key) : field + "." + std::string(key), pointer + "/" + esc};
  }
  [[nodiscard]] path entry(std::string_view key) const {  // a key of a free-form map
    path p = child(key);
    p.field = field + "[" + std::string(key) + "]";
    return p;
  }
  [[nodiscard]] path index(std::size_t i) const {
    return {field + "[" + std::to_string(i) + "]", pointer + "/" + std::to_string(i)};
  }
};

tl::unexpected<error> bad(const locator& loc, const path& p, const std::string& problem) {
  return fail(errc::invalid_input,
              (p.field.empty() ? std::string("<root>") : p.field) + ": " + problem,
              loc.where(p.pointer));
}

std::string dquote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string type_of(const json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number_float()) return "number";
  return j.type_name();
}

// ---- YAML to JSON, keeping lines ------------------------------------------------------------

bool is_int_text(std::string_view s, std::int64_t& out) {
  std::string_view t = s;
  bool neg = false;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    neg = t[0] == '-';
    t.remove_prefix(1);
  }
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o')) {
    if (s[0] == '-' || s[0] == '+') return false;  // YAML 1.2 core: no sign on 0x / 0o
    base = t[1] == 'x' ? 16 : 8;
    t.remove_prefix(2);
  }
  if (t.empty()) return false;
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (ec != std::errc() || ptr != t.data() + t.size()) return false;
  if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
  out = neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return true;
}

bool is_float_text(std::string_view s, double& out) {
  // [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?  and .inf / .nan forms.
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf" || s == "+.Inf" || s == "+.INF") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") {
    out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  std::size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    std::size_t exp_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  if (i != s.size()) return false;
  std::string copy(s[0] == '+' ? s.substr(1) : s);
  std::istringstream in(copy);
  in.imbue(std::locale::classic());
  in >> out;
  return !in.fail();
}

json resolve_plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  std::int64_t i = 0;
  if (is_int_text(s, i)) return i;
  double d = 0;
  if (is_float_text(s, d)) return d;
  return s;
}

int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

result<json> yaml_to_json(const YAML::Node& n, const std::string& pointer, line_table& lines,
                          const std::string& source) {
  if (const int l = line_of(n); l > 0) lines.try_emplace(pointer, l);
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& tag = n.Tag();
      if (tag == "!" || tag == "tag:yaml.org,2002:str") return json(n.Scalar());  // quoted or !!str
      return resolve_plain_scalar(n.Scalar());
    }
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      std::size_t i = 0;
      for (const auto& item : n) {
        auto v = yaml_to_json(item, pointer + "/" + std::to_string(i++), lines, source);
        if (!v) return v;
        arr.push_back(std::move(*v));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar())
          return fail(errc::invalid_input, "map keys must be strings",
                      source + ":" + std::to_string(line_of(kv.first)));
        const std::string& key = kv.first.Scalar();
        std::string esc;
        for (char c : key) {
          if (c == '~')
            esc += "~0";
          else if (c == '/')
            esc += "~1";
          else
            esc += c;
        }
        const std::string child = pointer + "/" + esc;
        if (const int l = line_of(kv.first); l > 0) lines.insert_or_assign(child, l);
        auto v = yaml_to_json(kv.second, child, lines, source);
        if (!v) return v;
        obj[key] = std::move(*v);
      }
      return obj;
    }
  }
  return json(nullptr);
}

// ---- typed field readers ----------------------------------------------------------------------

result<std::string> read_string(const json& j, const path& p, const locator& loc) {
  if (!j.is_string()) return bad(loc, p, "Invalid value: must be a string, got " + type_of(j));
  return j.get<std::string>();
}

// A map[string]string; null is empty.
result<string_map> read_string_map(const json& j, const path& p, const locator& loc) {
  string_map out;
  if (j.is_null()) return out;
  if (!j.is_object())
    return bad(loc, p, "Invalid value: must be a map of strings, got " + type_of(j));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_string())
      return bad(loc, p.entry(it.key()),
                 "Invalid value: must be a string, got " + type_of(*it) + " (quote it in YAML)");
    out.emplace(it.key(), it->get<std::string>());
  }
  return out;
}

result<std::int64_t> read_int(const json& j, const path& p, const locator& loc, std::int64_t lo,
                              std::int64_t hi, const char* what) {
  if (!j.is_number_integer())
    return bad(loc, p, std::string("Invalid value: must be ") + what + ", got " + type_of(j));
  if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
    return bad(loc, p, "Invalid value: " + j.dump() + ": out of " + what + " range");
  const std::int64_t v = j.get<std::int64_t>();
  if (v < lo || v > hi)
    return bad(loc, p, "Invalid value: " + std::to_string(v) + ": out of " + what + " range");
  return v;
}

// Rejects keys outside `known` (the CRD's properties) so that typos surface.
result<void> only_known(const json& obj, const path& p, const locator& loc,
                        std::initializer_list<std::string_view> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      return bad(loc, p.child(it.key()), "unknown field (not in the ClusterColocationProfile CRD)");
  return {};
}

result<std::optional<label_selector>> read_selector(const json& j, const path& p,
                                                    const locator& loc) {
  if (j.is_null()) return std::optional<label_selector>{};
  if (!j.is_object())
    return bad(loc, p, "Invalid value: must be a label selector object, got " + type_of(j));
  if (auto ok = only_known(j, p, loc, {"matchLabels", "matchExpressions"}); !ok)
    return tl::unexpected(ok.error());
  label_selector s;
  if (auto it = j.find("matchLabels"); it != j.end()) {
    auto m = read_string_map(*it, p.child("matchLabels"), loc);
    if (!m) return tl::unexpected(m.error());
    s.match_labels = std::move(*m);
  }
  if (auto it = j.find("matchExpressions"); it != j.end() && !it->is_null()) {
    const path ep = p.child("matchExpressions");
    if (!it->is_array()) return bad(loc, ep, "Invalid value: must be a list, got " + type_of(*it));
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& e = (*it)[i];
      const path ip = ep.index(i);
      if (!e.is_object())
        return bad(loc, ip, "Invalid value: must be an object, got " + type_of(e));
      if (auto ok = only_known(e, ip, loc, {"key", "operator", "values"}); !ok)
        return tl::unexpected(ok.error());
      label_selector_requirement r;
      auto key = e.find("key");
      if (key == e.end() || key->is_null()) return bad(loc, ip.child("key"), "Required value");
      auto k = read_string(*key, ip.child("key"), loc);
      if (!k) return tl::unexpected(k.error());
      r.key = std::move(*k);
      auto op = e.find("operator");
      if (op == e.end() || op->is_null()) return bad(loc, ip.child("operator"), "Required value");
      auto o = read_string(*op, ip.child("operator"), loc);
      if (!o) return tl::unexpected(o.error());
      if (*o == "In")
        r.op = selector_operator::in;
      else if (*o == "NotIn")
        r.op = selector_operator::not_in;
      else if (*o == "Exists")
        r.op = selector_operator::exists;
      else if (*o == "DoesNotExist")
        r.op = selector_operator::does_not_exist;
      else
        return bad(loc, ip.child("operator"),
                   "Unsupported value: " + dquote(*o) +
                       ": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"");
      if (auto v = e.find("values"); v != e.end() && !v->is_null()) {
        const path vp = ip.child("values");
        if (!v->is_array())
          return bad(loc, vp, "Invalid value: must be a list of strings, got " + type_of(*v));
        for (std::size_t k2 = 0; k2 < v->size(); ++k2) {
          auto s2 = read_string((*v)[k2], vp.index(k2), loc);
          if (!s2) return tl::unexpected(s2.error());
          r.values.push_back(std::move(*s2));
        }
      }
      s.match_expressions.push_back(std::move(r));
    }
  }
  if (auto ok = validate_label_selector(s, p.field); !ok) {
    // The message names the part; point at the selector's line.
    return fail(errc::invalid_input, ok.error().message, loc.where(p.pointer));
  }
  return std::optional<label_selector>(std::move(s));
}

// intstr.GetScaledValueFromIntOrPercent(v, 100, false): an int as is; "N%" -> N*100/100.
result<std::optional<std::int64_t>> read_probability(const json& j, const path& p,
                                                     const locator& loc) {
  if (j.is_null()) return std::optional<std::int64_t>{};
  if (j.is_number_integer()) {
    auto v = read_int(j, p, loc, std::numeric_limits<std::int32_t>::min(),
                      std::numeric_limits<std::int32_t>::max(), "an int32");
    if (!v) return tl::unexpected(v.error());
    return std::optional<std::int64_t>(*v);
  }
  if (!j.is_string())
    return bad(
        loc, p,
        "Invalid value: must be an integer or a percent string like \"50%\", got " + type_of(j));
  const std::string s = j.get<std::string>();
  if (s.size() < 2 || s.back() != '%')
    return bad(loc, p,
               "Invalid value: " + dquote(s) + ": invalid type: string is not a percentage");
  std::string_view num(s.data(), s.size() - 1);
  // Go's strconv.Atoi: optional sign, decimal digits only.
  std::string_view digits = num;
  bool neg = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    neg = digits[0] == '-';
    digits.remove_prefix(1);
  }
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size())
    return bad(loc, p, "Invalid value: " + dquote(s) + ": not an integer percentage");
  if (neg) v = -v;
  // Scaled to 100 and rounded down: exactly the percent for any integer percent.
  return std::optional<std::int64_t>(v);
}

result<cluster_colocation_profile> read_profile(const json& obj, const path& p,
                                                const locator& loc) {
  if (!obj.is_object())
    return bad(loc, p,
               "Invalid value: a ClusterColocationProfile must be an object, got " + type_of(obj));
  if (auto it = obj.find("apiVersion"); it != obj.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>() != colocation_profile_api_version)
      return bad(loc, p.child("apiVersion"),
                 "Unsupported value: " + it->dump() + ": want \"" +
                     std::string(colocation_profile_api_version) + "\"");
  }
  if (auto it = obj.find("kind"); it != obj.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>() != colocation_profile_kind)
      return bad(loc, p.child("kind"),
                 "Unsupported value: " + it->dump() + ": want \"" +
                     std::string(colocation_profile_kind) + "\"");
  }
  if (auto ok = only_known(obj, p, loc, {"apiVersion", "kind", "metadata", "spec", "status"}); !ok)
    return tl::unexpected(ok.error());

  cluster_colocation_profile out;
  const path mp = p.child("metadata");
  auto md = obj.find("metadata");
  if (md == obj.end() || md->is_null())
    return bad(loc, mp.child("name"), "Required value: name is required");
  if (!md->is_object())
    return bad(loc, mp, "Invalid value: must be an object, got " + type_of(*md));
  auto name = md->find("name");
  if (name == md->end() || name->is_null())
    return bad(loc, mp.child("name"), "Required value: name is required");
  auto n = read_string(*name, mp.child("name"), loc);
  if (!n) return tl::unexpected(n.error());
  if (std::string problem = dns1123_subdomain_problem(*n); !problem.empty())
    return bad(loc, mp.child("name"), "Invalid value: " + dquote(*n) + ": " + problem);
  out.name = std::move(*n);
  if (auto it = md->find("labels"); it != md->end()) {
    auto m = read_string_map(*it, mp.child("labels"), loc);
    if (!m) return tl::unexpected(m.error());
    out.metadata_labels = std::move(*m);
  }
  if (auto it = md->find("annotations"); it != md->end()) {
    auto m = read_string_map(*it, mp.child("annotations"), loc);
    if (!m) return tl::unexpected(m.error());
    out.metadata_annotations = std::move(*m);
  }

  auto sp_it = obj.find("spec");
  if (sp_it == obj.end() || sp_it->is_null())
    return out;  // an empty profile: matches all, changes nothing
  const json& spec = *sp_it;
  const path sp = p.child("spec");
  if (!spec.is_object())
    return bad(loc, sp, "Invalid value: must be an object, got " + type_of(spec));
  if (auto ok = only_known(
          spec, sp, loc,
          {"namespaceSelector", "selector", "probability", "qosClass", "priorityClassName",
           "koordinatorPriority", "labels", "annotations", "labelKeysMapping",
           "annotationKeysMapping", "labelSuffixes", "schedulerName", "patch"});
      !ok)
    return tl::unexpected(ok.error());

  for (auto it = spec.begin(); it != spec.end(); ++it) {
    const std::string& k = it.key();
    const json& v = *it;
    const path fp = sp.child(k);
    if (k == "namespaceSelector" || k == "selector") {
      auto s = read_selector(v, fp, loc);
      if (!s) return tl::unexpected(s.error());
      (k == "selector" ? out.selector : out.namespace_selector) = std::move(*s);
    } else if (k == "probability") {
      auto pr = read_probability(v, fp, loc);
      if (!pr) return tl::unexpected(pr.error());
      out.probability = *pr;
    } else if (k == "qosClass") {
      if (v.is_null()) continue;
      auto s = read_string(v, fp, loc);
      if (!s) return tl::unexpected(s.error());
      if (s->empty()) continue;  // omitempty: not set
      out.qos = get_pod_qos_class_by_name(*s);
      if (out.qos == qos_class::none)
        return bad(loc, fp,
                   "Unsupported value: " + dquote(*s) +
                       ": supported values: \"LSE\", \"LSR\", \"LS\", \"BE\", \"SYSTEM\"");
    } else if (k == "priorityClassName" || k == "schedulerName") {
      if (v.is_null()) continue;
      auto s = read_string(v, fp, loc);
      if (!s) return tl::unexpected(s.error());
      (k == "priorityClassName" ? out.priority_class_name : out.scheduler_name) = std::move(*s);
    } else if (k == "koordinatorPriority") {
      if (v.is_null()) continue;
      auto i = read_int(v, fp, loc, std::numeric_limits<std::int32_t>::min(),
                        std::numeric_limits<std::int32_t>::max(), "an int32");
      if (!i) return tl::unexpected(i.error());
      out.koordinator_priority = static_cast<std::int32_t>(*i);
    } else if (k == "patch") {
      if (v.is_null()) continue;
      if (!v.is_object())
        return bad(loc, fp, "Invalid value: a patch must be an object, got " + type_of(v));
      auto pp = parse_pod_patch(v, fp.field);
      if (!pp) return fail(errc::invalid_input, pp.error().message, loc.where(fp.pointer));
      out.patch = std::move(*pp);
    } else {
      auto m = read_string_map(v, fp, loc);
      if (!m) return tl::unexpected(m.error());
      if (k == "labels")
        out.labels = std::move(*m);
      else if (k == "annotations")
        out.annotations = std::move(*m);
      else if (k == "labelKeysMapping")
        out.label_keys_mapping = std::move(*m);
      else if (k == "annotationKeysMapping")
        out.annotation_keys_mapping = std::move(*m);
      else
        out.label_suffixes = std::move(*m);  // labelSuffixes
    }
  }
  return out;
}

bool is_list_kind(const json& obj) {
  auto k = obj.find("kind");
  if (k == obj.end() || !k->is_string()) return false;
  const std::string kind = k->get<std::string>();
  return kind == "List" || kind == std::string(colocation_profile_kind) + "List";
}

// One document: a profile, or a List of them. Appends to `out`, rejecting duplicate names.
result<void> read_document(const json& doc, const path& root, const locator& loc,
                           std::vector<cluster_colocation_profile>& out,
                           std::vector<std::string>& names_seen) {
  auto add = [&](const json& obj, const path& p) -> result<void> {
    auto prof = read_profile(obj, p, loc);
    if (!prof) return tl::unexpected(prof.error());
    if (std::find(names_seen.begin(), names_seen.end(), prof->name) != names_seen.end())
      return bad(loc, p.child("metadata").child("name"), "Duplicate value: " + dquote(prof->name));
    names_seen.push_back(prof->name);
    out.push_back(std::move(*prof));
    return {};
  };
  if (doc.is_object() && is_list_kind(doc)) {
    auto items = doc.find("items");
    if (items == doc.end() || items->is_null()) return {};
    if (!items->is_array())
      return bad(loc, root.child("items"), "Invalid value: must be a list, got " + type_of(*items));
    for (std::size_t i = 0; i < items->size(); ++i)
      if (auto ok = add((*items)[i], root.child("items").index(i)); !ok) return ok;
    return {};
  }
  return add(doc, root);
}

// Runs fn(doc_json, locator) for each YAML document; yaml-cpp's exceptions become errors.
template <class Fn>
result<void> for_each_yaml_document(std::string_view text, std::string_view source, Fn&& fn) {
  std::vector<YAML::Node> docs;
  const std::string src(source);
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    return fail(errc::invalid_input, "YAML syntax: " + e.msg,
                line > 0 ? src + ":" + std::to_string(line) : src);
  }
  for (const auto& d : docs) {
    if (d.IsNull() || !d.IsDefined()) continue;  // empty document (e.g. a trailing ---)
    line_table lines;
    result<json> j = json(nullptr);
    try {
      j = yaml_to_json(d, "", lines, src);
    } catch (const YAML::Exception& e) {
      const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
      return fail(errc::invalid_input, "YAML: " + e.msg,
                  line > 0 ? src + ":" + std::to_string(line) : src);
    }
    if (!j) return tl::unexpected(j.error());
    const locator loc{src, &lines};
    if (auto ok = fn(*j, loc); !ok) return ok;
  }
  return {};
}

result<json> parse_json_text(std::string_view text, std::string_view source) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // Byte offset to a line number, for people.
    const std::size_t upto = std::min<std::size_t>(e.byte, text.size());
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(upto), '\n');
    return fail(errc::invalid_input, std::string("JSON syntax: ") + e.what(),
                std::string(source) + ":" + std::to_string(line));
  } catch (const json::exception& e) {
    return fail(errc::invalid_input, std::string("JSON: ") + e.what(), std::string(source));
  }
}

}  // namespace

result<std::vector<cluster_colocation_profile>> parse_profiles_yaml(std::string_view text,
                                                                    std::string_view source) {
  std::vector<cluster_colocation_profile> out;
  std::vector<std::string> names_seen;
  auto ok = for_each_yaml_document(text, source, [&](const json& doc, const locator& loc) {
    return read_document(doc, path{}, loc, out, names_seen);
  });
  if (!ok) return tl::unexpected(ok.error());
  return out;
}

result<std::vector<cluster_colocation_profile>> load_profiles_yaml_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(errc::not_found, "cannot open ClusterColocationProfile file", file);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_profiles_yaml(ss.str(), file);
}

result<std::vector<cluster_colocation_profile>> parse_profiles_json(std::string_view text,
                                                                    std::string_view source) {
  auto j = parse_json_text(text, source);
  if (!j) return tl::unexpected(j.error());
  std::vector<cluster_colocation_profile> out;
  std::vector<std::string> names_seen;
  const locator loc{std::string(source), nullptr};
  if (auto ok = read_document(*j, path{}, loc, out, names_seen); !ok)
    return tl::unexpected(ok.error());
  return out;
}

result<cluster_colocation_profile> profile_from_json(const json& object, std::string_view source) {
  const locator loc{std::string(source), nullptr};
  return read_profile(object, path{}, loc);
}

result<cluster_colocation_profile> parse_profile_json(std::string_view text,
                                                      std::string_view source) {
  auto j = parse_json_text(text, source);
  if (!j) return tl::unexpected(j.error());
  return profile_from_json(*j, source);
}

result<priority_class_table> parse_priority_classes_yaml(std::string_view text,
                                                         std::string_view source) {
  priority_class_table out;
  auto read_one = [&](const json& obj, const path& p, const locator& loc) -> result<void> {
    if (!obj.is_object())
      return bad(loc, p, "Invalid value: a PriorityClass must be an object, got " + type_of(obj));
    if (auto k = obj.find("kind");
        k != obj.end() && !(k->is_string() && k->get<std::string>() == "PriorityClass"))
      return bad(loc, p.child("kind"),
                 "Unsupported value: " + k->dump() + ": want \"PriorityClass\"");
    priority_class_info pc;
    auto md = obj.find("metadata");
    const path np = p.child("metadata").child("name");
    if (md == obj.end() || !md->is_object() || md->find("name") == md->end())
      return bad(loc, np, "Required value: name is required");
    auto n = read_string((*md)["name"], np, loc);
    if (!n) return tl::unexpected(n.error());
    pc.name = std::move(*n);
    auto v = obj.find("value");
    if (v == obj.end()) return bad(loc, p.child("value"), "Required value");
    auto iv = read_int(*v, p.child("value"), loc, std::numeric_limits<std::int32_t>::min(),
                       std::numeric_limits<std::int32_t>::max(), "an int32");
    if (!iv) return tl::unexpected(iv.error());
    pc.value = static_cast<std::int32_t>(*iv);
    if (auto pp = obj.find("preemptionPolicy"); pp != obj.end() && !pp->is_null()) {
      auto s = read_string(*pp, p.child("preemptionPolicy"), loc);
      if (!s) return tl::unexpected(s.error());
      pc.preemption_policy = std::move(*s);
    }
    if (out.count(pc.name) != 0) return bad(loc, np, "Duplicate value: " + dquote(pc.name));
    const std::string key = pc.name;
    out.emplace(key, std::move(pc));
    return {};
  };
  auto ok = for_each_yaml_document(
      text, source, [&](const json& doc, const locator& loc) -> result<void> {
        if (doc.is_object()) {
          auto k = doc.find("kind");
          if (k != doc.end() && k->is_string() &&
              (k->get<std::string>() == "List" || k->get<std::string>() == "PriorityClassList")) {
            auto items = doc.find("items");
            if (items == doc.end() || items->is_null()) return {};
            if (!items->is_array())
              return bad(loc, path{}.child("items"), "Invalid value: must be a list");
            for (std::size_t i = 0; i < items->size(); ++i)
              if (auto r = read_one((*items)[i], path{}.child("items").index(i), loc); !r) return r;
            return {};
          }
        }
        return read_one(doc, path{}, loc);
      });
  if (!ok) return tl::unexpected(ok.error());
  return out;
}

}  // namespace colony::admission
