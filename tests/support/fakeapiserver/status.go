package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// apiError is a failure that is written to the client as a metav1.Status.
type apiError struct {
	Code       int
	Reason     string
	Message    string
	Details    *statusDetails
	RetryAfter int // seconds; adds a Retry-After header when > 0
}

type statusDetails struct {
	Name              string        `json:"name,omitempty"`
	Group             string        `json:"group,omitempty"`
	Kind              string        `json:"kind,omitempty"`
	UID               string        `json:"uid,omitempty"`
	Causes            []statusCause `json:"causes,omitempty"`
	RetryAfterSeconds int           `json:"retryAfterSeconds,omitempty"`
}

type statusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
	// What the real server makes of the violation: a decoding error (400
	// before validation), an unknown field (dropped, a warning, or a strict
	// decoding error) or a validation error (422). Not sent.
	class causeClass
	drop  func() // removes an unknown field from the decoded body
}

type causeClass int

const (
	classInvalid causeClass = iota // 422 Invalid
	classDecode                    // 400 BadRequest: the Go types cannot hold the value
	classUnknown                   // not in the schema
)

// statusJSON keeps the field order of the real server's output.
type statusJSON struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   struct{}       `json:"metadata"`
	Status     string         `json:"status"`
	Message    string         `json:"message,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Details    *statusDetails `json:"details,omitempty"`
	Code       int            `json:"code"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message) }

func (e *apiError) status() statusJSON {
	return statusJSON{Kind: "Status", APIVersion: "v1", Status: "Failure", Message: e.Message,
		Reason: e.Reason, Details: e.Details, Code: e.Code}
}

// statusObject returns the Status as a generic object (for watch ERROR events).
func (e *apiError) statusObject() map[string]any {
	b, _ := json.Marshal(e.status())
	v, _ := decodeJSON(b)
	m, _ := v.(map[string]any)
	return m
}

