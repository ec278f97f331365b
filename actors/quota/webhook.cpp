// ElasticQuota webhook rules, ElasticQuotaProfile mapping and CRD YAML loading (see webhook.hpp).
#include "actors/quota/webhook.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include <yaml-cpp/yaml.h>

#include "messages/names.hpp"

namespace colony::quota {

namespace {

const std::string kRoot{quota_names::root_quota};

std::string parent_of(const quota_spec& q) { return q.parent.empty() ? kRoot : q.parent; }

std::string label_where(std::string_view label) {
  return "metadata.labels[" + std::string(label) + "]";
}
std::string annotation_where(std::string_view a) {
  return "metadata.annotations[" + std::string(a) + "]";
}

tl::unexpected<error> invalid(std::string msg, std::string where) {
  return fail(errc::invalid_input, std::move(msg), std::move(where));
}
tl::unexpected<error> refused(std::string msg, std::string where) {
  return fail(errc::failed_precondition, std::move(msg), std::move(where));
}

resource_keys negative_keys(const resource_list& r, resource_keys keys) {
  resource_keys out = 0;
  for (int k = 0; k < resource_count; ++k) {
    if (has_key(keys, k) && field(r, k) < 0) out |= static_cast<resource_keys>(1u << k);
  }
  return out;
}

int first_key(resource_keys keys) {
  auto v = indices_by_name(keys);
  return v.empty() ? 0 : v.front();
}

// util.LessThanOrEqualCompletely: every key of a is compared; a key b lacks counts as 0.
bool less_equal_completely(const resource_list& a, resource_keys a_keys, const resource_list& b,
                           resource_keys b_keys) {
  for (int k = 0; k < resource_count; ++k) {
    if (!has_key(a_keys, k)) continue;
    std::int64_t rhs = has_key(b_keys, k) ? field(b, k) : 0;
    if (field(a, k) > rhs) return false;
  }
  return true;
}

// What a min-sum refusal leaves out of Koordinator's text: the first resource (by name) where
// the children's mins exceed the parent's, the sum, each child's share and the parent's min.
// Returns the field path ("spec.min[cpu]") in where.
std::string min_sum_detail(std::string_view parent, const resource_list& parent_min,
                           resource_keys parent_keys,
                           const std::vector<const quota_spec*>& children, std::string& where) {
  resource_list sum;
  resource_keys keys = no_keys;
  for (const auto* c : children) {
    sum += c->min;
    keys |= resolve_keys(c->min_keys, c->min);
  }
  for (int k : indices_by_name(keys)) {
    const std::int64_t limit = has_key(parent_keys, k) ? field(parent_min, k) : 0;
    if (field(sum, k) <= limit) continue;
    std::string shares;
    std::size_t listed = 0;
    for (const auto* c : children) {
      if (field(c->min, k) == 0) continue;
      if (listed++ == 8) {
        shares += ", ...";
        break;
      }
      shares += (shares.empty() ? "" : ", ") + c->name + " " + format_quantity(k, field(c->min, k));
    }
    where = "spec.min[" + std::string(resource_name(k)) + "]";
    return std::string(resource_name(k)) + ": children's min " + format_quantity(k, field(sum, k)) +
           " (" + shares + ") > " + std::string(parent) + "'s min " + format_quantity(k, limit);
  }
  where = "spec.min";
  return {};
}

std::string_view label(const quota_spec& q, std::string_view key) {
  auto it = q.labels.find(key);
  return it == q.labels.end() ? std::string_view{} : std::string_view{it->second};
}

}  // namespace

bool fixed_shared_weight(keyed_resources& sw, const resource_list& max, resource_keys max_keys) {
  bool fixed = false;
  for (int k = 0; k < resource_count; ++k) {
    if (has_key(max_keys, k) && !has_key(sw.keys, k)) {
      field(sw.values, k) = field(max, k);
      sw.keys |= static_cast<resource_keys>(1u << k);
      fixed = true;
    } else if (!has_key(max_keys, k) && has_key(sw.keys, k)) {
      field(sw.values, k) = 0;
      sw.keys &= static_cast<resource_keys>(~(1u << k));
      fixed = true;
    }
  }
  return fixed;
}

quota_topology::quota_topology() { children_[kRoot]; }

const quota_spec* quota_topology::find(std::string_view name) const {
  auto it = quotas_.find(name);
  return it == quotas_.end() ? nullptr : &it->second;
}

void quota_topology::on_quota_add(const quota_spec& quota) {
  quotas_[quota.name] = quota;
  children_[quota.name];
  children_[parent_of(quota)].insert(quota.name);
  for (const auto& ns : quota.namespaces) namespace_to_quota_[ns] = quota.name;
}

void quota_topology::on_quota_update(const quota_spec& quota) {
  if (const auto* old = find(quota.name); old != nullptr) {
    if (auto it = children_.find(parent_of(*old)); it != children_.end())
      it->second.erase(quota.name);
    for (const auto& ns : old->namespaces)
      if (auto it = namespace_to_quota_.find(ns);
          it != namespace_to_quota_.end() && it->second == quota.name)
        namespace_to_quota_.erase(it);
  }
  on_quota_add(quota);
}

void quota_topology::on_quota_delete(std::string_view name) {
  const auto* old = find(name);
  if (old == nullptr) return;
  if (auto it = children_.find(parent_of(*old)); it != children_.end()) it->second.erase(old->name);
  for (const auto& ns : old->namespaces)
    if (auto it = namespace_to_quota_.find(ns);
        it != namespace_to_quota_.end() && it->second == old->name)
      namespace_to_quota_.erase(it);
  // Its own (empty or orphaned) child set stays, as Koordinator's OnQuotaDelete keeps
  // quotaHierarchyInfo entries of children that still name it.
  if (auto it = children_.find(name); it != children_.end() && it->second.empty())
    children_.erase(it);
  quotas_.erase(quotas_.find(name));
}

void quota_topology::erase_quota_info(std::string_view name) {
  if (auto it = quotas_.find(name); it != quotas_.end()) quotas_.erase(it);
}

void quota_topology::erase_hierarchy_info(std::string_view name) {
  if (auto it = children_.find(name); it != children_.end()) children_.erase(it);
}

result<void> quota_topology::fill_quota_default_information(quota_spec& quota) const {
  if (quota.name == kRoot) return {};
  const std::string parent_label(names::label_quota_parent);
  if (label(quota, names::label_quota_parent).empty()) {
    quota.labels[parent_label] = kRoot;
    quota.parent.clear();
  }
  const std::string parent = quota.labels[parent_label];
  if (label(quota, names::label_quota_tree_id).empty() && parent != kRoot) {
    const auto* p = find(parent);
    if (p == nullptr) {
      return refused("fill quota " + quota.name + " failed, parent not exist",
                     label_where(names::label_quota_parent));
    }
    if (!p->tree_id.empty()) {
      quota.labels[std::string(names::label_quota_tree_id)] = p->tree_id;
      quota.tree_id = p->tree_id;
    }
  }
  const std::string sw_key(names::annotation_shared_weight);
  auto it = quota.annotations.find(sw_key);
  if (it == quota.annotations.end() || it->second.empty()) {
    quota.annotations[sw_key] = resource_list_to_json(quota.max, quota.max_keys);
    quota.shared_weight = quota.max;
    quota.shared_weight_keys = quota.max_keys;
    return {};
  }
  auto parsed = parse_resource_list_json(it->second, annotation_where(sw_key));
  if (!parsed) {
    return invalid("fillDefaultQuotaInfo unmarshal sharedWeight failed:" + parsed.error().message,
                   annotation_where(sw_key));
  }
  keyed_resources sw = parsed->resources;
  if (fixed_shared_weight(sw, quota.max, quota.max_keys)) {
    it->second = resource_list_to_json(sw.values, sw.keys);
  }
  if (!masked(sw.values, sw.keys).is_zero()) {
    quota.shared_weight = sw.values;
    quota.shared_weight_keys = sw.keys;
  }
  return {};
}

result<void> quota_topology::validate_quota_self_item(const quota_spec& quota) {
  if (auto neg = negative_keys(quota.max, quota.max_keys); neg != 0) {
    return invalid(quota.name + " quota.Spec.Max's value < 0, in dimensions :" + print_names(neg),
                   "spec.max[" + std::string(resource_name(first_key(neg))) + "]");
  }
  if (auto neg = negative_keys(quota.min, quota.min_keys); neg != 0) {
    return invalid(quota.name + " quota.Spec.Min's value < 0, in dimensions :" + print_names(neg),
                   "spec.min[" + std::string(resource_name(first_key(neg))) + "]");
  }
  const std::string sw_key(names::annotation_shared_weight);
  if (auto it = quota.annotations.find(sw_key);
      it != quota.annotations.end() && !it->second.empty()) {
    auto parsed = parse_resource_list_json(it->second, annotation_where(sw_key));
    if (!parsed) return tl::unexpected(parsed.error());
    if (auto neg = negative_keys(parsed->resources.values, parsed->resources.keys); neg != 0) {
      return invalid(quota.name + " quota.Annotation[" + sw_key +
                         "]'s value < 0, in dimension :" + print_names(neg),
                     annotation_where(sw_key));
    }
  }
  // Koordinator ranges over a Go map; Colony checks keys in name order.
  for (int k : indices_by_name(quota.min_keys)) {
    const std::string name(resource_name(k));
    if (!has_key(quota.max_keys, k)) {
      return invalid("resourceKey " + name + " of quota " + quota.name +
                         " is included in min, which is not included in max",
                     "spec.min[" + name + "]");
    }
    if (field(quota.max, k) < field(quota.min, k)) {
      return invalid("resourceKey " + name + " of quota " + quota.name + " min " +
                         format_quantity(k, field(quota.min, k)) + " > max " +
                         format_quantity(k, field(quota.max, k)),
                     "spec.min[" + name + "]");
    }
  }
  const std::string strict_key(quota_names::annotation_max_strict_check_resource_keys);
  if (auto it = quota.annotations.find(strict_key);
      it != quota.annotations.end() && !it->second.empty()) {
    auto keys = parse_string_list_json(it->second, annotation_where(strict_key));
    if (!keys) {
      return invalid(quota.name + " quota.Annotation[" + strict_key +
                         "]'s value is invalid: " + keys.error().message,
                     annotation_where(strict_key));
    }
    for (const auto& name : *keys) {
      auto info = lookup_resource(name);
      if (!info || !has_key(quota.used_keys, info->index)) continue;  // never counted: skip
      const int k = info->index;
      if (!has_key(quota.max_keys, k)) {
        return invalid(
            "resourceKey " + name + " of quota " + quota.name +
                " is included in used, which is not included in max but should check max >= used",
            "spec.max[" + name + "]");
      }
      if (field(quota.max, k) < field(quota.used, k)) {
        return invalid("resourceKey " + name + " of quota " + quota.name + " max " +
                           format_quantity(k, field(quota.max, k)) + " < used " +
                           format_quantity(k, field(quota.used, k)),
                       "spec.max[" + name + "]");
      }
    }
  }
  return {};
}

result<void> quota_topology::check_tree_id(const quota_spec* old_quota,
                                           const quota_spec& quota) const {
  const std::string where = label_where(names::label_quota_tree_id);
  if (old_quota != nullptr && old_quota->tree_id != quota.tree_id) {
    return refused(
        quota.name + " tree id changed [" + old_quota->tree_id + "] vs [" + quota.tree_id + "]",
        where);
  }
  if (parent_of(quota) != kRoot) {
    if (const auto* p = find(parent_of(quota)); p != nullptr && p->tree_id != quota.tree_id) {
      return refused(quota.name + " tree id is different from parent " + p->name + ", [" +
                         quota.tree_id + "] vs [" + p->tree_id + "]",
                     where);
    }
  }
  if (auto it = children_.find(quota.name); it != children_.end()) {
    for (const auto& child : it->second) {
      if (const auto* c = find(child); c != nullptr && c->tree_id != quota.tree_id) {
        return refused(quota.name + " tree id is different from child " + c->name + ", [" +
                           quota.tree_id + "] vs [" + c->tree_id + "]",
                       where);
      }
    }
  }
  return {};
}

result<void> quota_topology::check_is_parent_change(const quota_spec* old_quota,
                                                    const quota_spec& quota,
                                                    bool has_bound_pods) const {
  if (old_quota == nullptr || old_quota->is_parent == quota.is_parent) return {};
  const std::string where = label_where(names::label_quota_is_parent);
  if (auto it = children_.find(old_quota->name);
      it != children_.end() && !it->second.empty() && !quota.is_parent) {
    return refused("quota has children, isParent is forbidden to modify as false, quotaName:" +
                       old_quota->name,
                   where);
  }
  if (quota.is_parent && has_bound_pods) {
    return refused("quota has bound pods, isParent is forbidden to modify as true, quotaName: " +
                       old_quota->name,
                   where);
  }
  return {};
}

result<void> quota_topology::check_parent_quota_info(std::string_view name,
                                                     std::string_view parent) const {
  if (parent == kRoot || parent.empty()) return {};
  const std::string where = label_where(names::label_quota_parent);
  const std::string prefix = std::string(name) + " has parentName " + std::string(parent);
  const auto* p = find(parent);
  if (p == nullptr) return refused(prefix + " but not find parentInfo in quotaInfoMap", where);
  if (children_.find(parent) == children_.end())
    return refused(prefix + " but not find parentInfo in quotaHierarchyInfo", where);
  if (!p->is_parent) return refused(prefix + " but the parentQuotaInfo's IsParent is false", where);
  return {};
}

result<void> quota_topology::check_sub_and_parent_group_quota_key(const quota_spec& quota) const {
  if (quota.name == kRoot) return {};
  const bool subset = features_.elastic_quota_enable_update_resource_key;
  auto check = [&](const quota_spec& parent, const quota_spec& child) -> result<void> {
    if (subset) {
      if ((child.max_keys & ~parent.max_keys) != 0) {
        return refused("checkSubAndParentGroupQuotaKey failed: " + child.name +
                           "'s max keys are not all included in " + parent.name + "'s",
                       "spec.max");
      }
    } else if (child.max_keys != parent.max_keys) {
      return refused("checkSubAndParentGroupQuotaKey failed: " + parent.name +
                         "'s max keys are not the same with " + child.name + "'s",
                     "spec.max");
    }
    if ((child.min_keys & ~parent.min_keys) != 0) {
      return refused("checkSubAndParentGroupQuotaKey failed: " + child.name +
                         "'s min keys are not all included in " + parent.name + "'s",
                     "spec.min");
    }
    return {};
  };
  if (parent_of(quota) != kRoot) {
    const auto* p = find(parent_of(quota));
    if (p != nullptr) {
      if (auto r = check(*p, quota); !r) return r;
    }
  }
  if (auto it = children_.find(quota.name); it != children_.end()) {
    for (const auto& child : it->second) {
      const auto* c = find(child);
      if (c == nullptr) {
        return fail(
            errc::internal,
            "internal error: quotaInfoMap and quotaTree information out of sync, losed :" + child,
            "metadata.name");
      }
      if (auto r = check(quota, *c); !r) return r;
    }
  }
  return {};
}

result<resource_list> quota_topology::child_min_sum_except(std::string_view parent,
                                                           std::string_view skip,
                                                           resource_keys& keys) const {
  keys = no_keys;
  resource_list sum;
  if (parent == kRoot) return sum;
  auto it = children_.find(parent);
  if (it == children_.end()) {
    return fail(errc::internal, "not found child quota list, parent: " + std::string(parent),
                "metadata.name");
  }
  for (const auto& child : it->second) {
    if (child == skip) continue;
    const auto* c = find(child);
    if (c == nullptr) {
      return fail(errc::internal,
                  "BUG quotaInfoMap and quotaTree information out of sync, losed :" + child,
                  "metadata.name");
    }
    sum += c->min;
    keys |= c->min_keys;
  }
  return sum;
}

result<void> quota_topology::check_min_quota_validate(const quota_spec& quota) const {
  if (quota.allow_force_update || quota.is_tree_root) return {};
  if (parent_of(quota) != kRoot) {
    resource_keys keys = no_keys;
    auto sum = child_min_sum_except(parent_of(quota), quota.name, keys);
    if (!sum)
      return fail(sum.error().code, "checkMinQuotaSum failed: " + sum.error().message, "spec.min");
    *sum += quota.min;
    keys |= quota.min_keys;
    const auto* p = find(parent_of(quota));
    if (p == nullptr || !less_equal_completely(*sum, keys, p->min, p->min_keys)) {
      std::string msg =
          "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: " + parent_of(quota);
      std::string where = "spec.min";
      if (p != nullptr) {
        std::vector<const quota_spec*> children{&quota};
        for (const auto& name : children_.at(parent_of(quota)))
          if (name != quota.name) children.push_back(find(name));
        std::sort(children.begin(), children.end(),
                  [](const quota_spec* a, const quota_spec* b) { return a->name < b->name; });
        msg += "; " + min_sum_detail(p->name, p->min, p->min_keys, children, where);
      }
      return refused(std::move(msg), std::move(where));
    }
  }
  if (auto it = children_.find(quota.name); it == children_.end() || it->second.empty()) return {};
  resource_keys keys = no_keys;
  auto sum = child_min_sum_except(quota.name, "", keys);
  if (!sum)
    return fail(sum.error().code, "checkMinQuotaSum failed:" + sum.error().message, "spec.min");
  if (!less_equal_completely(*sum, keys, quota.min, quota.min_keys)) {
    std::vector<const quota_spec*> children;
    for (const auto& name : children_.at(quota.name)) children.push_back(find(name));
    std::string where;
    std::string detail = min_sum_detail(quota.name, quota.min, quota.min_keys, children, where);
    return refused("checkMinQuotaSum all children's MinQuota > current MinQuota, current: " +
                       quota.name + "; " + detail,
                   std::move(where));
  }
  return {};
}

result<void> quota_topology::validate_quota_topology(const quota_spec* old_quota,
                                                     const quota_spec& quota,
                                                     bool has_bound_pods) const {
  if (quota.name == kRoot) return {};
  if (auto r = check_is_parent_change(old_quota, quota, has_bound_pods); !r) return r;
  if (auto r = check_tree_id(old_quota, quota); !r) return r;
  if (parent_of(quota) == kRoot && !quota.is_parent) return {};
  if (auto r = check_parent_quota_info(quota.name, parent_of(quota)); !r) return r;
  if (auto r = check_sub_and_parent_group_quota_key(quota); !r) {
    return fail(r.error().code,
                "failed to check sub and parent group quotaKey, err: " + r.error().message,
                r.error().where);
  }
  if (auto r = check_min_quota_validate(quota); !r) return r;
  if (features_.elastic_quota_guarantee_usage) {
    if (auto r = check_guaranteed_for_min(quota); !r)
      return fail(r.error().code, r.error().message + " " + quota.name, r.error().where);
  }
  return {};
}

result<void> quota_topology::check_guaranteed_for_min(const quota_spec& quota) const {
  if (quota.allow_force_update || quota.tree_id.empty() || quota.is_tree_root) return {};
  const resource_keys min_keys = resolve_keys(quota.min_keys, quota.min);
  const resource_keys g_keys = resolve_keys(quota.guaranteed_keys, quota.guaranteed);
  // A min within what is already guaranteed needs nothing more.
  if (less_equal_completely(quota.min, min_keys, quota.guaranteed, g_keys)) return {};
  return check_parent_guaranteed(max_of(quota.min, quota.guaranteed), min_keys | g_keys, quota.name,
                                 parent_of(quota));
}

// checkParentGuaranteed (quota_topology_check.go): the need accumulates upwards while an
// ancestor's guarantee does not cover it.
result<void> quota_topology::check_parent_guaranteed(const resource_list& guarantee,
                                                     resource_keys keys, std::string_view self,
                                                     std::string_view parent) const {
  if (parent == kRoot) {
    return refused("tree root quota " + std::string(self) + " can't guarantee for min", "spec.min");
  }
  const quota_spec* p = find(parent);
  if (p == nullptr) return refused("parent " + std::string(parent) + " not found", "spec.min");
  auto it = children_.find(parent);
  if (it == children_.end()) {
    return refused("child quota list not found, parent: " + std::string(parent), "spec.min");
  }
  resource_list children = guarantee;
  resource_keys children_keys = keys;
  for (const auto& child : it->second) {
    if (child == self) continue;
    const quota_spec* c = find(child);
    if (c == nullptr) {
      return fail(errc::internal,
                  "BUG quotaInfoMap and quotaTree information out of sync, losed :" + child,
                  "spec.min");
    }
    children += c->guaranteed;
    children_keys |= resolve_keys(c->guaranteed_keys, c->guaranteed);
  }
  const resource_keys p_min_keys = resolve_keys(p->min_keys, p->min);
  const resource_list need = max_of(p->min, children);
  const resource_keys need_keys = p_min_keys | children_keys;
  if (less_equal_completely(need, need_keys, p->guaranteed,
                            resolve_keys(p->guaranteed_keys, p->guaranteed))) {
    return {};
  }
  return check_parent_guaranteed(need, need_keys, p->name, parent_of(*p));
}

result<void> validate_quota_tree(std::span<const quota_spec> quotas) {
  std::map<std::string_view, const quota_spec*, std::less<>> by_name;
  for (const auto& q : quotas) {
    if (auto r = quota_topology::validate_quota_self_item(q); !r)
      return fail(r.error().code, r.error().message, q.name + "." + r.error().where);
    by_name.emplace(q.name, &q);
  }
  std::map<std::string_view, std::vector<const quota_spec*>, std::less<>> children;
  for (const auto& [name, q] : by_name) {
    if (!q->parent.empty() && q->parent != kRoot) children[q->parent].push_back(q);
  }
  for (const auto& [parent_name, kids] : children) {  // parents by name, children by name
    auto it = by_name.find(parent_name);
    if (it == by_name.end()) continue;
    const quota_spec& parent = *it->second;
    if (parent.allow_force_update || std::any_of(kids.begin(), kids.end(), [](const quota_spec* c) {
          return c->allow_force_update;
        })) {
      continue;
    }
    std::string where;
    std::string detail = min_sum_detail(parent.name, parent.min,
                                        resolve_keys(parent.min_keys, parent.min), kids, where);
    if (detail.empty()) continue;
    return invalid(
        "ElasticQuota " + parent.name + ": its children's min exceeds its own min; " + detail,
        parent.name + "." + where);
  }
  return {};
}

result<void> quota_topology::valid_add_quota(const quota_spec& quota) {
  if (find(quota.name) != nullptr) {
    return fail(errc::already_exists, "AddQuota quota already exist:" + quota.name,
                "metadata.name");
  }
  for (const auto& ns : quota.namespaces) {
    if (auto it = namespace_to_quota_.find(ns); it != namespace_to_quota_.end()) {
      return refused("AddQuota quota " + quota.name + "'s annotation namespace " + ns +
                         " is already bound to quota " + it->second,
                     annotation_where(quota_names::annotation_quota_namespaces));
    }
  }
  if (auto r = validate_quota_self_item(quota); !r) return r;
  if (auto r = validate_quota_topology(nullptr, quota, false); !r) return r;
  on_quota_add(quota);
  return {};
}

result<void> quota_topology::valid_update_quota(const quota_spec& old_quota,
                                                const quota_spec& new_quota, bool has_bound_pods) {
  // quotaFieldsCopy: parent, is-parent, tree-id, namespaces and spec.
  auto same = [](const quota_spec& a, const quota_spec& b) {
    return a.parent == b.parent && a.is_parent == b.is_parent && a.tree_id == b.tree_id &&
           a.namespaces == b.namespaces && a.min == b.min && a.min_keys == b.min_keys &&
           a.max == b.max && a.max_keys == b.max_keys;
  };
  if (same(old_quota, new_quota)) return {};
  const std::string& name = new_quota.name;
  if (name == quota_names::system_quota || name == kRoot)
    return refused("invalid quota " + name, "metadata.name");
  for (const auto& ns : new_quota.namespaces) {
    if (auto it = namespace_to_quota_.find(ns);
        it != namespace_to_quota_.end() && it->second != name) {
      return refused("UpdadteQuota, quota " + name + " update namespaces, but namespace " + ns +
                         " is already bound to quota " + it->second,
                     annotation_where(quota_names::annotation_quota_namespaces));
    }
  }
  const auto* old_info = find(name);
  if (old_info == nullptr) {
    return fail(errc::not_found, "UpdateQuota quota not exist in quotaInfoMap:" + name,
                "metadata.name");
  }
  if (auto r = validate_quota_self_item(new_quota); !r) return r;
  const quota_spec old_copy = *old_info;
  if (auto r = validate_quota_topology(&old_copy, new_quota, has_bound_pods); !r) return r;
  if (parent_of(old_copy) != parent_of(new_quota)) {
    children_[parent_of(old_copy)].erase(name);
    children_[parent_of(new_quota)].insert(name);
  }
  for (const auto& ns : old_quota.namespaces) namespace_to_quota_.erase(ns);
  for (const auto& ns : new_quota.namespaces) namespace_to_quota_[ns] = name;
  quotas_[name] = new_quota;
  return {};
}

result<void> quota_topology::valid_delete_quota(const quota_spec& quota, std::size_t pod_count) {
  const std::string& name = quota.name;
  if (name == quota_names::system_quota || name == kRoot || name == quota_names::default_quota) {
    return refused("can not delete quotaGroup :" + name, "metadata.name");
  }
  const auto* info = find(name);
  if (info == nullptr) return fail(errc::not_found, "not found quota:" + name, "metadata.name");
  auto it = children_.find(name);
  if (it == children_.end()) {
    return fail(errc::internal,
                "BUG quotaMap and quotaTree information out of sync, losed :" + name,
                "metadata.name");
  }
  if (!it->second.empty()) {
    return refused("delete quota failed, quota " + name + " has " +
                       std::to_string(it->second.size()) + " child quotas",
                   "metadata.name");
  }
  if (pod_count > 0) {
    return refused(
        "delete quota failed, quota " + name + " has " + std::to_string(pod_count) + " child pods",
        "metadata.name");
  }
  children_[parent_of(*info)].erase(name);
  children_.erase(it);
  for (const auto& ns : quota.namespaces) namespace_to_quota_.erase(ns);
  quotas_.erase(quotas_.find(name));
  return {};
}

result<void> quota_topology::validate_pod(std::string_view quota_name,
                                          const std::string* old_preemptible,
                                          const std::string* new_preemptible) const {
  if (const auto* q = find(quota_name); q != nullptr && q->is_parent) {
    return refused("pod can not be linked to a parent quota " + std::string(quota_name),
                   label_where(names::label_quota_name));
  }
  const bool old_set = old_preemptible != nullptr;
  const bool new_set = new_preemptible != nullptr;
  if (old_set != new_set || (old_set && *old_preemptible != *new_preemptible)) {
    return refused("pod label " + std::string(names::label_preemptible) + " is immutable",
                   label_where(names::label_preemptible));
  }
  return {};
}

// ---- ElasticQuotaProfile ------------------------------------------------------------------------

std::string profile_tree_id(std::string_view namespace_name, std::string_view name) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-64a offset basis
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(namespace_name);
  mix("/");
  mix(name);
  return std::to_string(h);
}

