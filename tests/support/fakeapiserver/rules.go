package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
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
			out = append(out, causeInvalid(field, k, "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"))
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
	if gn := str(md, "generateName"); gn != "" {
		// Checked as a prefix: a trailing '-' is allowed.
		masked := gn
		if len(masked) > 1 && strings.HasSuffix(masked, "-") {
			masked = masked[:len(masked)-1] + "a"
		}
		for _, c := range checkDNSSubdomain("metadata.generateName", masked, 253) {
			c.Message = strings.Replace(c.Message, strconv.Quote(masked), strconv.Quote(gn), 1)
			errs = append(errs, c)
		}
	}
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
			errs = append(errs, causeInvalid("spec", nil, "field is immutable")) // the server prints null
		}
		if old == nil || !deepEqual(obj["status"], old["status"]) {
			errs = append(errs, validateClaimStatusDevices(obj)...)
		}
	}
	return errs
}

// The value fields of a DeviceAttribute (list types: DRAListTypeAttributes).
var attributeTypes = []string{"int", "bool", "string", "version", "ints", "bools", "strings", "versions"}

const attributeTypeList = "`int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`"

func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// validateClaimStatusDevices: every status.devices entry must name a device
// of the allocation (driver, pool, device, shareID).
func validateClaimStatusDevices(obj map[string]any) []statusCause {
	type deviceKey struct{ Driver, Pool, Device, ShareID string }
	allocated := map[deviceKey]bool{}
	status := child(obj, "status")
	for _, r := range asList(child(child(status, "allocation"), "devices")["results"]) {
		rm, _ := r.(map[string]any)
		allocated[deviceKey{str(rm, "driver"), str(rm, "pool"), str(rm, "device"), str(rm, "shareID")}] = true
	}
	var errs []statusCause
	for i, d := range asList(status["devices"]) {
		dm, _ := d.(map[string]any)
		k := deviceKey{str(dm, "driver"), str(dm, "pool"), str(dm, "device"), str(dm, "shareID")}
		if !allocated[k] {
			errs = append(errs, statusCause{Type: "FieldValueInvalid", Field: fmt.Sprintf("status.devices[%d]", i),
				Message: fmt.Sprintf("Invalid value: %s: must be an allocated device in the claim", mustJSON(k))})
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
	if n, ok := pool["resourceSliceCount"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && v <= 0 {
			errs = append(errs, causeInvalid("spec.pool.resourceSliceCount", n, "must be greater than zero"))
		}
	}
	if n, ok := pool["generation"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && v < 0 {
			errs = append(errs, causeInvalid("spec.pool.generation", n, "must be greater than or equal to zero"))
		}
	}
	if v, ok := spec["nodeName"]; ok && v == "" {
		errs = append(errs, causeInvalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
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
	if len(devices) > 0 && len(asList(spec["sharedCounters"])) > 0 {
		errs = append(errs, causeInvalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	limit := maxDevicesPerSlice
	seen := map[string]bool{}
	var attributeErrs []statusCause // the server reports them after the other device errors
	for i, d := range devices {
		dm, _ := d.(map[string]any)
		if dm["taints"] != nil || dm["consumesCounters"] != nil {
			limit = maxDevicesWithTaintsOrCounter
		}
		multiple, _ := dm["allowMultipleAllocations"].(bool)
		capacity, _ := dm["capacity"].(map[string]any)
		for _, k := range sortedNames(capacity) {
			c, _ := capacity[k].(map[string]any)
			policy, _ := c["requestPolicy"].(map[string]any)
			if policy == nil {
				continue
			}
			field := fmt.Sprintf("spec.devices[%d].capacity[%s].requestPolicy", i, k)
			if !multiple {
				errs = append(errs, causeForbidden(field, "allowMultipleAllocations must be true"))
			}
			if len(asList(policy["validValues"])) > 0 && policy["default"] == nil {
				errs = append(errs, causeRequiredDetail(field+".default", "required when validValues is defined"))
			}
		}
		attributes, _ := dm["attributes"].(map[string]any)
		for _, k := range sortedNames(attributes) {
			a, _ := attributes[k].(map[string]any)
			var set []string
			for _, typ := range attributeTypes {
				if a[typ] != nil {
					set = append(set, typ)
				}
			}
			field := fmt.Sprintf("spec.devices[%d].attributes[%s]", i, k)
			switch {
			case len(set) == 0:
				attributeErrs = append(attributeErrs, causeInvalid(field, "", "must specify one of: "+attributeTypeList))
			case len(set) > 1:
				attributeErrs = append(attributeErrs, causeInvalid(field, "{"+strings.Join(set, ", ")+"}", "must specify exactly one of: "+attributeTypeList))
			}
		}
		n := str(dm, "name")
		f := fmt.Sprintf("spec.devices[%d].name", i)
		if n == "" {
			continue // the schema already reports it
		}
		errs = append(errs, checkDNSLabel(f, n)...)
		if seen[n] {
			errs = append(errs, statusCause{Type: "FieldValueDuplicate", Message: fmt.Sprintf("Duplicate value: %q", n),
				Field: fmt.Sprintf("spec.devices[%d]", i)})
		}
		seen[n] = true
	}
	if len(devices) > limit {
		errs = append(errs, causeTooMany("spec.devices", len(devices), limit))
	}
	errs = append(errs, attributeErrs...)
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