func writeError(w http.ResponseWriter, err error) {
	ae, ok := err.(*apiError)
	if !ok {
		ae = errInternal(err.Error())
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	writeJSON(w, ae.Code, ae.status())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errInternal("encoding response: " + err.Error()).status())
		code = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func resourceDetails(ri *resourceInfo, name string) *statusDetails {
	return &statusDetails{Name: name, Group: ri.Group, Kind: ri.Resource}
}

func errNotFound(ri *resourceInfo, name string) *apiError {
	return &apiError{Code: 404, Reason: "NotFound",
		Message: fmt.Sprintf("%s %q not found", ri.Qualified(), name), Details: resourceDetails(ri, name)}
}

func errPathNotFound() *apiError {
	return &apiError{Code: 404, Reason: "NotFound", Message: "the server could not find the requested resource",
		Details: &statusDetails{}}
}

func errAlreadyExists(ri *resourceInfo, name string) *apiError {
	return &apiError{Code: 409, Reason: "AlreadyExists",
		Message: fmt.Sprintf("%s %q already exists", ri.Qualified(), name), Details: resourceDetails(ri, name)}
}

func errConflict(ri *resourceInfo, name, why string) *apiError {
	return &apiError{Code: 409, Reason: "Conflict",
		Message: fmt.Sprintf("Operation cannot be fulfilled on %s %q: %s", ri.Qualified(), name, why),
		Details: resourceDetails(ri, name)}
}

// errPreconditionConflict is a failed delete precondition.
func errPreconditionConflict(ri *resourceInfo, name, why string) *apiError {
	return &apiError{Code: 409, Reason: "Conflict",
		Message: fmt.Sprintf("Operation cannot be fulfilled on %s %q: %s", ri.QualifiedKind(), name, why),
		Details: &statusDetails{Name: name, Group: ri.Group, Kind: ri.Kind}}
}

const errModified = "the object has been modified; please apply your changes to the latest version and try again"

func errInvalid(ri *resourceInfo, name string, causes []statusCause) *apiError {
	parts := make([]string, 0, len(causes))
	for _, c := range causes {
		if c.Field != "" {
			parts = append(parts, c.Field+": "+c.Message)
		} else {
			parts = append(parts, c.Message)
		}
	}
	agg := strings.Join(parts, ", ")
	if len(parts) > 1 {
		agg = "[" + agg + "]"
	}
	return &apiError{Code: 422, Reason: "Invalid",
		Message: fmt.Sprintf("%s %q is invalid: %s", ri.QualifiedKind(), name, agg),
		Details: &statusDetails{Name: name, Group: ri.Group, Kind: ri.Kind, Causes: causes}}
}

func errBadRequest(msg string) *apiError {
	return &apiError{Code: 400, Reason: "BadRequest", Message: msg}
}

func errUnauthorized() *apiError {
	return &apiError{Code: 401, Reason: "Unauthorized", Message: "Unauthorized"}
}

func errExpired(msg string) *apiError {
	return &apiError{Code: 410, Reason: "Expired", Message: msg}
}

func errInternal(msg string) *apiError {
	return &apiError{Code: 500, Reason: "InternalError", Message: "Internal error occurred: " + msg,
		Details: &statusDetails{Causes: []statusCause{{Message: msg}}}}
}

func errMethodNotAllowed(ri *resourceInfo) *apiError {
	d := &statusDetails{}
	if ri != nil {
		d = &statusDetails{Group: ri.Group, Kind: ri.Resource}
	}
	return &apiError{Code: 405, Reason: "MethodNotAllowed",
		Message: "the server does not allow this method on the requested resource", Details: d}
}

func errTooLarge(limit int) *apiError {
	return &apiError{Code: 413, Reason: "RequestEntityTooLarge",
		Message: fmt.Sprintf("Request entity too large: limit is %d", limit)}
}

// errInjected builds the Status for a fault configured through /fake/fail.
func errInjected(code, retryAfter int) *apiError {
	e := &apiError{Code: code, RetryAfter: retryAfter}
	switch code {
	case 429:
		e.Reason, e.Message = "TooManyRequests", "Too many requests, please try again later."
	case 500:
		e.Reason, e.Message = "InternalError", "Internal error occurred: injected fault"
	case 503:
		e.Reason, e.Message = "ServiceUnavailable", "the server is currently unable to handle the request (injected fault)"
	case 504:
		e.Reason, e.Message = "Timeout", "the server was unable to return a response in the time allotted, but may still be processing the request (injected fault)"
	case 409:
		e.Reason, e.Message = "Conflict", "injected conflict"
	case 410:
		e.Reason, e.Message = "Expired", "injected expiry"
	case 401:
		e.Reason, e.Message = "Unauthorized", "Unauthorized"
	case 403:
		e.Reason, e.Message = "Forbidden", "forbidden: injected fault"
	default:
		e.Message = "injected fault"
	}
	if retryAfter > 0 {
		e.Details = &statusDetails{RetryAfterSeconds: retryAfter}
	}
	return e
}

// Field-level causes, mirroring k8s.io/apimachinery/pkg/util/validation/field.
func causeRequired(field string) statusCause {
	return statusCause{Type: "FieldValueRequired", Message: "Required value", Field: field}
}

func causeRequiredDetail(field, detail string) statusCause {
	return statusCause{Type: "FieldValueRequired", Message: "Required value: " + detail, Field: field}
}

func causeInvalid(field string, value any, detail string) statusCause {
	return statusCause{Type: "FieldValueInvalid", Message: fmt.Sprintf("Invalid value: %s: %s", quoteValue(value), detail), Field: field}
}

func causeTypeInvalid(field, want string, got any) statusCause {
	g := jsonTypeName(got)
	return statusCause{Type: "FieldValueTypeInvalid",
		Message: fmt.Sprintf("Invalid value: %q: %s in body must be of type %s: %q", g, field, want, g), Field: field,
		class: classDecode}
}

// causeDecode is a value the real server's JSON decoder rejects (a
// malformed Quantity or time, an integer out of range).
func causeDecode(field string, value any, detail string) statusCause {
	c := causeInvalid(field, value, detail)
	c.class = classDecode
	return c
}

func causeUnknownField(field, name string, drop func()) statusCause {
	return statusCause{Type: "FieldValueInvalid", Message: fmt.Sprintf("unknown field %q", name), Field: field,
		class: classUnknown, drop: drop}
}

func causeForbidden(field, detail string) statusCause {
	return statusCause{Type: "FieldValueForbidden", Message: "Forbidden: " + detail, Field: field}
}

func causeNotSupported(field, value string, supported ...string) statusCause {
	quoted := make([]string, len(supported))
	for i, s := range supported {
		quoted[i] = strconv.Quote(s)
	}
	return statusCause{Type: "FieldValueNotSupported", Field: field,
		Message: fmt.Sprintf("Unsupported value: %q: supported values: %s", value, strings.Join(quoted, ", "))}
}

// errInvalidOptions is the 422 for invalid request options (ListOptions,
// CreateOptions, ...), or nil without causes.
func errInvalidOptions(kind string, causes []statusCause) *apiError {
	if len(causes) == 0 {
		return nil
	}
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = c.Field + ": " + c.Message
	}
	agg := strings.Join(parts, ", ")
	if len(parts) > 1 {
		agg = "[" + agg + "]"
	}
	return &apiError{Code: 422, Reason: "Invalid", Message: fmt.Sprintf(`%s.meta.k8s.io "" is invalid: %s`, kind, agg),
		Details: &statusDetails{Group: "meta.k8s.io", Kind: kind, Causes: causes}}
}

func causeTooMany(field string, got, max int) statusCause {
	return statusCause{Type: "FieldValueTooMany", Message: fmt.Sprintf("Too many: %d: must have at most %d items", got, max), Field: field}
}

func quoteValue(v any) string {
	switch t := v.(type) {
	case string:
		return strconv.Quote(t)
	case json.Number:
		return t.String()
	case nil:
		return "null"
	default:
		b, _ := json.Marshal(t)
		return string(b)
	}
}

func jsonTypeName(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(t.String(), ".eE") {
			return "number"
		}
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
