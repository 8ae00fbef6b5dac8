package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// requestRule: what a rule applies to, the next Count requests matching
// Verb and Resource.
type requestRule struct {
	Verb     string `json:"verb"`     // GET, LIST, WATCH, CREATE, UPDATE, PATCH, DELETE, DELETECOLLECTION; "" or "*" = any
	Resource string `json:"resource"` // e.g. resourceclaims or resourceclaims/status; "" or "*" = any
	Count    int    `json:"count"`
}

func (r *requestRule) base() *requestRule { return r }

func (r *requestRule) matches(verb, resource, subresource string) bool {
	if r.Verb != "" && r.Verb != "*" && !strings.EqualFold(r.Verb, verb) {
		return false
	}
	return r.Resource == "" || r.Resource == "*" || r.Resource == resource || r.Resource == resource+"/"+subresource
}

// rule is a *faultRule or a *holdRule.
type rule interface{ base() *requestRule }

// takeRule uses up one request of the first rule of *rules that matches;
// false if none does. The caller holds adminState.mu.
func takeRule[R rule](rules *[]R, verb, resource, subresource string) (R, bool) {
	for i, r := range *rules {
		b := r.base()
		if !b.matches(verb, resource, subresource) {
			continue
		}
		b.Count--
		if b.Count <= 0 {
			*rules = append((*rules)[:i:i], (*rules)[i+1:]...)
		}
		return r, true
	}
	var none R
	return none, false
}

// addRule appends r (a Count of at least 1) to *rules and answers with the
// number of rules pending.
func addRule[R rule](a *adminState, w http.ResponseWriter, rules *[]R, r R) {
	if r.base().Count <= 0 {
		r.base().Count = 1
	}
	a.mu.Lock()
	*rules = append(*rules, r)
	n := len(*rules)
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"pendingRules": n})
}

// faultRule makes the matching requests fail.
type faultRule struct {
	requestRule
	Status            int `json:"status"`
	RetryAfterSeconds int `json:"retryAfterSeconds"`
}

// holdRule holds the matching requests' responses: each is carried out at
// once, its response kept back until DELETE /fake/hold, so that a test can
// act in between by events.
type holdRule struct {
	requestRule
}

