package main

import (
	"encoding/json"
	"sort"
	"strings"
)

// A minimal model of server-side apply field ownership (the FieldsV1 format
// of sigs.k8s.io/structured-merge-diff): a tree whose keys are "f:<field>",
// "k:<json of list-map keys>", "v:<json value>" and "." (the element itself).
// A node without children is a leaf: the whole value at that path is owned.
// A member node owns an empty map or struct itself (what the real server
// records for "status: {}" in an applied configuration) but nothing that
// is later put in it; it also renders as {}.
type fieldSet struct {
	children map[string]*fieldSet
	member   bool
}

func leafSet() *fieldSet { return &fieldSet{} }

func memberSet() *fieldSet { return &fieldSet{member: true} }

// withoutEmptyMetadata drops an f:metadata that owns nothing: ownableView
// leaves metadata empty when it holds only fields no one owns (name,
// namespace), which the real server does not record.
func withoutEmptyMetadata(f *fieldSet) *fieldSet {
	if md := f.child("f:metadata"); md != nil && len(md.children) == 0 {
		delete(f.children, "f:metadata")
		if len(f.children) == 0 && !f.member {
			return nil
		}
	}
	return f
}

func (f *fieldSet) isLeaf() bool { return f != nil && len(f.children) == 0 && !f.member }

func (f *fieldSet) add(k string, c *fieldSet) {
	if f.children == nil {
		f.children = map[string]*fieldSet{}
	}
	f.children[k] = c
}

func (f *fieldSet) child(k string) *fieldSet {
	if f == nil {
		return nil
	}
	return f.children[k]
}

func (f *fieldSet) toJSON() map[string]any {
	out := map[string]any{}
	if f == nil {
		return out
	}
	for k, c := range f.children {
		out[k] = c.toJSON()
	}
	return out
}

func (f *fieldSet) equal(g *fieldSet) bool {
	if f == nil || g == nil {
		return f == g
	}
	return deepEqual(f.toJSON(), g.toJSON())
}

func unionSets(a, b *fieldSet) *fieldSet {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.isLeaf() && b.isLeaf() {
		return leafSet()
	}
	if a.isLeaf() || b.isLeaf() {
		// A leaf owns the whole value; keep the finer structure of the other.
		if a.isLeaf() {
			return b
		}
		return a
	}
	out := &fieldSet{member: a.member || b.member}
	for k, c := range a.children {
		out.add(k, unionSets(c, b.children[k]))
	}
	for k, c := range b.children {
		if _, ok := a.children[k]; !ok {
			out.add(k, c)
		}
	}
	return out
}

// subtractSets removes from a every path covered by b.
func subtractSets(a, b *fieldSet) *fieldSet {
	if a == nil || b == nil {
		return a
	}
	if b.isLeaf() {
		return nil
	}
	if a.isLeaf() {
		return a
	}
	out := &fieldSet{member: a.member && !b.member}
	for k, c := range a.children {
		bc, ok := b.children[k]
		if !ok {
			out.add(k, c)
			continue
		}
		if r := subtractSets(c, bc); r != nil {
			out.add(k, r)
		}
	}
	if len(out.children) == 0 && !out.member {
		return nil
	}
	return out
}

func listMapKey(elem map[string]any, keys []string) string {
	k := map[string]any{}
	for _, name := range keys {
		if v, ok := elem[name]; ok && v != nil {
			k[name] = v
		}
	}
	return "k:" + string(mustJSON(k))
}

func valueKey(v any) string { return "v:" + string(mustJSON(v)) }

func findListMapIndex(list []any, keys []string, key string) int {
	for i, e := range list {
		if em, ok := e.(map[string]any); ok && listMapKey(em, keys) == key {
			return i
		}
	}
	return -1
}