result<bool> selector_matches(const elastic_quota_profile& profile, const string_map& labels) {
  for (const auto& [k, v] : profile.match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& e : profile.match_expressions) {
    auto it = labels.find(e.key);
    const bool has = it != labels.end();
    if (e.op == "In" || e.op == "NotIn") {
      if (e.values.empty()) {
        return invalid(
            "values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "spec.nodeSelector.matchExpressions[" + e.key + "]");
      }
      const bool in =
          has && std::find(e.values.begin(), e.values.end(), it->second) != e.values.end();
      if (e.op == "In" ? !in : in) return false;
    } else if (e.op == "Exists" || e.op == "DoesNotExist") {
      if (!e.values.empty()) {
        return invalid(
            "values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            "spec.nodeSelector.matchExpressions[" + e.key + "]");
      }
      if (e.op == "Exists" ? !has : has) return false;
    } else {
      return invalid("\"" + e.op + "\" is not a valid label selector operator",
                     "spec.nodeSelector.matchExpressions[" + e.key + "].operator");
    }
  }
  return true;
}

result<quota_spec> reconcile_quota_profile(const elastic_quota_profile& profile,
                                           const std::vector<profile_node>& nodes,
                                           const quota_spec* existing) {
  if (profile.quota_name.empty()) return invalid("spec.quotaName is required", "spec.quotaName");
  std::string tree_id;
  if (auto it = profile.labels.find(names::label_quota_tree_id);
      it != profile.labels.end() && !it->second.empty()) {
    tree_id = it->second;
  } else {
    tree_id = profile_tree_id(profile.namespace_name, profile.name);
  }
  resource_list total, unschedulable;
  for (const auto& n : nodes) {
    auto m = selector_matches(profile, n.labels);
    if (!m) return tl::unexpected(m.error());
    if (!*m) continue;
    total += n.allocatable;
    if (n.unschedulable || !n.ready) unschedulable += n.allocatable;
  }
  // DecorateResourceByResourceRatio: a ratio outside (0,1] or unparsable counts as 1.
  double ratio = 1.0;
  if (profile.resource_ratio) {
    char* end = nullptr;
    double v = std::strtod(profile.resource_ratio->c_str(), &end);
    if (end != profile.resource_ratio->c_str() && *end == '\0' && v > 0 && v <= 1.0) ratio = v;
  }
  auto decorate = [&](resource_list& r) {
    for (int k = 0; k < resource_count; ++k) {
      field(r, k) = static_cast<std::int64_t>(static_cast<double>(field(r, k)) * ratio);
    }
  };
  decorate(total);
  decorate(unschedulable);

  std::vector<std::string> keys{std::string(names::cpu), std::string(names::memory)};
  if (auto it = profile.annotations.find(quota_names::annotation_resource_keys);
      it != profile.annotations.end()) {
    if (auto parsed = parse_string_list_json(it->second, ""); parsed) keys = std::move(*parsed);
  }
  keyed_resources min, max;
  for (const auto& name : keys) {
    auto info = lookup_resource(name);
    if (!info) continue;  // no Colony field for it
    const int k = info->index;
    field(min.values, k) = field(total, k);
    field(max.values, k) =
        std::numeric_limits<std::int64_t>::max() / 2000 * (info->milli ? 1000 : 1) * info->scale;
    min.keys |= static_cast<resource_keys>(1u << k);
    max.keys |= static_cast<resource_keys>(1u << k);
  }
  string_map labels = existing ? existing->labels : string_map{};
  string_map annotations = existing ? existing->annotations : string_map{};
  labels[std::string(quota_names::label_quota_profile)] = profile.name;
  for (const auto& [k, v] : profile.quota_labels) labels[k] = v;
  labels[std::string(names::label_quota_tree_id)] = tree_id;
  labels[std::string(names::label_quota_is_root)] = "true";
  annotations[std::string(quota_names::annotation_total_resource)] =
      resource_list_to_json(total, nonzero_keys(total));
  annotations[std::string(quota_names::annotation_unschedulable_resource)] =
      resource_list_to_json(unschedulable, nonzero_keys(unschedulable));
  return decode_quota(
      profile.quota_name, profile.namespace_name, std::move(labels), std::move(annotations), min,
      max, existing ? keyed_resources{existing->used, existing->used_keys} : keyed_resources{});
}

// ---- YAML ---------------------------------------------------------------------------------------

namespace {

struct yaml_ctx {
  std::string file;
  std::vector<std::string>* ignored = nullptr;
  [[nodiscard]] std::string at(const YAML::Node& n, std::string_view field) const {
    return file + ":" + std::to_string(n.Mark().line + 1) + " " + std::string(field);
  }
};

result<std::string> scalar(const yaml_ctx& cx, const YAML::Node& n, std::string_view field) {
  if (!n.IsScalar()) return invalid("expected a string", cx.at(n, field));
  return n.Scalar();
}

result<string_map> string_map_of(const yaml_ctx& cx, const YAML::Node& n, std::string_view field) {
  string_map out;
  if (!n || n.IsNull()) return out;
  if (!n.IsMap()) return invalid("expected a map of strings", cx.at(n, field));
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = it->first.Scalar();
    auto v = scalar(cx, it->second, std::string(field) + "[" + key + "]");
    if (!v) return tl::unexpected(v.error());
    out[key] = *v;
  }
  return out;
}

result<keyed_resources> resources_of(const yaml_ctx& cx, const YAML::Node& n,
                                     std::string_view path) {
  keyed_resources out;
  if (!n || n.IsNull()) return out;
  if (!n.IsMap()) return invalid("expected a ResourceList (map of quantities)", cx.at(n, path));
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string name = it->first.Scalar();
    const std::string f = std::string(path) + "[" + name + "]";
    auto info = lookup_resource(name);
    if (!info) {
      if (cx.ignored) cx.ignored->push_back(cx.at(it->second, f) + " ignored (no Colony field)");
      continue;
    }
    auto text = scalar(cx, it->second, f);
    if (!text) return tl::unexpected(text.error());
    auto v = parse_named_quantity(*info, *text);
    if (!v) return fail(v.error().code, v.error().message, cx.at(it->second, f));
    field(out.values, info->index) += *v;
    out.keys |= static_cast<resource_keys>(1u << info->index);
  }
  return out;
}

result<quota_spec> quota_of(const yaml_ctx& cx, const YAML::Node& doc) {
  const YAML::Node meta = doc["metadata"];
  if (!meta || !meta.IsMap()) return invalid("metadata is required", cx.at(doc, "metadata"));
  const YAML::Node name = meta["name"];
  if (!name || !name.IsScalar() || name.Scalar().empty()) {
    return invalid("metadata.name is required", cx.at(meta, "metadata.name"));
  }
  std::string ns;
  if (const YAML::Node n = meta["namespace"]; n) {
    auto v = scalar(cx, n, "metadata.namespace");
    if (!v) return tl::unexpected(v.error());
    ns = *v;
  }
  auto labels = string_map_of(cx, meta["labels"], "metadata.labels");
  if (!labels) return tl::unexpected(labels.error());
  auto annotations = string_map_of(cx, meta["annotations"], "metadata.annotations");
  if (!annotations) return tl::unexpected(annotations.error());
  const YAML::Node spec = doc["spec"];
  keyed_resources min, max, used;
  if (spec && !spec.IsNull()) {
    if (!spec.IsMap()) return invalid("expected a map", cx.at(spec, "spec"));
    auto mn = resources_of(cx, spec["min"], "spec.min");
    if (!mn) return tl::unexpected(mn.error());
    auto mx = resources_of(cx, spec["max"], "spec.max");
    if (!mx) return tl::unexpected(mx.error());
    min = *mn;
    max = *mx;
  }
  if (const YAML::Node status = doc["status"]; status && status.IsMap()) {
    auto u = resources_of(cx, status["used"], "status.used");
    if (!u) return tl::unexpected(u.error());
    used = *u;
  }
  // Annotations that must parse when present (the loader is strict where the scheduler is lenient).
  for (std::string_view a :
       {names::annotation_shared_weight, quota_names::annotation_total_resource}) {
    if (auto it = annotations->find(a); it != annotations->end() && !it->second.empty()) {
      auto p = parse_resource_list_json(it->second, "");
      if (!p) return invalid(p.error().message, cx.at(meta, annotation_where(a)));
    }
  }
  if (auto it = annotations->find(quota_names::annotation_quota_namespaces);
      it != annotations->end() && !it->second.empty()) {
    auto p = parse_string_list_json(it->second, "");
    if (!p)
      return invalid(p.error().message,
                     cx.at(meta, annotation_where(quota_names::annotation_quota_namespaces)));
  }
  return decode_quota(name.Scalar(), ns, std::move(*labels), std::move(*annotations), min, max,
                      used);
}

result<elastic_quota_profile> profile_of(const yaml_ctx& cx, const YAML::Node& doc) {
  elastic_quota_profile p;
  const YAML::Node meta = doc["metadata"];
  if (!meta || !meta.IsMap()) return invalid("metadata is required", cx.at(doc, "metadata"));
  const YAML::Node name = meta["name"];
  if (!name || !name.IsScalar() || name.Scalar().empty()) {
    return invalid("metadata.name is required", cx.at(meta, "metadata.name"));
  }
  p.name = name.Scalar();
  if (const YAML::Node n = meta["namespace"]; n) {
    auto v = scalar(cx, n, "metadata.namespace");
    if (!v) return tl::unexpected(v.error());
    p.namespace_name = *v;
  }
  auto labels = string_map_of(cx, meta["labels"], "metadata.labels");
  if (!labels) return tl::unexpected(labels.error());
  auto annotations = string_map_of(cx, meta["annotations"], "metadata.annotations");
  if (!annotations) return tl::unexpected(annotations.error());
  p.labels = std::move(*labels);
  p.annotations = std::move(*annotations);
  const YAML::Node spec = doc["spec"];
  if (!spec || !spec.IsMap()) return invalid("spec is required", cx.at(doc, "spec"));
  const YAML::Node qn = spec["quotaName"];
  if (!qn || !qn.IsScalar() || qn.Scalar().empty())
    return invalid("spec.quotaName is required", cx.at(spec, "spec.quotaName"));
  p.quota_name = qn.Scalar();
  auto ql = string_map_of(cx, spec["quotaLabels"], "spec.quotaLabels");
  if (!ql) return tl::unexpected(ql.error());
  p.quota_labels = std::move(*ql);
  if (const YAML::Node r = spec["resourceRatio"]; r && !r.IsNull()) {
    auto v = scalar(cx, r, "spec.resourceRatio");
    if (!v) return tl::unexpected(v.error());
    p.resource_ratio = *v;
  }
  const YAML::Node sel = spec["nodeSelector"];
  if (!sel || !sel.IsMap())
    return invalid("spec.nodeSelector is required", cx.at(spec, "spec.nodeSelector"));
  auto ml = string_map_of(cx, sel["matchLabels"], "spec.nodeSelector.matchLabels");
  if (!ml) return tl::unexpected(ml.error());
  p.match_labels = std::move(*ml);
  if (const YAML::Node ex = sel["matchExpressions"]; ex && !ex.IsNull()) {
    if (!ex.IsSequence())
      return invalid("expected a list", cx.at(ex, "spec.nodeSelector.matchExpressions"));
    for (std::size_t i = 0; i < ex.size(); ++i) {
      const std::string f = "spec.nodeSelector.matchExpressions[" + std::to_string(i) + "]";
      const YAML::Node e = ex[i];
      if (!e.IsMap() || !e["key"] || !e["operator"])
        return invalid("key and operator are required", cx.at(e, f));
      label_selector_requirement req;
      req.key = e["key"].Scalar();
      req.op = e["operator"].Scalar();
      if (const YAML::Node vals = e["values"]; vals && !vals.IsNull()) {
        if (!vals.IsSequence()) return invalid("expected a list", cx.at(vals, f + ".values"));
        for (const auto& v : vals) req.values.push_back(v.Scalar());
      }
      p.match_expressions.push_back(std::move(req));
    }
  }
  return p;
}

// Runs fn over every object of the wanted kind in the documents (List kinds unwrap items).
template <class F>
result<void> for_each_object(const yaml_ctx& cx, std::string_view text, std::string_view kind,
                             F&& fn) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return invalid(e.msg, cx.file + ":" + std::to_string(e.mark.line + 1));
  }
  const std::string list_kind = std::string(kind) + "List";
  for (const auto& doc : docs) {
    if (!doc || doc.IsNull()) continue;
    if (!doc.IsMap()) return invalid("expected a Kubernetes object", cx.at(doc, "kind"));
    const YAML::Node k = doc["kind"];
    if (!k || !k.IsScalar()) return invalid("kind is required", cx.at(doc, "kind"));
    if (k.Scalar() == "List" || k.Scalar() == list_kind) {
      const YAML::Node items = doc["items"];
      if (!items || !items.IsSequence()) return invalid("expected a list", cx.at(doc, "items"));
      for (const auto& item : items) {
        const YAML::Node ik = item["kind"];
        if (ik && ik.IsScalar() && ik.Scalar() != kind) {
          return invalid("expected kind " + std::string(kind) + ", got " + ik.Scalar(),
                         cx.at(item, "kind"));
        }
        if (auto r = fn(item); !r) return r;
      }
    } else if (k.Scalar() == kind) {
      if (auto r = fn(doc); !r) return r;
    } else {
      return invalid("expected kind " + std::string(kind) + ", got " + k.Scalar(),
                     cx.at(k, "kind"));
    }
  }
  return {};
}

}  // namespace

