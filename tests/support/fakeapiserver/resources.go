package main

import (
	"fmt"
	"sort"
	"strings"
)

// resourceInfo describes one REST resource the fake serves.
type resourceInfo struct {
	Group, Version, Resource, Singular, Kind string
	ShortNames                               []string
	Namespaced                               bool
	HasStatus                                bool // has a /status subresource
	HasGeneration                            bool // metadata.generation is maintained
	SchemaName                               string
	// Field selectors beyond metadata.name and metadata.namespace.
	FieldSelectors map[string]func(obj map[string]any) string
}

func (r *resourceInfo) GroupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// Qualified is the group-qualified resource, e.g. "resourceslices.resource.k8s.io".
func (r *resourceInfo) Qualified() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// QualifiedKind is the group-qualified kind, e.g. "ResourceSlice.resource.k8s.io".
func (r *resourceInfo) QualifiedKind() string {
	if r.Group == "" {
		return r.Kind
	}
	return r.Kind + "." + r.Group
}

func (r *resourceInfo) ListKind() string { return r.Kind + "List" }

func (r *resourceInfo) key(namespace, name string) string {
	if r.Namespaced {
		return namespace + "/" + name
	}
	return name
}

func (r *resourceInfo) fieldValue(obj map[string]any, field string) (string, bool) {
	switch field {
	case "metadata.name":
		return objName(obj), true
	case "metadata.namespace":
		return objNamespace(obj), true
	}
	if f, ok := r.FieldSelectors[field]; ok {
		return f(obj), true
	}
	return "", false
}

func pathString(obj map[string]any, path ...string) string {
	cur := obj
	for i, p := range path {
		if i == len(path)-1 {
			return str(cur, p)
		}
		cur = child(cur, p)
	}
	return ""
}

const resourceGroup = "resource.k8s.io"

var (
	resResourceSlices = &resourceInfo{
		Group: resourceGroup, Version: "v1", Resource: "resourceslices", Singular: "resourceslice",
		Kind: "ResourceSlice", HasGeneration: true, SchemaName: "io.k8s.api.resource.v1.ResourceSlice",
		FieldSelectors: map[string]func(map[string]any) string{
			"spec.driver":    func(o map[string]any) string { return pathString(o, "spec", "driver") },
			"spec.nodeName":  func(o map[string]any) string { return pathString(o, "spec", "nodeName") },
			"spec.pool.name": func(o map[string]any) string { return pathString(o, "spec", "pool", "name") },
		},
	}
	resResourceClaims = &resourceInfo{
		Group: resourceGroup, Version: "v1", Resource: "resourceclaims", Singular: "resourceclaim",
		// No metadata.generation: the real server's ResourceClaim strategy never sets it.
		Kind: "ResourceClaim", Namespaced: true, HasStatus: true,
		SchemaName: "io.k8s.api.resource.v1.ResourceClaim",
	}
	resDeviceClasses = &resourceInfo{
		Group: resourceGroup, Version: "v1", Resource: "deviceclasses", Singular: "deviceclass",
		Kind: "DeviceClass", HasGeneration: true, SchemaName: "io.k8s.api.resource.v1.DeviceClass",
	}
	resNodes = &resourceInfo{
		Group: "", Version: "v1", Resource: "nodes", Singular: "node", Kind: "Node", ShortNames: []string{"no"},
		HasStatus: true,
		FieldSelectors: map[string]func(map[string]any) string{
			"spec.unschedulable": func(o map[string]any) string {
				if b, _ := child(o, "spec")["unschedulable"].(bool); b {
					return "true"
				}
				return "false"
			},
		},
	}
	// Pods as a store only (no schema, no scheduling): what a driver reads of
	// its own pod (the GPU example's health pins).
	resPods = &resourceInfo{
		Group: "", Version: "v1", Resource: "pods", Singular: "pod", Kind: "Pod", ShortNames: []string{"po"},
		Namespaced: true, HasStatus: true,
	}
	allResources = []*resourceInfo{resResourceSlices, resResourceClaims, resDeviceClasses, resNodes, resPods}
)

func lookupResource(group, version, resource string) *resourceInfo {
	for _, r := range allResources {
		if r.Group == group && r.Version == version && r.Resource == resource {
			return r
		}
	}
	return nil
}

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func apiResourceList(group, version string) map[string]any {
	var res []any
	for _, r := range allResources {
		if r.Group != group || r.Version != version {
			continue
		}
		e := map[string]any{"name": r.Resource, "singularName": r.Singular, "namespaced": r.Namespaced,
			"kind": r.Kind, "verbs": allVerbs}
		if len(r.ShortNames) > 0 {
			e["shortNames"] = r.ShortNames
		}
		res = append(res, e)
		if r.HasStatus {
			res = append(res, map[string]any{"name": r.Resource + "/status", "singularName": "",
				"namespaced": r.Namespaced, "kind": r.Kind, "verbs": []string{"get", "patch", "update"}})
		}
	}
	return map[string]any{"kind": "APIResourceList", "apiVersion": "v1",
		"groupVersion": (&resourceInfo{Group: group, Version: version}).GroupVersion(), "resources": res}
}

func apiGroups() []map[string]any {
	versions := map[string]map[string]bool{}
	for _, r := range allResources {
		if r.Group == "" {
			continue
		}
		if versions[r.Group] == nil {
			versions[r.Group] = map[string]bool{}
		}
		versions[r.Group][r.Version] = true
	}
	var names []string
	for g := range versions {
		names = append(names, g)
	}
	sort.Strings(names)
	var out []map[string]any
	for _, g := range names {
		var vs []any
		for v := range versions[g] {
			vs = append(vs, map[string]any{"groupVersion": g + "/" + v, "version": v})
		}
		out = append(out, map[string]any{"name": g, "versions": vs, "preferredVersion": vs[0]})
	}
	return out
}

// parsedPath is a request path split into its REST parts.
type parsedPath struct {
	ri          *resourceInfo
	watchPrefix bool // /watch/ form
	namespace   string
	name        string
	subresource string
}

// parseResourcePath parses /api/v1/... and /apis/{group}/{version}/... paths.
// ok is false when the path is not a resource path at all (discovery or unknown).
func parseResourcePath(path string) (parsedPath, bool, error) {
	var p parsedPath
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group, version string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		version, rest = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, version, rest = parts[1], parts[2], parts[3:]
	default:
		return p, false, nil
	}
	if len(rest) > 0 && rest[0] == "watch" {
		p.watchPrefix = true
		rest = rest[1:]
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		p.namespace = rest[1]
		rest = rest[2:]
	}
	if len(rest) == 0 || len(rest) > 3 {
		return p, true, errPathNotFound()
	}
	p.ri = lookupResource(group, version, rest[0])
	if p.ri == nil {
		return p, true, errPathNotFound()
	}
	if p.namespace != "" && !p.ri.Namespaced {
		return p, true, errPathNotFound()
	}
	if len(rest) >= 2 {
		p.name = rest[1]
	}
	if len(rest) == 3 {
		p.subresource = rest[2]
		if p.subresource != "status" || !p.ri.HasStatus || p.watchPrefix {
			return p, true, errPathNotFound()
		}
	}
	if p.name != "" && p.ri.Namespaced && p.namespace == "" {
		return p, true, errPathNotFound()
	}
	return p, true, nil
}

func (p parsedPath) String() string {
	return fmt.Sprintf("%s ns=%q name=%q sub=%q", p.ri.Qualified(), p.namespace, p.name, p.subresource)
}