// diffSet returns the set of leaves of nv that are absent from, or differ
// in, ov (ov == nil: every leaf of nv). sch is nv's schema (may be nil).
// With dots (the set of an Update), a non-empty map, struct or list that ov
// lacks is also recorded itself ("."), as the real server records an added
// container; list-map elements always are.
func (o *openAPI) diffSet(ov, nv any, sch map[string]any, dots bool) *fieldSet {
	if nv == nil {
		return nil
	}
	kind, _ := o.kindOf(sch)
	switch t := nv.(type) {
	case map[string]any:
		if kind == kindFree || kind == kindScalar {
			break
		}
		om, _ := ov.(map[string]any)
		out := &fieldSet{}
		for k, v := range t {
			if c := o.diffSet(om[k], v, o.propSchema(sch, k), dots); c != nil {
				out.add("f:"+k, c)
			}
		}
		if len(out.children) == 0 {
			if ov == nil && len(t) == 0 {
				return memberSet() // an empty struct or map that was not there
			}
			return nil
		}
		if dots && ov == nil {
			out.add(".", leafSet())
		}
		return out
	case []any:
		lt, keys := o.listType(sch)
		ol, _ := ov.([]any)
		if lt == "atomic" {
			break
		}
		out := &fieldSet{}
		item := o.itemSchema(sch)
		for _, e := range t {
			if lt == "set" {
				if !containsValue(ol, e) {
					out.add(valueKey(e), leafSet())
				}
				continue
			}
			em, ok := e.(map[string]any)
			if !ok {
				if deepEqual(ov, nv) {
					return nil
				}
				return leafSet()
			}
			key := listMapKey(em, keys)
			var old any
			if i := findListMapIndex(ol, keys, key); i >= 0 {
				old = ol[i]
			}
			c := o.diffSet(old, em, item, dots)
			if old == nil {
				if c == nil || c.isLeaf() {
					c = &fieldSet{}
				}
				c.add(".", leafSet())
			}
			if c != nil {
				out.add(key, c)
			}
		}
		if len(out.children) == 0 {
			return nil
		}
		if dots && ov == nil {
			out.add(".", leafSet())
		}
		return out
	}
	if deepEqual(ov, nv) {
		return nil
	}
	return leafSet()
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if deepEqual(e, v) {
			return true
		}
	}
	return false
}

// commonLeaves calls fn for every path owned by both a and b (where either
// owns the whole value), with the values a and b hold there (nil when
// absent). path is rendered like the real server's conflict paths:
// .spec.pool.generation, .status.devices[driver="d",pool="p",device="x"].
func (o *openAPI) commonLeaves(a, b *fieldSet, av, bv any, sch map[string]any, path string, fn func(path string, x, y any)) {
	if a == nil || b == nil {
		return
	}
	if a.isLeaf() || b.isLeaf() {
		if path != "" {
			fn(path, av, bv)
		}
		return
	}
	keys := make([]string, 0, len(a.children))
	for k := range a.children {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		bc := b.child(k)
		if k == "." || bc == nil {
			continue
		}
		ac, cs, _ := o.lookupChild(sch, av, k)
		bcv, _, _ := o.lookupChild(sch, bv, k)
		o.commonLeaves(a.children[k], bc, ac, bcv, cs, path+renderPathElement(k), fn)
	}
}

func renderPathElement(k string) string {
	switch {
	case strings.HasPrefix(k, "f:"):
		return "." + k[2:]
	case strings.HasPrefix(k, "k:"):
		var m map[string]any
		_ = json.Unmarshal([]byte(k[2:]), &m)
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = n + "=" + string(mustJSON(m[n]))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case strings.HasPrefix(k, "v:"):
		return "[=" + k[2:] + "]"
	}
	return k
}

// lookupChild resolves one fieldSet key against a value.
func (o *openAPI) lookupChild(sch map[string]any, v any, k string) (any, map[string]any, bool) {
	switch {
	case strings.HasPrefix(k, "f:"):
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		c, ok := m[k[2:]]
		if !ok || c == nil {
			return nil, nil, false
		}
		return c, o.propSchema(sch, k[2:]), true
	case strings.HasPrefix(k, "k:"):
		l, ok := v.([]any)
		if !ok {
			return nil, nil, false
		}
		_, keys := o.listType(sch)
		if keys == nil {
			keys = keysOfListKey(k)
		}
		if i := findListMapIndex(l, keys, k); i >= 0 {
			return l[i], o.itemSchema(sch), true
		}
	case strings.HasPrefix(k, "v:"):
		l, ok := v.([]any)
		if !ok {
			return nil, nil, false
		}
		for _, e := range l {
			if valueKey(e) == k {
				return e, o.itemSchema(sch), true
			}
		}
	}
	return nil, nil, false
}