result<quota_load_result> load_elastic_quotas_yaml(std::string_view text, std::string_view file) {
  quota_load_result out;
  yaml_ctx cx{std::string(file), &out.ignored};
  try {
    auto r = for_each_object(cx, text, "ElasticQuota", [&](const YAML::Node& n) -> result<void> {
      auto q = quota_of(cx, n);
      if (!q) return tl::unexpected(q.error());
      out.quotas.push_back(std::move(*q));
      return {};
    });
    if (!r) return tl::unexpected(r.error());
  } catch (const YAML::Exception& e) {
    return invalid(e.msg, cx.file + ":" + std::to_string(e.mark.line + 1));
  }
  return out;
}

result<std::vector<elastic_quota_profile>> load_elastic_quota_profiles_yaml(std::string_view text,
                                                                            std::string_view file) {
  std::vector<elastic_quota_profile> out;
  yaml_ctx cx{std::string(file), nullptr};
  try {
    auto r =
        for_each_object(cx, text, "ElasticQuotaProfile", [&](const YAML::Node& n) -> result<void> {
          auto p = profile_of(cx, n);
          if (!p) return tl::unexpected(p.error());
          out.push_back(std::move(*p));
          return {};
        });
    if (!r) return tl::unexpected(r.error());
  } catch (const YAML::Exception& e) {
    return invalid(e.msg, cx.file + ":" + std::to_string(e.mark.line + 1));
  }
  return out;
}

}  // namespace colony::quota
