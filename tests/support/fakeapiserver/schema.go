package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// openAPI holds components.schemas of an OpenAPI v3 document and validates
// generic JSON objects against them: unknown fields, types, required fields.
// It also normalizes values the way the real server's Go types would on a
// round trip (Quantity canonical form, metav1.Time in RFC 3339 seconds).
type openAPI struct {
	schemas map[string]map[string]any
}

const (
	refPrefix    = "#/components/schemas/"
	quantityName = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	timeName     = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
)

func loadOpenAPI(path string) (*openAPI, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	if len(doc.Components.Schemas) == 0 {
		return nil, fmt.Errorf("%s has no components.schemas", path)
	}
	return &openAPI{schemas: doc.Components.Schemas}, nil
}

// rootSchema returns a reference node for a named schema, or nil if unknown.
func (o *openAPI) rootSchema(name string) map[string]any {
	if o == nil || name == "" {
		return nil
	}
	if _, ok := o.schemas[name]; !ok {
		return nil
	}
	return map[string]any{"$ref": refPrefix + name}
}

// resolve follows $ref and single-element allOf wrappers. It returns the
// effective schema and the name of the last referenced component.
func (o *openAPI) resolve(s map[string]any) (map[string]any, string) {
	name := ""
	for i := 0; s != nil && i < 64; i++ {
		if ref, ok := s["$ref"].(string); ok {
			name = strings.TrimPrefix(ref, refPrefix)
			s = o.schemas[name]
			continue
		}
		if all, ok := s["allOf"].([]any); ok && len(all) == 1 && s["properties"] == nil && s["type"] == nil {
			s, _ = all[0].(map[string]any)
			continue
		}
		break
	}
	return s, name
}

type schemaKind int

const (
	kindUnknown schemaKind = iota // no schema: anything goes, maps granular, lists atomic
	kindStruct                    // object with properties
	kindMap                       // object with additionalProperties
	kindFree                      // object with neither (RawExtension, FieldsV1): atomic
	kindArray
	kindScalar
)

func (o *openAPI) kindOf(s map[string]any) (schemaKind, map[string]any) {
	if o == nil || s == nil {
		return kindUnknown, nil
	}
	r, _ := o.resolve(s)
	if r == nil {
		return kindUnknown, nil
	}
	if r["x-kubernetes-map-type"] == "atomic" {
		return kindFree, r // owned and replaced as a whole
	}
	if _, ok := r["properties"]; ok {
		return kindStruct, r
	}
	switch r["type"] {
	case "object":
		if ap, ok := r["additionalProperties"]; ok && ap != false {
			return kindMap, r
		}
		if r["x-kubernetes-preserve-unknown-fields"] == true {
			return kindFree, r
		}
		return kindFree, r
	case "array":
		return kindArray, r
	case nil:
		if _, ok := r["oneOf"]; ok {
			return kindScalar, r
		}
		return kindUnknown, r
	default:
		return kindScalar, r
	}
}

// propSchema returns the (unresolved) schema of field name of a struct or map.
func (o *openAPI) propSchema(s map[string]any, name string) map[string]any {
	k, r := o.kindOf(s)
	switch k {
	case kindStruct:
		props, _ := r["properties"].(map[string]any)
		p, _ := props[name].(map[string]any)
		return p
	case kindMap:
		ap, _ := r["additionalProperties"].(map[string]any)
		return ap
	}
	return nil
}

func (o *openAPI) itemSchema(s map[string]any) map[string]any {
	k, r := o.kindOf(s)
	if k != kindArray {
		return nil
	}
	it, _ := r["items"].(map[string]any)
	return it
}

// listType returns "atomic", "set" or "map" (with keys) for an array schema.
func (o *openAPI) listType(s map[string]any) (string, []string) {
	k, r := o.kindOf(s)
	if k != kindArray {
		return "atomic", nil
	}
	lt, _ := r["x-kubernetes-list-type"].(string)
	switch lt {
	case "map":
		var keys []string
		if ks, ok := r["x-kubernetes-list-map-keys"].([]any); ok {
			for _, k := range ks {
				if s, ok := k.(string); ok {
					keys = append(keys, s)
				}
			}
		}
		if len(keys) > 0 {
			return "map", keys
		}
	case "set":
		return "set", nil
	}
	if mk, ok := r["x-kubernetes-patch-merge-key"].(string); ok && r["x-kubernetes-patch-strategy"] == "merge" {
		return "map", []string{mk}
	}
	return "atomic", nil
}

