#include "actors/koordlet/resctrl.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>

namespace colony::koordlet {
namespace {

error invalid(std::string message, std::string where) {
  return error{errc::invalid_input, std::move(message), std::move(where)};
}

std::string hex(std::uint64_t v) {
  char buf[20];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
  return std::string(buf, r.ptr);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

std::optional<std::uint64_t> number(std::string_view s, int base) {
  s = trim(s);
  std::uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (r.ec != std::errc{} || r.ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

result<std::uint64_t> cat_l3_mask(std::uint64_t cbm, std::int64_t start, std::int64_t end) {
  // x86 needs the ways of a mask contiguous; the root's mask has them all, so cbm + 1 is a
  // power of two (Koordinator: bits.OnesCount(cbm+1) != 1 is "illegal cbm").
  if (cbm == 0 || cbm == ~std::uint64_t{0} || std::popcount(cbm + 1) != 1)
    return tl::unexpected(invalid("illegal cbm " + hex(cbm), "cbm_mask"));
  if (start < 0 || end > 100 || end <= start)
    return tl::unexpected(invalid(
        "illegal l3 cat percent: start " + std::to_string(start) + ", end " + std::to_string(end),
        "catRangeStartPercent/catRangeEndPercent"));
  const auto ways = static_cast<std::int64_t>(std::bit_width(cbm));
  // ceil(ways x percent / 100) in integers (Koordinator's float ceil over the same exact values).
  const auto start_way = (ways * start + 99) / 100;
  const auto end_way = (ways * end + 99) / 100;
  return (std::uint64_t{1} << end_way) - (std::uint64_t{1} << start_way);
}

std::optional<std::int64_t> mba_value(std::int64_t percent, const resctrl_info& info) {
  if (percent <= 0 || percent > 100) return std::nullopt;
  if (info.amd) {
    if (percent == 100) return amd_ccd_unlimited_mb;
    return static_cast<std::int64_t>(amd_ccd_max_mb_gbps * static_cast<double>(percent) / 100);
  }
  const std::int64_t gran = info.bandwidth_gran > 0 ? info.bandwidth_gran : 10;
  // calculateIntel: a percent that is no multiple of the granularity goes to the next one up.
  std::int64_t v = percent % gran == 0 ? percent : percent / gran * gran + gran;
  v = std::max(v, info.min_bandwidth);
  return v;
}

result<std::string> group_schemata(std::string_view group, const resctrl_qos& q,
                                   const resctrl_info& info) {
  const std::string field = std::string(group) + ".resctrlQOS";
  std::string out;
  if (info.l3 && !info.l3_ids.empty()) {
    auto mask = cat_l3_mask(info.cbm_mask, q.cat_range_start_percent, q.cat_range_end_percent);
    if (!mask) {
      auto e = mask.error();
      e.where = field + " (" + e.where + ")";
      return tl::unexpected(std::move(e));
    }
    if (std::popcount(*mask) < info.min_cbm_bits)
      return tl::unexpected(invalid("mask " + hex(*mask) + " has fewer ways than min_cbm_bits " +
                                        std::to_string(info.min_cbm_bits),
                                    field + " (catRangeStartPercent/catRangeEndPercent)"));
    out += "L3:";
    for (std::size_t i = 0; i < info.l3_ids.size(); ++i)
      out += (i == 0 ? "" : ";") + std::to_string(info.l3_ids[i]) + "=" + hex(*mask);
  }
  if (info.mb && !info.mb_ids.empty()) {
    if (const auto v = mba_value(q.mba_percent, info)) {
      if (!out.empty()) out += '\n';
      out += "MB:";
      for (std::size_t i = 0; i < info.mb_ids.size(); ++i)
        out += (i == 0 ? "" : ";") + std::to_string(info.mb_ids[i]) + "=" + std::to_string(*v);
    }
  }
  return out;
}

std::string_view resctrl_group_of(const pod_info& pod) noexcept {
  switch (pod_qos_with_default(pod)) {
    case qos_class::lse:
    case qos_class::lsr:
      return resctrl_group_lsr;
    case qos_class::ls:
      return resctrl_group_ls;
    case qos_class::be:
      return resctrl_group_be;
    default:
      return {};
  }
}

const resctrl_qos& resctrl_qos_of(const resource_qos_resctrl_strategy& s,
                                  std::string_view group) noexcept {
  if (group == resctrl_group_lsr) return s.lsr_class;
  if (group == resctrl_group_be) return s.be_class;
  return s.ls_class;
}

bool resctrl_enabled(const resource_qos_resctrl_strategy& s) noexcept {
  return s.lsr_class.enable || s.ls_class.enable || s.be_class.enable;
}

std::vector<resctrl_group_decision> resctrl_decisions(const resource_qos_resctrl_strategy& s,
                                                      const std::optional<resctrl_info>& info,
                                                      std::span<const pod_info> pods) {
  std::vector<resctrl_group_decision> out;
  for (const auto group : {resctrl_group_lsr, resctrl_group_ls, resctrl_group_be}) {
    resctrl_group_decision d;
    d.group = group;
    const auto& q = resctrl_qos_of(s, group);
    if (info) {
      if (auto v = group_schemata(group, q, *info))
        d.schemata = std::move(*v);
      else
        d.schemata_error = v.error();
    }
    d.assign_tasks = q.enable;
    if (q.enable)
      for (const auto& p : pods)
        if (!p.evicted && pod_is_active(p) && resctrl_group_of(p) == group)
          d.pod_uids.push_back(p.uid);
    std::sort(d.pod_uids.begin(), d.pod_uids.end());
    out.push_back(std::move(d));
  }
  return out;
}

result<std::vector<schemata_line>> parse_schemata(std::string_view text, std::string_view where) {
  std::vector<schemata_line> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const auto raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const auto line = trim(raw);
    if (line.empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0)
      return tl::unexpected(
          invalid("schemata line \"" + std::string(line) + "\": want RESOURCE:ID=VALUE;...",
                  std::string(where)));
    schemata_line s;
    s.resource = std::string(trim(line.substr(0, colon)));
    auto rest = line.substr(colon + 1);
    while (!rest.empty()) {
      const auto semi = rest.find(';');
      const auto item = trim(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
      if (item.empty()) continue;  // Koordinator writes a trailing ';'
      const auto eq = item.find('=');
      const auto id = eq == std::string_view::npos ? std::nullopt : number(item.substr(0, eq), 10);
      if (!id || eq + 1 >= item.size())
        return tl::unexpected(invalid("schemata line \"" + std::string(line) + "\": domain \"" +
                                          std::string(item) + "\" is not ID=VALUE",
                                      std::string(where)));
      std::string v(trim(item.substr(eq + 1)));
      std::transform(v.begin(), v.end(), v.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      s.domains.emplace_back(static_cast<std::int32_t>(*id), std::move(v));
    }
    std::sort(s.domains.begin(), s.domains.end());
    out.push_back(std::move(s));
  }
  return out;
}

bool same_schemata_value(std::string_view resource, std::string_view a,
                         std::string_view b) noexcept {
  const int base = trim(resource) == "L3" || resource.starts_with("L3") ? 16 : 10;
  const auto x = number(a, base);
  const auto y = number(b, base);
  return x && y ? *x == *y : trim(a) == trim(b);
}

}  // namespace colony::koordlet
