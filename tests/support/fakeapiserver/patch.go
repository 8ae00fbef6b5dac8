package main

import (
	"fmt"
	"strconv"
	"strings"
)

// mergePatch applies an RFC 7386 JSON merge patch and returns the result.
// target is not modified.
func mergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return deepCopy(patch)
	}
	out := map[string]any{}
	if tm, ok := target.(map[string]any); ok {
		for k, v := range tm {
			out[k] = v
		}
	}
	for k, v := range pm {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}

// jsonPatch applies an RFC 6902 JSON patch to a deep copy of doc.
func jsonPatch(doc any, patch any) (any, error) {
	ops, ok := patch.([]any)
	if !ok {
		return nil, fmt.Errorf("a JSON patch must be an array of operations")
	}
	doc = deepCopy(doc)
	for i, raw := range ops {
		op, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("operation %d is not an object", i)
		}
		kind, _ := op["op"].(string)
		path, hasPath := op["path"].(string)
		if !hasPath {
			return nil, fmt.Errorf("operation %d (%s) is missing path", i, kind)
		}
		var err error
		switch kind {
		case "add":
			doc, err = pointerSet(doc, path, deepCopy(op["value"]), true)
		case "remove":
			doc, _, err = pointerRemove(doc, path)
		case "replace":
			if _, err = pointerGet(doc, path); err == nil {
				doc, err = pointerSet(doc, path, deepCopy(op["value"]), false)
			}
		case "move", "copy":
			from, ok := op["from"].(string)
			if !ok {
				return nil, fmt.Errorf("operation %d (%s) is missing from", i, kind)
			}
			var v any
			if kind == "move" {
				doc, v, err = pointerRemove(doc, from)
			} else {
				v, err = pointerGet(doc, from)
				v = deepCopy(v)
			}
			if err == nil {
				doc, err = pointerSet(doc, path, v, true)
			}
		case "test":
			var v any
			if v, err = pointerGet(doc, path); err == nil && !deepEqual(v, op["value"]) {
				err = fmt.Errorf("testing value %s failed", path)
			}
		default:
			return nil, fmt.Errorf("unexpected kind: %q", kind)
		}
		if err != nil {
			return nil, err
		}
	}
	return doc, nil
}

func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("invalid JSON pointer %q", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func pointerGet(doc any, p string) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	cur := doc
	for _, k := range parts {
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[k]
			if !ok {
				return nil, fmt.Errorf("path %s does not exist", p)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("path %s: index out of range", p)
			}
			cur = t[i]
		default:
			return nil, fmt.Errorf("path %s does not exist", p)
		}
	}
	return cur, nil
}

// pointerSet sets (or, for arrays with insert=true, inserts) value at p.
func pointerSet(doc any, p string, value any, insert bool) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return value, nil
	}
	parent, err := pointerGet(doc, "/"+joinPointer(parts[:len(parts)-1]))
	if len(parts) == 1 {
		parent, err = doc, nil
	}
	if err != nil {
		return nil, err
	}
	last := parts[len(parts)-1]
	switch t := parent.(type) {
	case map[string]any:
		t[last] = value
		return doc, nil
	case []any:
		var i int
		if last == "-" {
			i = len(t)
		} else if i, err = strconv.Atoi(last); err != nil || i < 0 || i > len(t) || (!insert && i == len(t)) {
			return nil, fmt.Errorf("path %s: index out of range", p)
		}
		var nl []any
		if insert {
			nl = append(append(append([]any{}, t[:i]...), value), t[i:]...)
		} else {
			nl = append([]any{}, t...)
			nl[i] = value
		}
		if len(parts) == 1 {
			return nl, nil
		}
		return pointerSet(doc, "/"+joinPointer(parts[:len(parts)-1]), nl, false)
	default:
		return nil, fmt.Errorf("path %s: parent is not a container", p)
	}
}

func pointerRemove(doc any, p string) (any, any, error) {
	parts, err := splitPointer(p)
	if err != nil || len(parts) == 0 {
		return nil, nil, fmt.Errorf("cannot remove %q", p)
	}
	parentPath := "/" + joinPointer(parts[:len(parts)-1])
	var parent any = doc
	if len(parts) > 1 {
		if parent, err = pointerGet(doc, parentPath); err != nil {
			return nil, nil, err
		}
	}
	last := parts[len(parts)-1]
	switch t := parent.(type) {
	case map[string]any:
		v, ok := t[last]
		if !ok {
			return nil, nil, fmt.Errorf("path %s does not exist", p)
		}
		delete(t, last)
		return doc, v, nil
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(t) {
			return nil, nil, fmt.Errorf("path %s: index out of range", p)
		}
		v := t[i]
		nl := append(append([]any{}, t[:i]...), t[i+1:]...)
		if len(parts) == 1 {
			return nl, v, nil
		}
		doc, err = pointerSet(doc, parentPath, nl, false)
		return doc, v, err
	default:
		return nil, nil, fmt.Errorf("path %s does not exist", p)
	}
}