// validate appends a cause for every violation of schema s found in v.
func (o *openAPI) validate(v any, s map[string]any, path string, errs *[]statusCause) {
	o.validateAt(v, s, path, errs, false)
}

// validateAt is validate; partial skips required-field checks (for apply
// configurations, which name only the fields their manager owns).
func (o *openAPI) validateAt(v any, s map[string]any, path string, errs *[]statusCause, partial bool) {
	if o == nil || s == nil {
		return
	}
	r, name := o.resolve(s)
	if r == nil || v == nil {
		return // null is accepted wherever a value may be omitted
	}
	if name == quantityName {
		switch t := v.(type) {
		case string:
			if _, err := parseQuantity(strings.TrimSpace(t)); err != nil {
				*errs = append(*errs, causeDecode(path, v, err.Error()))
			}
		case json.Number:
			if _, err := parseQuantity(t.String()); err != nil {
				*errs = append(*errs, causeDecode(path, v, err.Error()))
			}
		default:
			*errs = append(*errs, causeTypeInvalid(path, "string", v))
		}
		return
	}
	if alts, ok := r["oneOf"].([]any); ok && r["type"] == nil {
		for _, a := range alts {
			am, _ := a.(map[string]any)
			var sub []statusCause
			o.validateAt(v, am, path, &sub, partial)
			if len(sub) == 0 {
				return
			}
		}
		*errs = append(*errs, causeDecode(path, v, "must match exactly one schema in oneOf"))
		return
	}
	typ, _ := r["type"].(string)
	switch typ {
	case "string":
		sv, ok := v.(string)
		if !ok {
			*errs = append(*errs, causeTypeInvalid(path, "string", v))
			return
		}
		if r["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339, sv); err != nil {
				*errs = append(*errs, causeDecode(path, v, "must be an RFC 3339 date-time"))
			}
		}
	case "integer":
		n, ok := v.(json.Number)
		if !ok || strings.ContainsAny(n.String(), ".eE") {
			*errs = append(*errs, causeTypeInvalid(path, "integer", v))
			return
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || (r["format"] == "int32" && (i < -1<<31 || i > 1<<31-1)) {
			*errs = append(*errs, causeDecode(path, v, "integer out of range for format "+fmt.Sprint(r["format"])))
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			*errs = append(*errs, causeTypeInvalid(path, "number", v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			*errs = append(*errs, causeTypeInvalid(path, "boolean", v))
		}
	case "array":
		l, ok := v.([]any)
		if !ok {
			*errs = append(*errs, causeTypeInvalid(path, "array", v))
			return
		}
		it, _ := r["items"].(map[string]any)
		for i, e := range l {
			o.validateAt(e, it, fmt.Sprintf("%s[%d]", path, i), errs, partial)
		}
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			*errs = append(*errs, causeTypeInvalid(path, "object", v))
			return
		}
		props, hasProps := r["properties"].(map[string]any)
		ap := r["additionalProperties"]
		preserve := r["x-kubernetes-preserve-unknown-fields"] == true
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k].(map[string]any); ok {
				o.validateAt(m[k], ps, joinField(path, k), errs, partial)
				continue
			}
			if aps, ok := ap.(map[string]any); ok {
				o.validateAt(m[k], aps, fmt.Sprintf("%s[%s]", path, k), errs, partial)
				continue
			}
			if ap == true || preserve || !hasProps {
				continue
			}
			key := k
			*errs = append(*errs, causeUnknownField(joinField(path, k), k, func() { delete(m, key) }))
		}
		if req, ok := r["required"].([]any); ok && !partial {
			for _, rq := range req {
				k, _ := rq.(string)
				if m[k] != nil {
					continue
				}
				// The real server decodes into Go structs: a missing
				// field is its zero value (the schema's default, or "0" for a
				// Quantity), which normalize fills in and the validation
				// rules judge. Only empty strings are reported here as
				// "Required value", which is what the server's rules say
				// about every required string of resource.k8s.io/v1.
				ps, _ := props[k].(map[string]any)
				if d, ok := ps["default"]; ok && d != "" {
					continue
				}
				if _, name := o.resolve(ps); name == quantityName {
					continue
				}
				*errs = append(*errs, causeRequired(joinField(path, k)))
			}
		}
	}
}

