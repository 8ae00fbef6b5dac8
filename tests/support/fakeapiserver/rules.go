package main

import (
	"fmt"
	"regexp"
	"strings"
)

// A few of the API server's own validation rules (beyond the OpenAPI schema)
// that the SDK's client-side validation mirrors and its tests rely on.

var (
	dns1123SubdomainRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dns1123LabelRe     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelValueRe       = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
	qualifiedNameRe    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
)

const (
	dns1123SubdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
	dns1123LabelMsg     = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

func checkDNSSubdomain(field, v string, max int) []statusCause {
	var out []statusCause
	if len(v) > max {
		out = append(out, causeInvalid(field, v, fmt.Sprintf("must be no more than %d characters", max)))
	}
	if !dns1123SubdomainRe.MatchString(v) {
		out = append(out, causeInvalid(field, v, dns1123SubdomainMsg))
	}
	return out
}

func checkDNSLabel(field, v string) []statusCause {
	var out []statusCause
	if len(v) > 63 {
		out = append(out, causeInvalid(field, v, "must be no more than 63 characters"))
	}
	if !dns1123LabelRe.MatchString(v) {
		out = append(out, causeInvalid(field, v, dns1123LabelMsg))
	}
	return out
}

func checkLabels(field string, labels map[string]any) []statusCause {
	var out []statusCause
	for k, v := range labels {
		name := k
		if i := strings.LastIndex(k, "/"); i >= 0 {
			prefix := k[:i]
			name = k[i+1:]
			out = append(out, checkDNSSubdomain(field, prefix, 253)...)
		}
		if len(name) > 63 || !qualifiedNameRe.MatchString(name) {
			out = append(out, causeInvalid(field, k, "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"))
		}
		s, _ := v.(string)
		if len(s) > 63 {
			out = append(out, causeInvalid(fmt.Sprintf("%s[%s]", field, k), s, "must be no more than 63 characters"))
		}
		if !labelValueRe.MatchString(s) {
			out = append(out, causeInvalid(fmt.Sprintf("%s[%s]", field, k), s,
				"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"))
		}
	}
	return out
}

// validateRules runs the server rules for obj; old is nil on create.
func validateRules(ri *resourceInfo, obj, old map[string]any) []statusCause {
	var errs []statusCause
	md := child(obj, "metadata")
	name := str(md, "name")
	if name == "" {
		errs = append(errs, causeRequiredDetail("metadata.name", "name or generateName is required"))
	} else {
		errs = append(errs, checkDNSSubdomain("metadata.name", name, 253)...)
	}
	if ri.Namespaced {
		errs = append(errs, checkDNSLabel("metadata.namespace", str(md, "namespace"))...)
	}
	if labels, ok := md["labels"].(map[string]any); ok {
		errs = append(errs, checkLabels("metadata.labels", labels)...)
	}
	switch ri {
	case resResourceSlices:
		errs = append(errs, validateSlice(obj, old)...)
	case resResourceClaims:
		if old != nil && !deepEqual(obj["spec"], old["spec"]) {
			errs = append(errs, causeInvalid("spec", obj["spec"], "field is immutable"))
		}
	}
	return errs
}

const (
	maxDevicesPerSlice            = 128
	maxDevicesWithTaintsOrCounter = 64
)

func validateSlice(obj, old map[string]any) []statusCause {
	var errs []statusCause
	spec := child(obj, "spec")
	driver := str(spec, "driver")
	if driver == "" {
		errs = append(errs, causeRequired("spec.driver"))
	} else {
		errs = append(errs, checkDNSSubdomain("spec.driver", driver, 63)...)
	}
	pool := child(spec, "pool")
	if str(pool, "name") == "" {
		errs = append(errs, causeRequired("spec.pool.name"))
	}
	var set []string
	if str(spec, "nodeName") != "" {
		set = append(set, "`nodeName`")
	}
	if spec["nodeSelector"] != nil {
		set = append(set, "`nodeSelector`")
	}
	if b, _ := spec["allNodes"].(bool); b {
		set = append(set, "`allNodes`")
	}
	if b, _ := spec["perDeviceNodeSelection"].(bool); b {
		set = append(set, "`perDeviceNodeSelection`")
	}
	const exactlyOne = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
	switch {
	case len(set) == 0:
		errs = append(errs, causeRequiredDetail("spec", exactlyOne))
	case len(set) > 1:
		errs = append(errs, causeInvalid("spec", "{"+strings.Join(set, ", ")+"}", exactlyOne+", but multiple fields are set"))
	}
	devices, _ := spec["devices"].([]any)
	limit := maxDevicesPerSlice
	seen := map[string]bool{}
	for i, d := range devices {
		dm, _ := d.(map[string]any)
		if dm["taints"] != nil || dm["consumesCounters"] != nil {
			limit = maxDevicesWithTaintsOrCounter
		}
		n := str(dm, "name")
		f := fmt.Sprintf("spec.devices[%d].name", i)
		if n == "" {
			continue // the schema already reports it
		}
		errs = append(errs, checkDNSLabel(f, n)...)
		if seen[n] {
			errs = append(errs, statusCause{Type: "FieldValueDuplicate", Message: fmt.Sprintf("Duplicate value: %q", n), Field: f})
		}
		seen[n] = true
	}
	if len(devices) > limit {
		errs = append(errs, causeTooMany("spec.devices", len(devices), limit))
	}
	if old != nil {
		oldSpec := child(old, "spec")
		if str(oldSpec, "driver") != driver {
			errs = append(errs, causeInvalid("spec.driver", driver, "field is immutable"))
		}
		if str(oldSpec, "nodeName") != str(spec, "nodeName") {
			errs = append(errs, causeInvalid("spec.nodeName", str(spec, "nodeName"), "field is immutable"))
		}
	}
	return errs
}

// dropPath is a parsed --drop-fields entry such as spec.devices[].taints.
type dropPath []dropSeg

type dropSeg struct {
	name string
	each bool // the field is a list; descend into every element
}

func parseDropPaths(list []string) ([]dropPath, error) {
	var out []dropPath
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		var p dropPath
		for _, part := range strings.Split(s, ".") {
			seg := dropSeg{name: part}
			if strings.HasSuffix(part, "[]") {
				seg = dropSeg{name: strings.TrimSuffix(part, "[]"), each: true}
			}
			if seg.name == "" || strings.ContainsAny(seg.name, "[]") {
				return nil, fmt.Errorf("invalid drop-field path %q", s)
			}
			p = append(p, seg)
		}
		out = append(out, p)
	}
	return out, nil
}

func (p dropPath) String() string {
	parts := make([]string, len(p))
	for i, s := range p {
		parts[i] = s.name
		if s.each {
			parts[i] += "[]"
		}
	}
	return strings.Join(parts, ".")
}

// apply removes the field the path names from v, in place.
func (p dropPath) apply(v any) {
	m, ok := v.(map[string]any)
	if !ok || len(p) == 0 {
		return
	}
	seg := p[0]
	if len(p) == 1 && !seg.each {
		delete(m, seg.name)
		return
	}
	next, ok := m[seg.name]
	if !ok {
		return
	}
	if seg.each {
		l, ok := next.([]any)
		if !ok {
			return
		}
		if len(p) == 1 {
			delete(m, seg.name)
			return
		}
		for _, e := range l {
			p[1:].apply(e)
		}
		return
	}
	p[1:].apply(next)
}
