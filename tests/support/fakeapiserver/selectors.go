package main

import (
	"fmt"
	"strconv"
	"strings"
)

// labelRequirement is one clause of a label selector.
type labelRequirement struct {
	key    string
	op     string // exists, !, =, !=, in, notin, gt, lt
	values []string
}

type labelSelector []labelRequirement

// parseLabelSelector understands the set-based syntax of
// k8s.io/apimachinery/pkg/labels: a, !a, a=b, a==b, a!=b, a in (b,c),
// a notin (b,c), a>1, a<1; clauses separated by commas.
func parseLabelSelector(s string) (labelSelector, error) {
	var out labelSelector
	for _, term := range splitTopLevel(s) {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		r, err := parseLabelTerm(term)
		if err != nil {
			return nil, fmt.Errorf("unable to parse requirement: %v", err)
		}
		out = append(out, r)
	}
	return out, nil
}

func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func validLabelKey(k string) bool {
	if k == "" || len(k) > 253+1+63 {
		return false
	}
	return !strings.ContainsAny(k, " \t=!<>(),")
}

func parseLabelTerm(term string) (labelRequirement, error) {
	if strings.HasPrefix(term, "!") {
		k := strings.TrimSpace(term[1:])
		if !validLabelKey(k) {
			return labelRequirement{}, fmt.Errorf("invalid label key %q", k)
		}
		return labelRequirement{key: k, op: "!"}, nil
	}
	for _, op := range []string{" notin ", " in "} {
		if i := strings.Index(term, op); i > 0 {
			k := strings.TrimSpace(term[:i])
			rest := strings.TrimSpace(term[i+len(op):])
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return labelRequirement{}, fmt.Errorf("found '%s', expected: '('", rest)
			}
			var vals []string
			for _, v := range strings.Split(rest[1:len(rest)-1], ",") {
				vals = append(vals, strings.TrimSpace(v))
			}
			if !validLabelKey(k) {
				return labelRequirement{}, fmt.Errorf("invalid label key %q", k)
			}
			return labelRequirement{key: k, op: strings.TrimSpace(op), values: vals}, nil
		}
	}
	for _, op := range []string{"!=", "==", "=", ">", "<"} {
		if i := strings.Index(term, op); i > 0 {
			k := strings.TrimSpace(term[:i])
			v := strings.TrimSpace(term[i+len(op):])
			if !validLabelKey(k) {
				return labelRequirement{}, fmt.Errorf("invalid label key %q", k)
			}
			switch op {
			case "==":
				op = "="
			case ">":
				op = "gt"
			case "<":
				op = "lt"
			}
			if op == "gt" || op == "lt" {
				if _, err := strconv.ParseInt(v, 10, 64); err != nil {
					return labelRequirement{}, fmt.Errorf("for 'Gt', 'Lt' operators, the value must be an integer")
				}
			}
			return labelRequirement{key: k, op: op, values: []string{v}}, nil
		}
	}
	if !validLabelKey(term) {
		return labelRequirement{}, fmt.Errorf("invalid label key %q", term)
	}
	return labelRequirement{key: term, op: "exists"}, nil
}

func (sel labelSelector) matches(labels map[string]string) bool {
	for _, r := range sel {
		v, has := labels[r.key]
		switch r.op {
		case "exists":
			if !has {
				return false
			}
		case "!":
			if has {
				return false
			}
		case "=":
			if !has || v != r.values[0] {
				return false
			}
		case "!=":
			if has && v == r.values[0] {
				return false
			}
		case "in":
			if !has || !contains(r.values, v) {
				return false
			}
		case "notin":
			if has && contains(r.values, v) {
				return false
			}
		case "gt", "lt":
			if !has {
				return false
			}
			lv, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return false
			}
			rv, _ := strconv.ParseInt(r.values[0], 10, 64)
			if (r.op == "gt" && !(lv > rv)) || (r.op == "lt" && !(lv < rv)) {
				return false
			}
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

type fieldRequirement struct {
	field, value string
	negate       bool
}

type fieldSelector []fieldRequirement

// parseFieldSelector understands a=b, a==b and a!=b clauses separated by
// commas, and rejects fields the resource does not support.
func parseFieldSelector(s string, ri *resourceInfo) (fieldSelector, error) {
	var out fieldSelector
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		var r fieldRequirement
		switch {
		case strings.Contains(term, "!="):
			i := strings.Index(term, "!=")
			r = fieldRequirement{field: term[:i], value: term[i+2:], negate: true}
		case strings.Contains(term, "=="):
			i := strings.Index(term, "==")
			r = fieldRequirement{field: term[:i], value: term[i+2:]}
		case strings.Contains(term, "="):
			i := strings.Index(term, "=")
			r = fieldRequirement{field: term[:i], value: term[i+1:]}
		default:
			return nil, fmt.Errorf("invalid selector: '%s'; can't understand '%s'", s, term)
		}
		r.field = strings.TrimSpace(r.field)
		r.value = strings.TrimSpace(r.value)
		if _, ok := ri.fieldValue(map[string]any{}, r.field); !ok {
			// Each the real server's wording for the resource.
			switch {
			case ri.Group == "":
				return nil, fmt.Errorf("field label not supported: %s", r.field)
			case len(ri.FieldSelectors) == 0:
				return nil, fmt.Errorf(`%q is not a known field selector: only "metadata.name", "metadata.namespace"`, r.field)
			}
			return nil, fmt.Errorf("field label not supported for %s, Kind=%s: %s", ri.GroupVersion(), ri.Kind, r.field)
		}
		out = append(out, r)
	}
	return out, nil
}

func (sel fieldSelector) matches(ri *resourceInfo, obj map[string]any) bool {
	for _, r := range sel {
		v, _ := ri.fieldValue(obj, r.field)
		if (v == r.value) == r.negate {
			return false
		}
	}
	return true
}

// objectFilter combines namespace, label and field selection.
type objectFilter struct {
	ri        *resourceInfo
	namespace string // "" = all
	name      string // "" = all (single-object watch)
	labels    labelSelector
	fields    fieldSelector
}

func (f *objectFilter) matches(obj map[string]any) bool {
	if obj == nil {
		return false
	}
	if f.namespace != "" && objNamespace(obj) != f.namespace {
		return false
	}
	if f.name != "" && objName(obj) != f.name {
		return false
	}
	if len(f.labels) > 0 && !f.labels.matches(stringMap(child(obj, "metadata")["labels"])) {
		return false
	}
	return len(f.fields) == 0 || f.fields.matches(f.ri, obj)
}

func (f *objectFilter) hasSelectors() bool { return len(f.labels) > 0 || len(f.fields) > 0 }
