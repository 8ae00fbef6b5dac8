#include "dra/k8s/node_selector.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>

#include "dra/k8s/names.h"

namespace dra::k8s {
namespace {

std::optional<int64_t> ParseInt(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

bool Contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// labels.NewRequirement's checks, then Requirement.Matches; nullopt when
// the requirement is invalid.
std::optional<bool> MatchLabel(const NodeSelectorRequirement& r, const std::map<std::string, std::string>& labels) {
  if (!IsQualifiedName(r.key).empty()) return std::nullopt;
  const std::string& op = r.operator_;
  const bool set_op = op == "In" || op == "NotIn";
  const bool exist_op = op == "Exists" || op == "DoesNotExist";
  const bool compare_op = op == "Gt" || op == "Lt";
  if (!set_op && !exist_op && !compare_op) return std::nullopt;
  if ((set_op && r.values.empty()) || (exist_op && !r.values.empty()) || (compare_op && r.values.size() != 1)) {
    return std::nullopt;
  }
  for (const std::string& value : r.values) {
    if (compare_op ? !ParseInt(value).has_value() : !IsLabelValue(value).empty()) return std::nullopt;
  }
  const auto it = labels.find(r.key);
  const bool has = it != labels.end();
  if (op == "In") return has && Contains(r.values, it->second);
  if (op == "NotIn") return !has || !Contains(r.values, it->second);
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  if (!has) return false;
  const std::optional<int64_t> label = ParseInt(it->second);
  if (!label.has_value()) return false;
  const int64_t bound = *ParseInt(r.values[0]);
  return op == "Gt" ? *label > bound : *label < bound;
}

// fields.OneTerm(Not)EqualSelector over {"metadata.name": node_name}.
std::optional<bool> MatchField(const NodeSelectorRequirement& r, const std::string& node_name) {
  if ((r.operator_ != "In" && r.operator_ != "NotIn") || r.values.size() != 1) return std::nullopt;
  const std::string value = r.key == "metadata.name" ? node_name : "";
  return r.operator_ == "In" ? value == r.values[0] : value != r.values[0];
}

bool MatchTerm(const NodeSelectorTerm& term, const std::string& node_name,
               const std::map<std::string, std::string>& labels) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  bool matches = true;
  for (const NodeSelectorRequirement& r : term.match_expressions) {
    const std::optional<bool> m = MatchLabel(r, labels);
    if (!m.has_value()) return false;
    matches = matches && *m;
  }
  for (const NodeSelectorRequirement& r : term.match_fields) {
    const std::optional<bool> m = MatchField(r, node_name);
    if (!m.has_value()) return false;
    // As upstream: a node without a name has no fields to match against.
    if (!node_name.empty()) matches = matches && *m;
  }
  return matches;
}

}  // namespace

bool NodeSelectorMatches(const NodeSelector& selector, const std::string& node_name,
                         const std::map<std::string, std::string>& labels) {
  return std::any_of(selector.node_selector_terms.begin(), selector.node_selector_terms.end(),
                     [&](const NodeSelectorTerm& term) { return MatchTerm(term, node_name, labels); });
}

NodeSelector NodeSelectorForLabel(std::string key, std::vector<std::string> values) {
  NodeSelector selector;
  NodeSelectorRequirement& requirement = selector.node_selector_terms.emplace_back().match_expressions.emplace_back();
  requirement.key = std::move(key);
  requirement.operator_ = "In";
  requirement.values = std::move(values);
  return selector;
}

std::optional<std::string> SelectedNodeName(const NodeSelector& selector) {
  if (selector.node_selector_terms.size() != 1) return std::nullopt;
  const NodeSelectorTerm& term = selector.node_selector_terms.front();
  if (!term.match_expressions.empty() || term.match_fields.size() != 1) return std::nullopt;
  const NodeSelectorRequirement& field = term.match_fields.front();
  if (field.key != "metadata.name" || field.operator_ != "In" || field.values.size() != 1) return std::nullopt;
  return field.values.front();
}

NodeSelector NodeSelectorForName(std::string node_name) {
  NodeSelector selector;
  NodeSelectorRequirement& requirement = selector.node_selector_terms.emplace_back().match_fields.emplace_back();
  requirement.key = "metadata.name";
  requirement.operator_ = "In";
  requirement.values = {std::move(node_name)};
  return selector;
}

}  // namespace dra::k8s
