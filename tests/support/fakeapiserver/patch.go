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