type requestLogEntry struct {
	Verb      string `json:"verb"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Path      string `json:"path"`
	Query     string `json:"query,omitempty"`
	User      string `json:"user,omitempty"`
	Bytes     int    `json:"bytes"`
	Code      int    `json:"code"`
}

const maxRequestLog = 1000

// adminState is everything the /fake/ endpoints change at run time.
type adminState struct {
	mu        sync.Mutex
	faults    []*faultRule
	holds     []*holdRule
	held      int           // responses being held now
	conns     int           // TCP connections accepted
	release   chan struct{} // closed by DELETE /fake/hold
	delay     time.Duration
	counts    map[string]int
	inFlight  map[string]int // requests being handled now, by count key
	peak      map[string]int // the most in flight at once since the last reset
	total     int
	bytes     int64
	log       []*requestLogEntry
	drop      []string
	dropPaths []dropPath
	readonly  map[string]bool
	forbidden map[string]bool
	// What /version says; a test sets an older release's.
	gitVersion string
}

func newAdminState(drop, readonly, forbidden []string) (*adminState, error) {
	a := &adminState{counts: map[string]int{}, inFlight: map[string]int{}, peak: map[string]int{},
		readonly: toSet(readonly), forbidden: toSet(forbidden), gitVersion: "v1.37.0-fakeapiserver"}
	if err := a.setDrop(drop); err != nil {
		return nil, err
	}
	return a, nil
}

func toSet(list []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			m[s] = true
		}
	}
	return m
}

func setList(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (a *adminState) setDrop(list []string) error {
	paths, err := parseDropPaths(list)
	if err != nil {
		return err
	}
	a.drop, a.dropPaths = append([]string{}, list...), paths
	return nil
}

func (a *adminState) userLists() (forbidden, readonly map[string]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.forbidden, a.readonly
}

func (s *Server) dropPaths() []dropPath {
	s.admin.mu.Lock()
	defer s.admin.mu.Unlock()
	return s.admin.dropPaths
}

// record counts a request, keeps its log entry (Code is filled in later) and
// counts it in flight until the returned function runs.
func (a *adminState) record(e *requestLogEntry) (done func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := e.Verb
	if e.Resource != "" {
		key += " " + e.Resource
	} else {
		key += " " + e.Path
	}
	a.counts[key]++
	a.inFlight[key]++
	if a.inFlight[key] > a.peak[key] {
		a.peak[key] = a.inFlight[key]
	}
	a.total++
	a.bytes += int64(e.Bytes)
	a.log = append(a.log, e)
	if len(a.log) > maxRequestLog {
		a.log = append([]*requestLogEntry(nil), a.log[len(a.log)-maxRequestLog:]...)
	}
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.inFlight[key]--
	}
}

func (a *adminState) setCode(e *requestLogEntry, code int) {
	a.mu.Lock()
	e.Code = code
	a.mu.Unlock()
}

// takeFault returns the injected failure for a request, if any rule matches.
func (a *adminState) takeFault(verb, resource, subresource string) *apiError {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f, ok := takeRule(&a.faults, verb, resource, subresource); ok {
		return errInjected(f.Status, f.RetryAfterSeconds)
	}
	return nil
}

// takeHold returns what to wait for before responding, if a hold rule
// matches the request; nil if none does.
func (a *adminState) takeHold(verb, resource, subresource string) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := takeRule(&a.holds, verb, resource, subresource); !ok {
		return nil
	}
	if a.release == nil {
		a.release = make(chan struct{})
	}
	return a.release
}

func (a *adminState) countConnection() {
	a.mu.Lock()
	a.conns++
	a.mu.Unlock()
}

func (a *adminState) addHeld(delta int) {
	a.mu.Lock()
	a.held += delta
	a.mu.Unlock()
}

func (a *adminState) currentDelay() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.delay
}

type configBody struct {
	DropFields     *[]string `json:"dropFields"`
	ReadonlyUsers  *[]string `json:"readonlyUsers"`
	ForbiddenUsers *[]string `json:"forbiddenUsers"`
	GitVersion     *string   `json:"gitVersion"`
}

type resetBody struct {
	Faults  bool `json:"faults"`
	Delay   bool `json:"delay"`
	Objects bool `json:"objects"`
}

func decodeAdminBody(r *http.Request, into any) *apiError {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil && !errors.Is(err, io.EOF) {
		return errBadRequest("invalid admin request body: " + err.Error())
	}
	return nil
}

// serveAdmin handles /fake/*. It requires the admin token.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	// Handlers that take no body must still drain it: an unread body makes
	// HTTP/2 reset the stream, which the client sees as a framing error.
	defer io.Copy(io.Discard, r.Body)
	tok, ok := bearerToken(r)
	if !ok {
		writeError(w, errUnauthorized())
		return
	}
	if _, known := s.tokens.users[tok]; !known {
		writeError(w, errUnauthorized())
		return
	}
	if tok != s.tokens.adminToken {
		writeError(w, &apiError{Code: 403, Reason: "Forbidden", Message: "forbidden: the /fake/ endpoints need the admin token (the first line of the token file)"})
		return
	}
	a := s.admin
	switch {
	case r.URL.Path == "/fake/fail" && r.Method == http.MethodPost:
		var f faultRule
		if aerr := decodeAdminBody(r, &f); aerr != nil {
			writeError(w, aerr)
			return
		}
		if f.Status < 400 || f.Status > 599 {
			writeError(w, errBadRequest(fmt.Sprintf("status must be an HTTP error code (400-599), got %d", f.Status)))
			return
		}
		addRule(a, w, &a.faults, &f)
	case r.URL.Path == "/fake/fail" && r.Method == http.MethodDelete:
		a.mu.Lock()
		a.faults = nil
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"pendingRules": 0})
	case r.URL.Path == "/fake/hold" && r.Method == http.MethodPost:
		var h holdRule
		if aerr := decodeAdminBody(r, &h); aerr != nil {
			writeError(w, aerr)
			return
		}
		if strings.EqualFold(h.Verb, "watch") || h.Verb == "" || h.Verb == "*" {
			writeError(w, errBadRequest("verb must name one verb other than WATCH: a watch's response is a stream"))
			return
		}
		addRule(a, w, &a.holds, &h)
	case r.URL.Path == "/fake/hold" && r.Method == http.MethodDelete:
		a.mu.Lock()
		released := a.held
		a.holds = nil
		if a.release != nil {
			close(a.release)
			a.release = nil
		}
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"released": released})
	case r.URL.Path == "/fake/delay" && r.Method == http.MethodPost:
		var d struct {
			Milliseconds int `json:"milliseconds"`
		}
		if aerr := decodeAdminBody(r, &d); aerr != nil {
			writeError(w, aerr)
			return
		}
		if d.Milliseconds < 0 {
			writeError(w, errBadRequest("milliseconds must be >= 0"))
			return
		}
		a.mu.Lock()
		a.delay = time.Duration(d.Milliseconds) * time.Millisecond
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"milliseconds": d.Milliseconds})
	case r.URL.Path == "/fake/requests" && r.Method == http.MethodGet:
		a.mu.Lock()
		counts := map[string]int{}
		for k, v := range a.counts {
			counts[k] = v
		}
		peak := map[string]int{}
		for k, v := range a.peak {
			peak[k] = v
		}
		log := make([]requestLogEntry, len(a.log))
		for i, e := range a.log {
			log[i] = *e
		}
		out := map[string]any{"total": a.total, "bytesReceived": a.bytes, "counts": counts, "peakInFlight": peak,
			"held": a.held, "connections": a.conns, "requests": log}
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
	case r.URL.Path == "/fake/reset" && r.Method == http.MethodPost:
		var b resetBody
		if aerr := decodeAdminBody(r, &b); aerr != nil {
			writeError(w, aerr)
			return
		}
		a.mu.Lock()
		a.counts, a.total, a.bytes, a.log, a.conns = map[string]int{}, 0, 0, nil, 0
		a.peak = map[string]int{}
		for k, v := range a.inFlight {
			a.peak[k] = v
		}
		if b.Faults {
			a.faults = nil
		}
		if b.Delay {
			a.delay = 0
		}
		a.mu.Unlock()
		if b.Objects {
			s.st.mu.Lock()
			for _, ri := range allResources {
				objs, _, _ := s.st.snapshot(ri, 0)
				for _, k := range sortedKeys(objs) {
					rv := s.st.nextRV()
					gone := copyObj(objs[k])
					meta(gone)["resourceVersion"] = strconv.FormatUint(rv, 10)
					delete(s.st.objects[ri], k)
					s.st.recordEvent(&event{rv: rv, ri: ri, key: k, typ: "DELETED", obj: gone, prev: objs[k]})
				}
			}
			s.st.mu.Unlock()
		}
		writeJSON(w, http.StatusOK, map[string]any{"reset": true})
	case r.URL.Path == "/fake/closewatches" && r.Method == http.MethodPost:
		writeJSON(w, http.StatusOK, map[string]any{"closed": s.st.closeWatches()})
	case r.URL.Path == "/fake/compact" && r.Method == http.MethodPost:
		rv := s.st.compact()
		writeJSON(w, http.StatusOK, map[string]any{"compactedResourceVersion": strconv.FormatUint(rv, 10)})
	case r.URL.Path == "/fake/config" && (r.Method == http.MethodPost || r.Method == http.MethodGet):
		if r.Method == http.MethodPost {
			var c configBody
			if aerr := decodeAdminBody(r, &c); aerr != nil {
				writeError(w, aerr)
				return
			}
			a.mu.Lock()
			var err error
			if c.DropFields != nil {
				err = a.setDrop(*c.DropFields)
			}
			if c.ReadonlyUsers != nil {
				a.readonly = toSet(*c.ReadonlyUsers)
			}
			if c.ForbiddenUsers != nil {
				a.forbidden = toSet(*c.ForbiddenUsers)
			}
			if c.GitVersion != nil {
				a.gitVersion = *c.GitVersion
			}
			a.mu.Unlock()
			if err != nil {
				writeError(w, errBadRequest(err.Error()))
				return
			}
		}
		a.mu.Lock()
		out := map[string]any{"dropFields": append([]string{}, a.drop...), "readonlyUsers": setList(a.readonly),
			"forbiddenUsers": setList(a.forbidden), "gitVersion": a.gitVersion}
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
	default:
		writeError(w, errPathNotFound())
	}
}

func (a *adminState) currentGitVersion() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gitVersion
}