func keysOfListKey(k string) []string {
	var m map[string]any
	_ = json.Unmarshal([]byte(k[2:]), &m)
	var keys []string
	for name := range m {
		keys = append(keys, name)
	}
	sort.Strings(keys)
	return keys
}

// pruneSet drops the paths of f that no longer exist in v.
func (o *openAPI) pruneSet(f *fieldSet, v any, sch map[string]any) *fieldSet {
	if f == nil || v == nil {
		return nil
	}
	if f.isLeaf() {
		return f
	}
	out := &fieldSet{member: f.member}
	for k, c := range f.children {
		if k == "." {
			out.add(k, c)
			continue
		}
		cv, cs, ok := o.lookupChild(sch, v, k)
		if !ok {
			continue
		}
		if p := o.pruneSet(c, cv, cs); p != nil {
			out.add(k, p)
		}
	}
	if len(out.children) == 0 && !out.member {
		return nil
	}
	return out
}

// removeDropped deletes from v what prev owned, next no longer owns and no
// other manager owns: the "fields removed from the applied configuration are
// removed from the object" rule of server-side apply. Returns the new value.
func (o *openAPI) removeDropped(v any, sch map[string]any, prev, next *fieldSet, others []*fieldSet) any {
	if prev == nil || prev.isLeaf() || v == nil {
		return v
	}
	for _, ot := range others {
		if ot.isLeaf() {
			return v // someone else owns all of it
		}
	}
	for k, pc := range prev.children {
		if k == "." {
			continue
		}
		nc := next.child(k)
		var oc []*fieldSet
		for _, ot := range others {
			if c := ot.child(k); c != nil {
				oc = append(oc, c)
			}
		}
		cv, cs, ok := o.lookupChild(sch, v, k)
		if !ok {
			continue
		}
		// A value prev owned as a whole (a leaf, or an element it owned
		// itself: ".") goes when no one else owns it.
		if nc == nil && len(oc) == 0 && (pc.isLeaf() || pc.child(".") != nil) {
			v = removeChild(v, k, sch, o)
			continue
		}
		if nc.isLeaf() || pc.isLeaf() {
			continue
		}
		// Otherwise only what prev owned inside goes; a map or list left
		// empty is dropped, as omitempty does in the Go types.
		rest := o.removeDropped(deepCopy(cv), cs, pc, nc, oc)
		if kind, _ := o.kindOf(cs); isEmptyContainer(rest) && (kind == kindMap || kind == kindArray) {
			v = removeChild(v, k, sch, o)
			continue
		}
		v = replaceChild(v, k, sch, o, rest)
	}
	return v
}

