package main

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// apiRequest is an authenticated, authorized request for a resource.
type apiRequest struct {
	pp   parsedPath
	verb string // get list watch create update patch delete deletecollection
	user string
	body []byte
	r    *http.Request
	// Warning headers for the response ("unknown field ..."), in order.
	warnings []string
}

func (req *apiRequest) key() string { return req.pp.ri.key(req.pp.namespace, req.pp.name) }

func (req *apiRequest) query() url.Values { return req.r.URL.Query() }

func (req *apiRequest) dryRun() bool {
	for _, v := range req.query()["dryRun"] {
		if v == "All" {
			return true
		}
	}
	return false
}

// fieldManager is the fieldManager parameter or, as in the real server, the
// User-Agent up to its first "/".
func (req *apiRequest) fieldManager() string {
	if m := req.query().Get("fieldManager"); m != "" {
		return m
	}
	ua := req.r.Header.Get("User-Agent")
	if i := strings.Index(ua, "/"); i >= 0 {
		ua = ua[:i]
	}
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}

func isTrue(s string) bool { return s == "1" || strings.EqualFold(s, "true") }

// requestVerb maps method and path to the Kubernetes verb.
func requestVerb(r *http.Request, pp parsedPath) (string, *apiError) {
	named := pp.name != ""
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if pp.watchPrefix || isTrue(r.URL.Query().Get("watch")) {
			return "watch", nil
		}
		if named {
			return "get", nil
		}
		return "list", nil
	case http.MethodPost:
		if !named && !pp.watchPrefix && (!pp.ri.Namespaced || pp.namespace != "") {
			return "create", nil
		}
	case http.MethodPut:
		if named && !pp.watchPrefix {
			return "update", nil
		}
	case http.MethodPatch:
		if named && !pp.watchPrefix {
			return "patch", nil
		}
	case http.MethodDelete:
		if pp.watchPrefix || pp.subresource != "" {
			break
		}
		if named {
			return "delete", nil
		}
		if !pp.ri.Namespaced || pp.namespace != "" {
			return "deletecollection", nil
		}
	}
	return "", errMethodNotAllowed(pp.ri)
}

func (s *Server) serveAPI(w http.ResponseWriter, req *apiRequest) {
	var (
		obj  any
		code = http.StatusOK
		err  error
	)
	switch req.verb {
	case "watch":
		s.serveWatch(w, req)
		return
	case "get":
		obj, err = s.handleGet(req)
	case "list":
		obj, err = s.handleList(req)
	case "create", "update", "patch":
		if aerr := checkFieldValidation(req); aerr != nil {
			err = aerr
			break
		}
		switch req.verb {
		case "create":
			obj, code, err = s.handleCreate(req)
		case "update":
			obj, code, err = s.handleUpdate(req)
		default:
			obj, code, err = s.handlePatch(req)
		}
	case "delete":
		obj, err = s.handleDelete(req)
	case "deletecollection":
		obj, err = s.handleDeleteCollection(req)
	default:
		err = errMethodNotAllowed(req.pp.ri)
	}
	for _, msg := range req.warnings {
		w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, code, obj)
}

// mergeCauses appends the causes of b that a does not have already.
func mergeCauses(a, b []statusCause) []statusCause {
	for _, c := range b {
		dup := false
		for _, x := range a {
			if x.Field == c.Field && x.Type == c.Type {
				dup = true
				break
			}
		}
		if !dup {
			a = append(a, c)
		}
	}
	return a
}

// bodyKind says where an object being checked came from, which decides how
// the real server reports unknown fields.
type bodyKind int

const (
	bodyObject bodyKind = iota // create or update body
	bodyPatch                  // result of a merge or JSON patch
	bodyApply                  // server-side apply configuration
)

// checkSchema checks obj against the resource's schema the way the real
// server's decoding sees it, and returns the validation errors (422) left.
// Values the Go types cannot hold are a 400 decoding error. Unknown fields
// are removed from obj with a Warning header (fieldValidation unset or
// Warn), removed silently (Ignore), or refused (Strict: a 400 "strict
// decoding error", or for a patch a 422 on the field "patch"). An apply
// configuration with an unknown field is a 500, whatever fieldValidation says.
func (s *Server) checkSchema(req *apiRequest, ri *resourceInfo, obj map[string]any, partial bool, kind bodyKind) ([]statusCause, *apiError) {
	var unknown, decode, invalid []statusCause
	for _, c := range s.schemaCauses(ri, obj, partial) {
		switch c.class {
		case classUnknown:
			unknown = append(unknown, c)
		case classDecode:
			decode = append(decode, c)
		default:
			invalid = append(invalid, c)
		}
	}
	if len(decode) > 0 {
		return nil, errBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %s: %s",
			ri.Kind, ri.Version, ri.Kind, decode[0].Field, decode[0].Message))
	}
	if len(unknown) == 0 {
		return invalid, nil
	}
	if kind == bodyApply {
		id := "/" + req.pp.name
		if ri.Namespaced {
			id = req.pp.namespace + "/" + req.pp.name
		}
		return nil, &apiError{Code: http.StatusInternalServerError,
			Message: fmt.Sprintf("failed to create typed patch object (%s; %s, Kind=%s): .%s: field not declared in schema",
				id, ri.GroupVersion(), ri.Kind, unknown[0].Field)}
	}
	msgs := make([]string, len(unknown))
	for i, c := range unknown {
		msgs[i] = fmt.Sprintf("unknown field %q", c.Field)
	}
	switch req.query().Get("fieldValidation") {
	case "Strict":
		strict := "strict decoding error: " + strings.Join(msgs, ", ")
		if kind == bodyPatch {
			msg := fmt.Sprintf("Invalid value: %q: %s", string(mustJSON(obj)), strict)
			return nil, &apiError{Code: 422, Reason: "Invalid", Message: ` "" is invalid: patch: ` + msg,
				Details: &statusDetails{Causes: []statusCause{{Type: "FieldValueInvalid", Message: msg, Field: "patch"}}}}
		}
		return nil, errBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %s", ri.Kind, ri.Version, ri.Kind, strict))
	case "Ignore":
	default:
		req.warnings = append(req.warnings, msgs...)
	}
	for _, c := range unknown {
		c.drop()
	}
	return invalid, nil
}