func joinPointer(parts []string) string {
	esc := make([]string, len(parts))
	for i, s := range parts {
		esc[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return strings.Join(esc, "/")
}

// strategicMerge applies a strategic merge patch (for the built-in types the
// fake serves) and returns the result; target is not modified. It is a
// JSON merge patch except for lists whose schema says
// x-kubernetes-patch-strategy: merge: lists of objects are merged by
// x-kubernetes-patch-merge-key (an element with "$patch": "delete" removes
// its match), lists of scalars are united. "$patch": "replace" replaces a
// map, $deleteFromPrimitiveList/<field> removes values, and the ordering
// directives ($setElementOrder/<field>, $retainKeys) are ignored.
func (o *openAPI) strategicMerge(target, patch any, sch map[string]any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return deepCopy(patch)
	}
	if pm["$patch"] == "replace" {
		out := copyObj(pm)
		delete(out, "$patch")
		return out
	}
	out := map[string]any{}
	if tm, ok := target.(map[string]any); ok {
		for k, v := range tm {
			out[k] = v
		}
	}
	for k, v := range pm {
		switch {
		case k == "$patch" || k == "$retainKeys" || strings.HasPrefix(k, "$setElementOrder/"):
			continue
		case strings.HasPrefix(k, "$deleteFromPrimitiveList/"):
			field := strings.TrimPrefix(k, "$deleteFromPrimitiveList/")
			var kept []any
			for _, e := range asList(out[field]) {
				if !containsValue(asList(v), e) {
					kept = append(kept, e)
				}
			}
			if len(kept) == 0 {
				delete(out, field)
			} else {
				out[field] = kept
			}
			continue
		case v == nil:
			delete(out, k)
			continue
		}
		ps := o.propSchema(sch, k)
		list, isList := v.([]any)
		if !isList {
			out[k] = o.strategicMerge(out[k], v, ps)
			continue
		}
		if ps["x-kubernetes-patch-strategy"] != "merge" {
			out[k] = deepCopy(list)
			continue
		}
		key, _ := ps["x-kubernetes-patch-merge-key"].(string)
		original := asList(out[k])
		merged := append([]any{}, original...)
		for _, e := range list {
			em, isMap := e.(map[string]any)
			if !isMap || key == "" {
				if !containsValue(merged, e) {
					merged = append(merged, deepCopy(e))
				}
				continue
			}
			i := -1
			for j, cur := range merged {
				if cm, ok := cur.(map[string]any); ok && deepEqual(cm[key], em[key]) {
					i = j
					break
				}
			}
			switch {
			case em["$patch"] == "delete":
				if i >= 0 {
					merged = append(merged[:i:i], merged[i+1:]...)
				}
			case i >= 0:
				merged[i] = o.strategicMerge(merged[i], em, o.itemSchema(ps))
			default:
				merged = append(merged, o.strategicMerge(nil, em, o.itemSchema(ps)))
			}
		}
		out[k] = orderLikeServer(merged, list, original, key)
	}
	return out
}

// orderLikeServer orders a merged list as the real server's strategic merge
// does: the elements the patch names in patch order, the others in their
// live order, interleaved where the live order relates them.
func orderLikeServer(merged, patch, original []any, key string) []any {
	id := func(v any) any {
		if m, ok := v.(map[string]any); ok && key != "" {
			return m[key]
		}
		return v
	}
	index := func(list []any, v any) int {
		for i, e := range list {
			if deepEqual(id(e), id(v)) {
				return i
			}
		}
		return -1
	}
	var fromPatch, serverOnly []any
	for _, p := range patch {
		if i := index(merged, p); i >= 0 && index(fromPatch, p) < 0 {
			fromPatch = append(fromPatch, merged[i])
		}
	}
	for _, e := range merged {
		if index(fromPatch, e) < 0 {
			serverOnly = append(serverOnly, e)
		}
	}
	out := make([]any, 0, len(merged))
	i, j := 0, 0
	for i < len(serverOnly) || j < len(fromPatch) {
		switch {
		case j >= len(fromPatch):
			out = append(out, serverOnly[i])
			i++
		case i >= len(serverOnly):
			out = append(out, fromPatch[j])
			j++
		default:
			li, ri := index(original, serverOnly[i]), index(original, fromPatch[j])
			if li >= 0 && ri >= 0 && li < ri {
				out = append(out, serverOnly[i])
				i++
			} else {
				out = append(out, fromPatch[j])
				j++
			}
		}
	}
	return out
}