func joinField(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// normalize rewrites values into the form the real server stores and returns:
// Quantities in canonical form, times in RFC 3339 UTC seconds. v must have
// passed validate; it is modified in place where possible.
func (o *openAPI) normalize(v any, s map[string]any) any {
	if o == nil || s == nil || v == nil {
		return v
	}
	r, name := o.resolve(s)
	if r == nil {
		return v
	}
	switch name {
	case quantityName:
		var in string
		switch t := v.(type) {
		case string:
			in = strings.TrimSpace(t)
		case json.Number:
			in = t.String()
		default:
			return v
		}
		if q, err := parseQuantity(in); err == nil {
			return q.String()
		}
		return v
	case timeName:
		if sv, ok := v.(string); ok {
			if t, err := time.Parse(time.RFC3339, sv); err == nil {
				return t.UTC().Truncate(time.Second).Format(time.RFC3339)
			}
		}
		return v
	}
	switch t := v.(type) {
	case []any:
		it, _ := r["items"].(map[string]any)
		for i := range t {
			t[i] = o.normalize(t[i], it)
		}
	case map[string]any:
		props, _ := r["properties"].(map[string]any)
		ap, _ := r["additionalProperties"].(map[string]any)
		required := map[string]bool{}
		if req, ok := r["required"].([]any); ok {
			for _, k := range req {
				if ks, ok := k.(string); ok {
					required[ks] = true
				}
			}
		}
		// Fields the Go type always has: the schema's default (a struct
		// that is not a pointer is {}, a required integer 0, ...), and the
		// zero Quantity "0" for a required Quantity.
		for k, p := range props {
			ps, _ := p.(map[string]any)
			if t[k] != nil {
				continue
			}
			if d, ok := ps["default"]; ok && d != "" {
				t[k] = numbersOf(d)
			} else if _, pn := o.resolve(ps); pn == quantityName && required[k] {
				t[k] = "0"
			}
		}
		for k, e := range t {
			if ps, ok := props[k].(map[string]any); ok {
				t[k] = o.normalize(e, ps)
				// omitempty: an optional list or map that is empty is not
				// stored (a struct, even empty, is).
				if kind, _ := o.kindOf(ps); !required[k] && (kind == kindArray || kind == kindMap) && isEmptyContainer(t[k]) {
					delete(t, k)
				}
			} else if ap != nil {
				t[k] = o.normalize(e, ap)
			}
		}
		applyTypeDefaults(name, t)
	}
	return v
}

// applyTypeDefaults runs the SetDefaults_* functions of
// k8s.io/kubernetes/pkg/apis/resource/v1 for the component name.
func applyTypeDefaults(name string, m map[string]any) {
	switch strings.TrimPrefix(name, "io.k8s.api.resource.v1.") {
	case "ExactDeviceRequest", "DeviceSubRequest":
		if m["allocationMode"] == nil || m["allocationMode"] == "" {
			m["allocationMode"] = "ExactCount"
		}
		if m["allocationMode"] == "ExactCount" {
			if c, ok := m["count"].(json.Number); !ok || c.String() == "0" {
				m["count"] = json.Number("1")
			}
		}
	case "DeviceTaint":
		if m["timeAdded"] == nil {
			m["timeAdded"] = nowTimestamp()
		}
	}
}

// numbersOf deep-copies a value of the OpenAPI document (decoded with
// float64 numbers) into the form request bodies have (json.Number).
func numbersOf(v any) any {
	switch t := v.(type) {
	case float64:
		return json.Number(strconv.FormatFloat(t, 'f', -1, 64))
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = numbersOf(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = numbersOf(e)
		}
		return l
	}
	return v
}