func (s *Server) buildFilter(req *apiRequest) (*objectFilter, *apiError) {
	q := req.query()
	f := &objectFilter{ri: req.pp.ri, namespace: req.pp.namespace, name: req.pp.name}
	if ls := q.Get("labelSelector"); ls != "" {
		sel, err := parseLabelSelector(ls)
		if err != nil {
			return nil, errBadRequest(err.Error())
		}
		f.labels = sel
	}
	if fs := q.Get("fieldSelector"); fs != "" {
		sel, err := parseFieldSelector(fs, req.pp.ri)
		if err != nil {
			return nil, errBadRequest(err.Error())
		}
		f.fields = sel
	}
	return f, nil
}

// checkWatchListOptions applies the real server's SetListOptionsDefaults to a
// watch (with the WatchList feature, on since 1.34: a watch from "" or "0"
// sends the current objects and ends them with an initial-events-end
// bookmark) and its ValidateListOptions rules.
func checkWatchListOptions(q url.Values, o *watchOptions, watchList bool) *apiError {
	match := q.Get("resourceVersionMatch")
	if watchList && o.sendInitialEvents == nil && match == "" && (o.resourceVersion == "" || o.resourceVersion == "0") {
		t := true
		o.sendInitialEvents, match = &t, "NotOlderThan"
	}
	var causes []statusCause
	if o.sendInitialEvents != nil && match != "NotOlderThan" {
		causes = append(causes, causeForbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
	}
	if o.sendInitialEvents != nil && !watchList {
		causes = append(causes, causeForbidden("sendInitialEvents", "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"))
	}
	if match != "" {
		if o.sendInitialEvents == nil {
			causes = append(causes, causeForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		}
		if match != "NotOlderThan" {
			causes = append(causes, causeNotSupported("resourceVersionMatch", match, "NotOlderThan"))
		}
	}
	return errInvalidOptions("ListOptions", causes)
}

// checkListOptions is ValidateListOptions for a list.
func checkListOptions(q url.Values) *apiError {
	var causes []statusCause
	if q.Get("sendInitialEvents") != "" {
		causes = append(causes, causeForbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
	}
	if match := q.Get("resourceVersionMatch"); match != "" {
		switch {
		case q.Get("resourceVersion") == "":
			causes = append(causes, causeForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		case match != "Exact" && match != "NotOlderThan":
			causes = append(causes, causeNotSupported("resourceVersionMatch", match, "Exact", "NotOlderThan", ""))
		case match == "Exact" && q.Get("resourceVersion") == "0":
			causes = append(causes, causeForbidden("resourceVersionMatch", `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
		}
	}
	return errInvalidOptions("ListOptions", causes)
}

func (s *Server) handleGet(req *apiRequest) (any, error) {
	s.st.mu.Lock()
	rec := s.st.objects[req.pp.ri][req.key()]
	s.st.mu.Unlock()
	if rec == nil {
		return nil, errNotFound(req.pp.ri, req.pp.name)
	}
	return rec.obj, nil
}

func (s *Server) handleList(req *apiRequest) (any, error) {
	ri := req.pp.ri
	f, aerr := s.buildFilter(req)
	if aerr != nil {
		return nil, aerr
	}
	q := req.query()
	if aerr := checkListOptions(q); aerr != nil {
		return nil, aerr
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, errBadRequest(err.Error()) // the real server's wording
		}
		if n > 0 { // a negative limit means none
			limit = int(n)
		}
	}
	var at uint64
	start := ""
	if c := q.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			return nil, errBadRequest("invalid continue token: " + err.Error())
		}
		at, start = tok.ResourceVersion, tok.StartKey
	} else if v := q.Get("resourceVersion"); v != "" && v != "0" && q.Get("resourceVersionMatch") == "Exact" {
		rv, err := parseRV(v)
		if err != nil {
			return nil, errBadRequest(err.Error())
		}
		at = rv
	}
	s.st.mu.Lock()
	objs, listRV, aerr := s.st.snapshot(ri, at)
	s.st.mu.Unlock()
	if aerr != nil {
		if q.Get("continue") != "" {
			return nil, errExpired("The provided continue parameter is too old to display a consistent list result. " +
				"You can start a new list without the continue parameter, or use the continue value from the response to restart the list.")
		}
		return nil, aerr
	}
	items := []any{}
	listMeta := map[string]any{"resourceVersion": strconv.FormatUint(listRV, 10)}
	var last string
	keys := sortedKeys(objs)
	for i, k := range keys {
		if k < start || !f.matches(objs[k]) {
			continue
		}
		if limit > 0 && len(items) == limit {
			remaining := 0
			for _, rk := range keys[i:] {
				if f.matches(objs[rk]) {
					remaining++
				}
			}
			listMeta["continue"] = encodeContinue(listRV, last)
			if !f.hasSelectors() {
				listMeta["remainingItemCount"] = remaining
			}
			break
		}
		items = append(items, listItem(objs[k]))
		last = k
	}
	return map[string]any{"kind": ri.ListKind(), "apiVersion": ri.GroupVersion(), "metadata": listMeta, "items": items}, nil
}

// listItem drops apiVersion and kind, as the real server does for list items.
func listItem(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "apiVersion" && k != "kind" {
			out[k] = v
		}
	}
	return out
}

// decodeBody decodes a JSON request body into an object.
func decodeBody(req *apiRequest) (map[string]any, *apiError) {
	// The real server first reads apiVersion and kind into this struct; its
	// errors are Go's.
	var typeMeta struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}
	if err := json.Unmarshal(req.body, &typeMeta); err != nil {
		excerpt := string(req.body)
		if excerpt == "" {
			excerpt = "<empty>"
		}
		return nil, errBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): couldn't get version/kind; json parse error: %v (%s)",
			req.pp.ri.Kind, err, truncate(excerpt, 50)))
	}
	obj, err := decodeObject(req.body)
	if err != nil {
		return nil, errBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): couldn't get version/kind; json parse error: %v",
			req.pp.ri.Kind, err))
	}
	return obj, nil
}

func mediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return r.Header.Get("Content-Type")
	}
	return mt
}

func requireJSONBody(req *apiRequest) *apiError {
	switch mt := mediaType(req.r); mt {
	case "application/json", "":
		return nil
	default:
		return &apiError{Code: 415, Reason: "UnsupportedMediaType",
			Message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"}
	}
}

// checkTypeMeta fills in or checks apiVersion and kind.
// decodeObjectBody is the body of a create or an update: JSON, an object,
// and of the request's kind if it names one.
func decodeObjectBody(req *apiRequest) (map[string]any, *apiError) {
	if aerr := requireJSONBody(req); aerr != nil {
		return nil, aerr
	}
	obj, aerr := decodeBody(req)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := checkTypeMeta(req.pp.ri, obj, false); aerr != nil {
		return nil, aerr
	}
	return obj, nil
}

func checkTypeMeta(ri *resourceInfo, obj map[string]any, required bool) *apiError {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if required && (av == "" || kind == "") {
		return errBadRequest(fmt.Sprintf("Object 'Kind' is missing in '%s'", truncate(string(mustJSON(obj)), 200)))
	}
	if av != "" && av != ri.GroupVersion() {
		return errBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", av, ri.GroupVersion()))
	}
	if kind != "" && kind != ri.Kind {
		for _, other := range allResources {
			if other.Kind == kind && other.GroupVersion() == ri.GroupVersion() {
				return errBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: converting (%s.%s) to (%s.%s): unknown conversion",
					kind, ri.Version, ri.Kind, ri.Version, kind, internalGroup(ri), ri.Kind))
			}
		}
		return errBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: no kind %q is registered for version %q in scheme \"pkg/runtime/scheme.go:111\"",
			kind, ri.Version, ri.Kind, kind, ri.GroupVersion()))
	}
	obj["apiVersion"], obj["kind"] = ri.GroupVersion(), ri.Kind
	return nil
}

// internalGroup is the Go package of the internal type: "resource", "core".
func internalGroup(ri *resourceInfo) string {
	if ri.Group == "" {
		return "core"
	}
	return strings.SplitN(ri.Group, ".", 2)[0]
}

// checkFieldValidation refuses a fieldValidation value the real server does
// not know, as a 422 on the request's options.
func checkFieldValidation(req *apiRequest) *apiError {
	v := req.query().Get("fieldValidation")
	switch v {
	case "", "Ignore", "Strict", "Warn":
		return nil
	}
	options := map[string]string{"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}[req.verb]
	return errInvalidOptions(options, []statusCause{causeNotSupported("fieldValidation", v, "", "Ignore", "Strict", "Warn")})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// schemaCauses validates obj against the resource's OpenAPI schema.
func (s *Server) schemaCauses(ri *resourceInfo, obj any, partial bool) []statusCause {
	var causes []statusCause
	if ri.SchemaName == "" || s.schema == nil {
		return nil
	}
	s.schema.validateAt(obj, s.schema.rootSchema(ri.SchemaName), "", &causes, partial)
	return causes
}

func (s *Server) rootSchema(ri *resourceInfo) map[string]any {
	if ri.SchemaName == "" {
		return nil
	}
	return s.schema.rootSchema(ri.SchemaName)
}

// prepare applies what the server does to every stored object: drop fields of
// disabled features, canonicalize quantities and times.
func (s *Server) prepare(ri *resourceInfo, obj map[string]any) {
	for _, p := range s.dropPaths() {
		p.apply(obj)
	}
	s.schema.normalize(obj, s.rootSchema(ri))
	if ri == resNodes {
		defaultNodeStatus(obj)
	}
}

// defaultNodeStatus does what decoding into a core/v1 Node does to its
// status (the fake has no Node schema): allocatable defaults to capacity,
// and daemonEndpoints and nodeInfo, structs that are not pointers, are
// always there.
func defaultNodeStatus(obj map[string]any) {
	st, _ := obj["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		obj["status"] = st
	}
	if st["allocatable"] == nil && st["capacity"] != nil {
		st["allocatable"] = deepCopy(st["capacity"])
	}
	if st["daemonEndpoints"] == nil {
		st["daemonEndpoints"] = map[string]any{"kubeletEndpoint": map[string]any{"Port": json.Number("0")}}
	}
	if st["nodeInfo"] == nil {
		info := map[string]any{}
		for _, f := range []string{"machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
			"containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture"} {
			info[f] = ""
		}
		st["nodeInfo"] = info
	}
}

const maxGeneratedBaseLength = 63 - 5

func (s *Server) handleCreate(req *apiRequest) (any, int, error) {
	ri := req.pp.ri
	obj, aerr := decodeObjectBody(req)
	if aerr != nil {
		return nil, 0, aerr
	}
	causes, aerr := s.checkSchema(req, ri, obj, false, bodyObject)
	if aerr != nil {
		return nil, 0, aerr
	}
	md := meta(obj)
	if ri.Namespaced {
		if ns := str(md, "namespace"); ns != "" && ns != req.pp.namespace {
			return nil, 0, errBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
		md["namespace"] = req.pp.namespace
	} else {
		delete(md, "namespace")
	}
	if str(md, "resourceVersion") != "" {
		return nil, 0, errInternal("resourceVersion should not be set on objects to be created")
	}
	if str(md, "name") == "" {
		if base := str(md, "generateName"); base != "" {
			if len(base) > maxGeneratedBaseLength {
				base = base[:maxGeneratedBaseLength]
			}
			md["name"] = base + randomString(5, nameSuffixAlphabet)
		}
	}
	name := str(md, "name")
	prepareForCreate(ri, obj)
	s.prepare(ri, obj)
	// One validation pass, as in the real server: schema and rules together.
	if causes := mergeCauses(causes, validateRules(ri, obj, nil)); len(causes) > 0 {
		return nil, 0, errInvalid(ri, name, causes)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	key := ri.key(req.pp.namespace, name)
	if s.st.objects[ri][key] != nil {
		return nil, 0, errAlreadyExists(ri, name)
	}
	out, err := s.commit(ri, key, nil, obj, writeOp{manager: req.fieldManager(), operation: "Update"}, req.dryRun())
	return out, http.StatusCreated, err
}

// prepareForCreate sets the server-owned metadata of a new object.
func prepareForCreate(ri *resourceInfo, obj map[string]any) {
	md := meta(obj)
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "managedFields", "selfLink", "generation"} {
		delete(md, f)
	}
	md["uid"] = newUID()
	md["creationTimestamp"] = nowTimestamp()
	if ri.HasGeneration {
		md["generation"] = json.Number("1")
	}
	if ri == resResourceClaims {
		delete(obj, "status") // ResourceClaim status is reset on create
	}
	if ri == resNodes {
		// The TaintNodesByCondition admission plugin: a new node is not ready.
		spec, _ := obj["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
			obj["spec"] = spec
		}
		taints := asList(spec["taints"])
		for _, t := range taints {
			if tm, _ := t.(map[string]any); str(tm, "key") == "node.kubernetes.io/not-ready" && str(tm, "effect") == "NoSchedule" {
				return
			}
		}
		spec["taints"] = append(append([]any{}, taints...), map[string]any{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
	}
}

func (s *Server) handleUpdate(req *apiRequest) (any, int, error) {
	ri := req.pp.ri
	obj, aerr := decodeObjectBody(req)
	if aerr != nil {
		return nil, 0, aerr
	}
	if n := objName(obj); n != req.pp.name {
		return nil, 0, errBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, req.pp.name))
	}
	causes, aerr := s.checkSchema(req, ri, obj, false, bodyObject)
	if aerr != nil {
		return nil, 0, aerr
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rec := s.st.objects[ri][req.key()]
	if rec == nil {
		return nil, 0, errNotFound(ri, req.pp.name)
	}
	out, err := s.updateFrom(req, rec, obj, causes, writeOp{manager: req.fieldManager(), operation: "Update",
		subresource: req.pp.subresource})
	return out, http.StatusOK, err
}

// updateFrom turns a full object sent by the client (PUT body or patch
// result) into the stored object. Caller holds the store lock.
func (s *Server) updateFrom(req *apiRequest, rec *record, obj map[string]any, causes []statusCause, op writeOp) (any, error) {
	ri, name := req.pp.ri, req.pp.name
	old := rec.obj
	md := meta(obj)
	if n := str(md, "name"); n != name {
		return nil, errBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, name))
	}
	if ri.Namespaced {
		if ns := str(md, "namespace"); ns != "" && ns != req.pp.namespace {
			return nil, errBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	}
	oldMD := child(old, "metadata")
	if rv := str(md, "resourceVersion"); rv != "" && rv != str(oldMD, "resourceVersion") {
		return nil, errConflict(ri, name, errModified)
	}
	if uid := str(md, "uid"); uid != "" && uid != str(oldMD, "uid") {
		return nil, errConflict(ri, name, fmt.Sprintf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, str(oldMD, "uid")))
	}
	var next map[string]any
	if op.subresource == "status" {
		next = copyObj(old)
		if st, ok := obj["status"]; ok && st != nil {
			next["status"] = deepCopy(st)
		} else {
			delete(next, "status")
		}
	} else {
		next = obj
		if ri.HasStatus {
			if st, ok := old["status"]; ok {
				next["status"] = deepCopy(st)
			} else {
				delete(next, "status")
			}
		}
		nmd := meta(next)
		for _, f := range []string{"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "namespace"} {
			if v, ok := oldMD[f]; ok {
				nmd[f] = v
			} else {
				delete(nmd, f)
			}
		}
		delete(nmd, "managedFields")
		delete(nmd, "selfLink")
	}
	s.prepare(ri, next)
	if causes := mergeCauses(causes, validateRules(ri, next, old)); len(causes) > 0 {
		return nil, errInvalid(ri, name, causes)
	}
	if ri.HasGeneration && !deepEqual(next["spec"], old["spec"]) {
		g, _ := strconv.ParseInt(fmt.Sprint(oldMD["generation"]), 10, 64)
		meta(next)["generation"] = json.Number(strconv.FormatInt(g+1, 10))
	}
	return s.commit(ri, req.key(), rec, next, op, req.dryRun())
}

func (s *Server) handlePatch(req *apiRequest) (any, int, error) {
	ri := req.pp.ri
	mt := mediaType(req.r)
	var patch any
	switch mt {
	case "application/merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml",
		"application/strategic-merge-patch+json":
		v, err := decodeJSON(req.body)
		if err != nil {
			switch mt {
			case "application/apply-patch+yaml":
				return nil, 0, errBadRequest("the fake apiserver accepts apply bodies in JSON only: " + err.Error())
			case "application/json-patch+json":
				return nil, 0, errBadRequest("error decoding patch: " + err.Error())
			}
			return nil, 0, errBadRequest("invalid JSON patch") // what the real server says for a merge patch
		}
		patch = v
	default:
		return nil, 0, &apiError{Code: 415, Reason: "UnsupportedMediaType", Message: "415: Unsupported Media Type",
			Details: &statusDetails{}}
	}
	if mt == "application/apply-patch+yaml" {
		return s.handleApply(req, patch)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rec := s.st.objects[ri][req.key()]
	if rec == nil {
		return nil, 0, errNotFound(ri, req.pp.name)
	}
	// The operations are decoded once the object is found.
	if ops, ok := patch.([]any); ok && mt == "application/json-patch+json" {
		for _, op := range ops {
			if _, ok := op.(map[string]any); !ok {
				return nil, 0, errBadRequest(fmt.Sprintf("error decoding patch: json: cannot unmarshal %s into Go value of type handlers.jsonPatchOp",
					goJSONType(op)))
			}
		}
	}
	var patched any
	if mt == "application/merge-patch+json" || mt == "application/strategic-merge-patch+json" {
		if _, ok := patch.(map[string]any); !ok {
			return nil, 0, errBadRequest("a merge patch must be a JSON object")
		}
		if mt == "application/merge-patch+json" {
			patched = mergePatch(rec.obj, patch)
		} else {
			patched = s.schema.strategicMerge(rec.obj, patch, s.rootSchema(ri))
		}
	} else {
		var err error
		if patched, err = jsonPatch(rec.obj, patch); err != nil {
			// The real server does not say which operation failed.
			return nil, 0, &apiError{Code: 422, Reason: "Invalid", Message: "the server rejected our request due to an error in our request",
				Details: &statusDetails{}}
		}
	}
	obj, ok := patched.(map[string]any)
	if !ok {
		return nil, 0, errBadRequest("the patch result is not an object")
	}
	obj = copyObj(obj)
	if aerr := checkTypeMeta(ri, obj, false); aerr != nil {
		return nil, 0, aerr
	}
	causes, aerr := s.checkSchema(req, ri, obj, false, bodyPatch)
	if aerr != nil {
		return nil, 0, aerr
	}
	out, err := s.updateFrom(req, rec, obj, causes, writeOp{manager: req.fieldManager(), operation: "Update",
		subresource: req.pp.subresource})
	return out, http.StatusOK, err
}

// handleApply implements a small server-side apply: the applied
// configuration is merged into the live object (list-maps by key), fields
// this manager applied before and omits now are removed unless another
// manager owns them, and managedFields records the manager. Conflicts are
// not detected (every apply behaves as force=true).
func (s *Server) handleApply(req *apiRequest, patch any) (any, int, error) {
	ri := req.pp.ri
	cfg, ok := patch.(map[string]any)
	if !ok {
		return nil, 0, errBadRequest("an apply configuration must be a JSON object")
	}
	manager := req.query().Get("fieldManager")
	if manager == "" {
		return nil, 0, &apiError{Code: 422, Reason: "Invalid",
			Message: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`,
			Details: &statusDetails{Group: "meta.k8s.io", Kind: "PatchOptions",
				Causes: []statusCause{causeRequiredDetail("fieldManager", "is required for apply patch")}}}
	}
	if aerr := checkTypeMeta(ri, cfg, true); aerr != nil {
		return nil, 0, aerr
	}
	md := meta(cfg)
	if n := str(md, "name"); n != "" && n != req.pp.name {
		return nil, 0, errBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, req.pp.name))
	}
	if ns := str(md, "namespace"); ri.Namespaced && ns != "" && ns != req.pp.namespace {
		return nil, 0, errBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if causes, aerr := s.checkSchema(req, ri, cfg, true, bodyApply); aerr != nil {
		return nil, 0, aerr
	} else if len(causes) > 0 {
		return nil, 0, errInvalid(ri, req.pp.name, causes)
	}
	// The part of the configuration this endpoint may change.
	scoped := map[string]any{}
	for k, v := range ownableView(cfg) {
		switch {
		case req.pp.subresource == "status" && k != "status":
		case req.pp.subresource == "" && ri.HasStatus && k == "status":
		default:
			scoped[k] = v
		}
	}
	root := s.rootSchema(ri)
	applied := withoutEmptyMetadata(s.schema.diffSet(nil, scoped, root, false))
	force := isTrue(req.query().Get("force"))
	op := writeOp{manager: manager, operation: "Apply", subresource: req.pp.subresource, applied: applied}

	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rec := s.st.objects[ri][req.key()]
	if rec == nil {
		if req.pp.subresource != "" {
			return nil, 0, errNotFound(ri, req.pp.name)
		}
		obj := s.schema.applyMerge(map[string]any{}, scoped, root).(map[string]any)
		obj["apiVersion"], obj["kind"] = ri.GroupVersion(), ri.Kind
		nmd := meta(obj)
		nmd["name"] = req.pp.name
		if ri.Namespaced {
			nmd["namespace"] = req.pp.namespace
		}
		if causes := s.schemaCauses(ri, obj, false); len(causes) > 0 {
			return nil, 0, errInvalid(ri, req.pp.name, causes)
		}
		prepareForCreate(ri, obj)
		s.prepare(ri, obj)
		if causes := validateRules(ri, obj, nil); len(causes) > 0 {
			return nil, 0, errInvalid(ri, req.pp.name, causes)
		}
		out, err := s.commit(ri, req.key(), nil, obj, op, req.dryRun())
		return out, http.StatusCreated, err
	}
	if rv := str(md, "resourceVersion"); rv != "" && rv != objRV(rec.obj) {
		return nil, 0, errConflict(ri, req.pp.name, errModified)
	}
	if !force {
		if aerr := s.applyConflicts(rec, manager, req.pp.subresource, applied, scoped, root); aerr != nil {
			return nil, 0, aerr
		}
	}
	var prev *fieldSet
	var others []*fieldSet
	for _, e := range rec.managers {
		if e.Manager == manager && e.Operation == "Apply" && e.Subresource == req.pp.subresource {
			prev = e.Set
		} else {
			others = append(others, e.Set)
		}
	}
	merged := s.schema.applyMerge(copyObj(rec.obj), scoped, root).(map[string]any)
	merged = s.schema.removeDropped(merged, root, prev, applied, others).(map[string]any)
	causes := s.schemaCauses(ri, merged, false)
	out, err := s.updateFrom(req, rec, merged, causes, op)
	return out, http.StatusOK, err
}

// writeOp says who writes and how, for managedFields.
type writeOp struct {
	manager, operation, subresource string
	applied                         *fieldSet // for Apply
}

// applyConflicts reports the fields an apply would set to a value other than
// the live one while another manager owns them, as the real server's 409.
func (s *Server) applyConflicts(rec *record, manager, subresource string, applied *fieldSet, cfg, root map[string]any) *apiError {
	type conflict struct{ manager, path string }
	var found []conflict
	// The configuration as sent: a Quantity applied as "1024Mi" differs
	// from the stored "1Gi", as it does for the real server.
	want := cfg
	live := ownableView(rec.obj)
	for _, e := range rec.managers {
		if e.Manager == manager && e.Operation == "Apply" && e.Subresource == subresource {
			continue
		}
		name := strconv.Quote(e.Manager)
		if e.Operation == "Update" {
			name += " using " + e.APIVersion
		}
		if e.Subresource != "" {
			name += " with subresource " + strconv.Quote(e.Subresource)
		}
		s.schema.commonLeaves(applied, e.Set, want, live, root, "", func(path string, a, b any) {
			if !deepEqual(a, b) {
				found = append(found, conflict{name, path})
			}
		})
	}
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].manager != found[j].manager {
			return found[i].manager < found[j].manager
		}
		return found[i].path < found[j].path
	})
	causes := make([]statusCause, len(found))
	for i, c := range found {
		causes[i] = statusCause{Type: "FieldManagerConflict", Message: "conflict with " + c.manager, Field: c.path}
	}
	var msg string
	if len(found) == 1 {
		msg = fmt.Sprintf("Apply failed with 1 conflict: conflict with %s: %s", found[0].manager, found[0].path)
	} else {
		var lines []string
		for i, c := range found {
			if i == 0 || found[i-1].manager != c.manager {
				lines = append(lines, fmt.Sprintf("conflicts with %s:", c.manager))
			}
			lines = append(lines, "- "+c.path)
		}
		msg = fmt.Sprintf("Apply failed with %d conflicts: %s", len(found), strings.Join(lines, "\n"))
	}
	return &apiError{Code: 409, Reason: "Conflict", Message: msg, Details: &statusDetails{Causes: causes}}
}

// commit stores next (old == nil: create) and emits the event. Caller holds
// the store lock. A write that changes nothing returns the old object
// without a new resourceVersion, as the real server does.
func (s *Server) commit(ri *resourceInfo, key string, rec *record, next map[string]any, op writeOp, dryRun bool) (map[string]any, error) {
	var old map[string]any
	var oldManagers []*managerEntry
	if rec != nil {
		old, oldManagers = rec.obj, rec.managers
	}
	root := s.rootSchema(ri)
	managers := s.updateManagers(ri, oldManagers, old, next, op, root)
	if old != nil {
		a, b := copyObj(old), copyObj(next)
		delete(meta(a), "managedFields")
		delete(meta(a), "resourceVersion")
		delete(meta(b), "managedFields")
		delete(meta(b), "resourceVersion")
		if deepEqual(a, b) && managersEqual(oldManagers, managers) {
			return old, nil
		}
	}
	md := meta(next)
	if len(managers) > 0 {
		md["managedFields"] = renderManagedFields(managers)
	} else {
		delete(md, "managedFields")
	}
	if dryRun {
		if old != nil {
			md["resourceVersion"] = objRV(old)
		}
		return next, nil
	}
	rv := s.st.nextRV()
	md["resourceVersion"] = strconv.FormatUint(rv, 10)
	if old != nil && md["deletionTimestamp"] != nil && len(asList(md["finalizers"])) == 0 {
		delete(s.st.objects[ri], key)
		s.st.recordEvent(&event{rv: rv, ri: ri, key: key, typ: "DELETED", obj: next, prev: old})
		return next, nil
	}
	s.st.objects[ri][key] = &record{obj: next, managers: managers}
	typ := "MODIFIED"
	if old == nil {
		typ = "ADDED"
	}
	s.st.recordEvent(&event{rv: rv, ri: ri, key: key, typ: typ, obj: next, prev: old})
	return next, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// updateManagers computes the managedFields after a write.
func (s *Server) updateManagers(ri *resourceInfo, old []*managerEntry, oldObj, newObj map[string]any, op writeOp, root map[string]any) []*managerEntry {
	// A new object is compared with the zero value of its Go type, which
	// has every non-pointer struct (the schema's default {}) already.
	if oldObj == nil {
		oldObj = map[string]any{}
		if root != nil {
			oldObj, _ = s.schema.normalize(oldObj, root).(map[string]any)
		} else if ri == resNodes {
			oldObj = map[string]any{"spec": map[string]any{}, "status": map[string]any{}}
		}
	}
	oldView := scopedView(ri, oldObj, op.subresource)
	changed := withoutEmptyMetadata(s.schema.diffSet(oldView, scopedView(ri, newObj, op.subresource), root, true))
	newView := ownableView(newObj)
	now := nowTimestamp()
	var out []*managerEntry
	var mine *managerEntry
	for _, e := range old {
		c := *e
		if c.Manager == op.manager && c.Operation == op.operation && c.Subresource == op.subresource {
			mine = &c
			continue
		}
		// A value that changed (also one a forced apply took over) leaves
		// its other owners; an equal value stays shared.
		c.Set = subtractSets(c.Set, changed)
		out = append(out, &c)
	}
	switch op.operation {
	case "Apply":
		if mine == nil {
			mine = &managerEntry{Manager: op.manager, Operation: "Apply", Subresource: op.subresource, APIVersion: ri.GroupVersion()}
		}
		if changed != nil || !mine.Set.equal(op.applied) {
			mine.Time = now
		}
		mine.Set = op.applied
	default:
		if changed != nil {
			if mine == nil {
				mine = &managerEntry{Manager: op.manager, Operation: "Update", Subresource: op.subresource, APIVersion: ri.GroupVersion()}
			}
			mine.Set = unionSets(mine.Set, changed)
			mine.Time = now
		}
	}
	if mine != nil {
		out = append(out, mine)
	}
	var kept []*managerEntry
	for _, e := range out {
		if e.Set = s.schema.pruneSet(e.Set, newView, root); e.Set != nil {
			kept = append(kept, e)
		}
	}
	sortManagers(kept)
	return kept
}

func managersEqual(a, b []*managerEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Manager != y.Manager || x.Operation != y.Operation || x.Subresource != y.Subresource || !x.Set.equal(y.Set) {
			return false
		}
	}
	return true
}

type deleteOptions struct {
	Preconditions *struct {
		UID             *string `json:"uid"`
		ResourceVersion *string `json:"resourceVersion"`
	} `json:"preconditions"`
	DryRun []string `json:"dryRun"`
}

func (s *Server) handleDelete(req *apiRequest) (any, error) {
	ri := req.pp.ri
	var opts deleteOptions
	if len(req.body) > 0 {
		if err := json.Unmarshal(req.body, &opts); err != nil {
			return nil, errBadRequest("couldn't decode DeleteOptions: " + err.Error())
		}
	}
	dry := req.dryRun() || contains(opts.DryRun, "All")
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rec := s.st.objects[ri][req.key()]
	if rec == nil {
		return nil, errNotFound(ri, req.pp.name)
	}
	md := child(rec.obj, "metadata")
	if p := opts.Preconditions; p != nil {
		// The storage layer's wording: the Kind, not the resource, names the object.
		if p.UID != nil && *p.UID != str(md, "uid") {
			return nil, errPreconditionConflict(ri, req.pp.name, fmt.Sprintf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, str(md, "uid")))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != str(md, "resourceVersion") {
			return nil, errPreconditionConflict(ri, req.pp.name, fmt.Sprintf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, str(md, "resourceVersion")))
		}
	}
	out := s.deleteLocked(ri, req.key(), rec, dry)
	if ri == resNodes && len(asList(md["finalizers"])) == 0 {
		// Nodes answer an immediate delete with a Status, not the object.
		return map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success",
			"details": map[string]any{"name": req.pp.name, "kind": ri.Resource, "uid": str(md, "uid")}}, nil
	}
	return out, nil
}

