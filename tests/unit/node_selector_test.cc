// NodeSelectorMatches against the scheduler's rules (k8s.io/component-helpers
// scheduling/corev1/nodeaffinity and apimachinery labels.Requirement).
#include <catch2/catch.hpp>

#include "dra/k8s/node_selector.h"

namespace dra::k8s {
namespace {

NodeSelectorRequirement Req(std::string key, std::string op, std::vector<std::string> values = {}) {
  NodeSelectorRequirement r;
  r.key = std::move(key);
  r.operator_ = std::move(op);
  r.values = std::move(values);
  return r;
}

NodeSelector Labels(std::vector<NodeSelectorRequirement> expressions) {
  NodeSelector selector;
  selector.node_selector_terms.emplace_back().match_expressions = std::move(expressions);
  return selector;
}

const std::map<std::string, std::string> kLabels = {
    {"accelerator-type", "high-performance"}, {"gpus", "8"}, {"zone", "a"}};

TEST_CASE("label operators as the scheduler applies them", "[node_selector]") {
  CHECK(NodeSelectorMatches(Labels({Req("accelerator-type", "In", {"high-performance", "x"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("accelerator-type", "In", {"low"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("missing", "In", {"x"})}), "n", kLabels));
  CHECK(NodeSelectorMatches(Labels({Req("zone", "NotIn", {"b"})}), "n", kLabels));
  CHECK(NodeSelectorMatches(Labels({Req("missing", "NotIn", {"b"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("zone", "NotIn", {"a"})}), "n", kLabels));
  CHECK(NodeSelectorMatches(Labels({Req("zone", "Exists")}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("missing", "Exists")}), "n", kLabels));
  CHECK(NodeSelectorMatches(Labels({Req("missing", "DoesNotExist")}), "n", kLabels));
  CHECK(NodeSelectorMatches(Labels({Req("gpus", "Gt", {"4"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("gpus", "Gt", {"8"})}), "n", kLabels));
  CHECK(NodeSelectorMatches(Labels({Req("gpus", "Lt", {"9"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("zone", "Lt", {"9"})}), "n", kLabels));  // "a" is no number
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("missing", "Gt", {"1"})}), "n", kLabels));
  // ANDed within a term.
  CHECK(NodeSelectorMatches(Labels({Req("zone", "In", {"a"}), Req("gpus", "Gt", {"1"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("zone", "In", {"a"}), Req("gpus", "Gt", {"10"})}), "n", kLabels));
}

TEST_CASE("invalid requirements and empty terms select nothing, terms are ORed", "[node_selector]") {
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("zone", "Equals", {"a"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("zone", "In")}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("zone", "Exists", {"a"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("gpus", "Gt", {"1", "2"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("gpus", "Gt", {"one"})}), "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("bad key!", "Exists")}), "n", kLabels));
  // An invalid requirement spoils its term even when ANDed with a match.
  CHECK_FALSE(NodeSelectorMatches(Labels({Req("zone", "In", {"a"}), Req("zone", "In")}), "n", kLabels));

  NodeSelector selector;
  selector.node_selector_terms.emplace_back();  // empty
  CHECK_FALSE(NodeSelectorMatches(selector, "n", kLabels));
  selector.node_selector_terms.emplace_back().match_expressions = {Req("zone", "In", {"b"})};
  CHECK_FALSE(NodeSelectorMatches(selector, "n", kLabels));
  selector.node_selector_terms.emplace_back().match_expressions = {Req("zone", "In", {"a"})};
  CHECK(NodeSelectorMatches(selector, "n", kLabels));
  CHECK_FALSE(NodeSelectorMatches(NodeSelector{}, "n", kLabels));
}

TEST_CASE("match fields: metadata.name with In and NotIn, one value", "[node_selector]") {
  NodeSelector selector;
  NodeSelectorTerm& term = selector.node_selector_terms.emplace_back();
  term.match_fields = {Req("metadata.name", "In", {"node-1"})};
  CHECK(NodeSelectorMatches(selector, "node-1", {}));
  CHECK_FALSE(NodeSelectorMatches(selector, "node-2", {}));
  term.match_fields = {Req("metadata.name", "NotIn", {"node-1"})};
  CHECK(NodeSelectorMatches(selector, "node-2", {}));
  CHECK_FALSE(NodeSelectorMatches(selector, "node-1", {}));
  term.match_fields = {Req("metadata.name", "In", {"node-1", "node-2"})};
  CHECK_FALSE(NodeSelectorMatches(selector, "node-1", {}));
  term.match_fields = {Req("metadata.name", "Exists")};
  CHECK_FALSE(NodeSelectorMatches(selector, "node-1", {}));
  // Fields and labels ANDed, as the DRA allocation's selector uses them.
  term.match_fields = {Req("metadata.name", "In", {"node-1"})};
  term.match_expressions = {Req("zone", "In", {"a"})};
  CHECK(NodeSelectorMatches(selector, "node-1", kLabels));
  CHECK_FALSE(NodeSelectorMatches(selector, "node-1", {{"zone", "b"}}));
}

TEST_CASE("SelectedNodeName: the one node a selector names, the reverse of NodeSelectorForName", "[node_selector]") {
  CHECK(SelectedNodeName(NodeSelectorForName("node-b")) == "node-b");
  CHECK(SelectedNodeName(NodeSelectorForLabel("accelerator-type", {"high-performance"})) == std::nullopt);
  NodeSelector two = NodeSelectorForName("node-a");
  two.node_selector_terms.push_back(NodeSelectorForName("node-b").node_selector_terms.front());
  CHECK(SelectedNodeName(two) == std::nullopt);
  NodeSelector not_in = NodeSelectorForName("node-a");
  not_in.node_selector_terms.front().match_fields.front().operator_ = "NotIn";
  CHECK(SelectedNodeName(not_in) == std::nullopt);
  NodeSelector with_label = NodeSelectorForName("node-a");
  with_label.node_selector_terms.front().match_expressions = {Req("zone", "In", {"a"})};
  CHECK(SelectedNodeName(with_label) == std::nullopt);
  CHECK(SelectedNodeName(NodeSelector{}) == std::nullopt);
}

}  // namespace
}  // namespace dra::k8s