func isEmptyContainer(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func removeChild(v any, k string, sch map[string]any, o *openAPI) any {
	switch t := v.(type) {
	case map[string]any:
		delete(t, strings.TrimPrefix(k, "f:"))
		return t
	case []any:
		out := make([]any, 0, len(t))
		_, keys := o.listType(sch)
		if keys == nil && strings.HasPrefix(k, "k:") {
			keys = keysOfListKey(k)
		}
		for _, e := range t {
			if strings.HasPrefix(k, "v:") && valueKey(e) == k {
				continue
			}
			if em, ok := e.(map[string]any); ok && strings.HasPrefix(k, "k:") && listMapKey(em, keys) == k {
				continue
			}
			out = append(out, e)
		}
		return out
	}
	return v
}

func replaceChild(v any, k string, sch map[string]any, o *openAPI, nv any) any {
	switch t := v.(type) {
	case map[string]any:
		t[strings.TrimPrefix(k, "f:")] = nv
	case []any:
		_, keys := o.listType(sch)
		if keys == nil && strings.HasPrefix(k, "k:") {
			keys = keysOfListKey(k)
		}
		if i := findListMapIndex(t, keys, k); i >= 0 {
			t[i] = nv
		}
	}
	return v
}

// applyMerge merges an applied configuration into the live value: structs
// and maps field by field, list-maps element by element (by key), sets by
// value; atomic lists and scalars are replaced.
func (o *openAPI) applyMerge(live, cfg any, sch map[string]any) any {
	kind, _ := o.kindOf(sch)
	switch c := cfg.(type) {
	case map[string]any:
		if kind == kindFree {
			return deepCopy(cfg)
		}
		out := map[string]any{}
		if lm, ok := live.(map[string]any); ok {
			for k, v := range lm {
				out[k] = v
			}
		}
		for k, v := range c {
			if v == nil {
				continue // null in an applied configuration: not specified
			}
			out[k] = o.applyMerge(out[k], v, o.propSchema(sch, k))
		}
		return out
	case []any:
		lt, keys := o.listType(sch)
		ll, _ := live.([]any)
		switch lt {
		case "map":
			out := append([]any{}, ll...)
			for _, e := range c {
				em, ok := e.(map[string]any)
				if !ok {
					return deepCopy(cfg)
				}
				if i := findListMapIndex(out, keys, listMapKey(em, keys)); i >= 0 {
					out[i] = o.applyMerge(out[i], em, o.itemSchema(sch))
				} else {
					out = append(out, deepCopy(em))
				}
			}
			return out
		case "set":
			out := append([]any{}, ll...)
			for _, e := range c {
				if !containsValue(out, e) {
					out = append(out, e)
				}
			}
			return out
		}
	}
	return deepCopy(cfg)
}

// managerEntry is one metadata.managedFields entry.
type managerEntry struct {
	Manager, Operation, Subresource, APIVersion, Time string
	Set                                               *fieldSet
}

// sortManagers orders entries as the real server does: by operation
// ("Apply" before "Update"), time, manager, apiVersion, subresource.
func sortManagers(entries []*managerEntry) {
	sort.SliceStable(entries, func(i, j int) bool {
		p, q := entries[i], entries[j]
		if p.Operation != q.Operation {
			return p.Operation < q.Operation
		}
		if p.Time != q.Time {
			return p.Time < q.Time // RFC 3339 UTC seconds sort as text
		}
		if p.Manager != q.Manager {
			return p.Manager < q.Manager
		}
		if p.APIVersion != q.APIVersion {
			return p.APIVersion < q.APIVersion
		}
		return p.Subresource < q.Subresource
	})
}

func renderManagedFields(entries []*managerEntry) []any {
	out := make([]any, 0, len(entries))
	for _, e := range entries {
		m := map[string]any{"manager": e.Manager, "operation": e.Operation, "apiVersion": e.APIVersion,
			"time": e.Time, "fieldsType": "FieldsV1", "fieldsV1": e.Set.toJSON()}
		if e.Subresource != "" {
			m["subresource"] = e.Subresource
		}
		out = append(out, m)
	}
	return out
}

// scopedView is the part of ownableView a write through subresource may
// change, for a resource with a status subresource: status alone through
// /status, everything but status through the main resource.
func scopedView(ri *resourceInfo, obj map[string]any, subresource string) map[string]any {
	v := ownableView(obj)
	if !ri.HasStatus {
		return v
	}
	if subresource == "status" {
		out := map[string]any{}
		if st, ok := v["status"]; ok {
			out["status"] = st
		}
		return out
	}
	delete(v, "status")
	return v
}

// ownableView is the part of an object that managedFields track: everything
// but apiVersion, kind and server-managed metadata.
func ownableView(obj map[string]any) map[string]any {
	out := map[string]any{}
	md := map[string]any{} // always there: every object has metadata
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind":
		case "metadata":
			if m, ok := v.(map[string]any); ok {
				for _, f := range []string{"generateName", "labels", "annotations", "finalizers", "ownerReferences"} {
					if fv, ok := m[f]; ok && fv != nil {
						md[f] = fv
					}
				}
			}
		default:
			out[k] = v
		}
	}
	out["metadata"] = md
	return out
}