// deleteLocked deletes an object, or marks it for deletion when it has
// finalizers. Caller holds the store lock.
func (s *Server) deleteLocked(ri *resourceInfo, key string, rec *record, dryRun bool) map[string]any {
	md := child(rec.obj, "metadata")
	if len(asList(md["finalizers"])) > 0 {
		if md["deletionTimestamp"] != nil || dryRun {
			return rec.obj
		}
		next := copyObj(rec.obj)
		nmd := meta(next)
		nmd["deletionTimestamp"] = nowTimestamp()
		nmd["deletionGracePeriodSeconds"] = json.Number("0")
		if ri.HasGeneration { // setting deletionTimestamp bumps the generation
			g, _ := strconv.ParseInt(fmt.Sprint(nmd["generation"]), 10, 64)
			nmd["generation"] = json.Number(strconv.FormatInt(g+1, 10))
		}
		rv := s.st.nextRV()
		nmd["resourceVersion"] = strconv.FormatUint(rv, 10)
		s.st.objects[ri][key] = &record{obj: next, managers: rec.managers}
		s.st.recordEvent(&event{rv: rv, ri: ri, key: key, typ: "MODIFIED", obj: next, prev: rec.obj})
		return next
	}
	if dryRun {
		return rec.obj
	}
	rv := s.st.nextRV()
	gone := copyObj(rec.obj)
	meta(gone)["resourceVersion"] = strconv.FormatUint(rv, 10)
	delete(s.st.objects[ri], key)
	s.st.recordEvent(&event{rv: rv, ri: ri, key: key, typ: "DELETED", obj: gone, prev: rec.obj})
	return gone
}

func (s *Server) handleDeleteCollection(req *apiRequest) (any, error) {
	ri := req.pp.ri
	f, aerr := s.buildFilter(req)
	if aerr != nil {
		return nil, aerr
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	items := []any{}
	objs, _, _ := s.st.snapshot(ri, 0)
	for _, k := range sortedKeys(objs) {
		if f.matches(objs[k]) {
			items = append(items, listItem(s.deleteLocked(ri, k, s.st.objects[ri][k], req.dryRun())))
		}
	}
	return map[string]any{"kind": ri.ListKind(), "apiVersion": ri.GroupVersion(),
		"metadata": map[string]any{"resourceVersion": strconv.FormatUint(s.st.rv, 10)}, "items": items}, nil
}
