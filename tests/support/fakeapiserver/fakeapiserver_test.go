package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	adminToken = "admin-token"
	userToken  = "user-token"
	roToken    = "ro-token"
	noToken    = "no-token"

	slicesPath = "/apis/resource.k8s.io/v1/resourceslices"
	claimsPath = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
)

// openAPIPath is $DRA_OPENAPI_PATH (set by CTest) or the reference copy
// in tests/data/reference.
func openAPIPath(t *testing.T) string {
	p := os.Getenv("DRA_OPENAPI_PATH")
	if p == "" {
		_, file, _, _ := runtime.Caller(0)
		p = filepath.Join(filepath.Dir(file), "..", "..", "data", "reference", "openapi", "apis__resource.k8s.io__v1_openapi.json")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("OpenAPI document not found at %s (set DRA_OPENAPI_PATH): %v", p, err)
	}
	return p
}

type fixture struct {
	t      *testing.T
	s      *Server
	dir    string
	client *http.Client
}

func newFixture(t *testing.T, mutate ...func(*Config)) *fixture {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	content := fmt.Sprintf("%s,admin\n%s,alice\n%s,reader\n%s,mallory\n", adminToken, userToken, roToken, noToken)
	if err := os.WriteFile(tokens, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		CertDir: filepath.Join(dir, "certs"), PortFile: filepath.Join(dir, "port"), TokenFile: tokens,
		OpenAPIPath: openAPIPath(t), ReadonlyUsers: []string{"reader"}, ForbiddenUsers: []string{"mallory"},
		BookmarkInterval: 50 * time.Millisecond,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &fixture{t: t, s: s, dir: dir, client: newClient(t, cfg.CertDir, false)}
	t.Cleanup(f.client.CloseIdleConnections) // runs before s.Close
	return f
}

func newClient(t *testing.T, certDir string, withClientCert bool) *http.Client {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(certDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("bad ca.crt")
	}
	tc := &tls.Config{RootCAs: pool}
	if withClientCert {
		pair, err := tls.LoadX509KeyPair(filepath.Join(certDir, "client.crt"), filepath.Join(certDir, "client.key"))
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &http.Client{Transport: tr}
}

type response struct {
	code   int
	header http.Header
	body   []byte
	obj    map[string]any
}

func (f *fixture) req(method, path, token, contentType string, body any) response {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		rd = bytes.NewReader(mustJSON(b))
	}
	r, err := http.NewRequest(method, f.s.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	} else if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.client.Do(r)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	out := response{code: resp.StatusCode, header: resp.Header, body: data}
	if v, err := decodeJSON(data); err == nil {
		out.obj, _ = v.(map[string]any)
	}
	return out
}

func (f *fixture) do(method, path string, body any) response {
	f.t.Helper()
	return f.req(method, path, adminToken, "", body)
}

func (f *fixture) must(r response, code int) map[string]any {
	f.t.Helper()
	if r.code != code {
		f.t.Fatalf("got HTTP %d, want %d: %s", r.code, code, r.body)
	}
	return r.obj
}

func (f *fixture) admin(path string, body any) map[string]any {
	f.t.Helper()
	method := http.MethodPost
	if body == nil {
		method = http.MethodGet
	}
	return f.must(f.req(method, path, adminToken, "", body), 200)
}

func slice(name, driver, node string, devices ...string) map[string]any {
	var devs []any
	for _, d := range devices {
		devs = append(devs, map[string]any{"name": d})
	}
	spec := map[string]any{"driver": driver, "nodeName": node,
		"pool": map[string]any{"name": node, "generation": 1, "resourceSliceCount": 1}}
	if devs != nil {
		spec["devices"] = devs
	}
	md := map[string]any{"name": name}
	if strings.HasSuffix(name, "-") {
		md = map[string]any{"generateName": name}
	}
	return map[string]any{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": md, "spec": spec}
}

func claim(name string) map[string]any {
	return map[string]any{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"devices": map[string]any{"requests": []any{
			map[string]any{"name": "gpu", "exactly": map[string]any{"deviceClassName": "gpu.example.com"}}}}}}
}

// get walks a decoded object: get(obj, "metadata", "name"), get(obj, "items", 0).
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func gets(v any, path ...any) string {
	switch t := get(v, path...).(type) {
	case string:
		return t
	case nil:
		return ""
	default:
		return fmt.Sprint(t)
	}
}

func statusOf(t *testing.T, r response, code int, reason string) map[string]any {
	t.Helper()
	if r.code != code || gets(r.obj, "kind") != "Status" || gets(r.obj, "reason") != reason ||
		gets(r.obj, "code") != strconv.Itoa(code) || gets(r.obj, "status") != "Failure" || gets(r.obj, "apiVersion") != "v1" {
		t.Fatalf("want a %d %s Status, got HTTP %d: %s", code, reason, r.code, r.body)
	}
	return r.obj
}

func TestCreateGetAndAlreadyExists(t *testing.T) {
	f := newFixture(t)
	created := f.must(f.do("POST", slicesPath, slice("node1-gpu-", "gpu.example.com", "node1", "gpu-0")), 201)
	name := gets(created, "metadata", "name")
	if !strings.HasPrefix(name, "node1-gpu-") || len(name) != len("node1-gpu-")+5 {
		t.Fatalf("generated name %q", name)
	}
	for _, c := range name[len("node1-gpu-"):] {
		if !strings.ContainsRune(nameSuffixAlphabet, c) {
			t.Fatalf("generated suffix of %q has %q", name, c)
		}
	}
	for _, field := range []string{"uid", "resourceVersion", "creationTimestamp"} {
		if gets(created, "metadata", field) == "" {
			t.Errorf("metadata.%s not set: %s", field, mustJSON(created))
		}
	}
	if gets(created, "metadata", "generation") != "1" {
		t.Errorf("generation = %v", get(created, "metadata", "generation"))
	}
	if gets(created, "metadata", "managedFields", 0, "manager") != "Go-http-client" {
		t.Errorf("managedFields: %s", mustJSON(get(created, "metadata", "managedFields")))
	}
	got := f.must(f.do("GET", slicesPath+"/"+name, nil), 200)
	if !deepEqual(got, created) {
		t.Fatalf("GET differs from create response:\n%s\n%s", mustJSON(got), mustJSON(created))
	}
	second := f.must(f.do("POST", slicesPath, slice("other", "gpu.example.com", "node2")), 201)
	rv1, _ := strconv.Atoi(gets(created, "metadata", "resourceVersion"))
	rv2, _ := strconv.Atoi(gets(second, "metadata", "resourceVersion"))
	if rv2 <= rv1 {
		t.Errorf("resourceVersion did not increase: %d then %d", rv1, rv2)
	}
	st := statusOf(t, f.do("POST", slicesPath, slice("other", "gpu.example.com", "node2")), 409, "AlreadyExists")
	if msg := gets(st, "message"); msg != `resourceslices.resource.k8s.io "other" already exists` {
		t.Errorf("message %q", msg)
	}
	if gets(st, "details", "name") != "other" || gets(st, "details", "group") != "resource.k8s.io" || gets(st, "details", "kind") != "resourceslices" {
		t.Errorf("details %s", mustJSON(st["details"]))
	}
	st = statusOf(t, f.do("GET", slicesPath+"/missing", nil), 404, "NotFound")
	if gets(st, "message") != `resourceslices.resource.k8s.io "missing" not found` {
		t.Errorf("message %q", gets(st, "message"))
	}
	statusOf(t, f.do("GET", "/apis/resource.k8s.io/v1/widgets", nil), 404, "NotFound")
}

func TestQuantitiesAndTimesAreCanonicalized(t *testing.T) {
	f := newFixture(t)
	s := slice("q", "gpu.example.com", "node1")
	s["spec"].(map[string]any)["devices"] = []any{map[string]any{"name": "gpu-0",
		"capacity": map[string]any{"memory": map[string]any{"value": "1024Mi"}, "cores": map[string]any{"value": json.Number("2")}, "frac": map[string]any{"value": "1.5"}}}}
	out := f.must(f.do("POST", slicesPath, s), 201)
	for k, want := range map[string]string{"memory": "1Gi", "cores": "2", "frac": "1500m"} {
		if got := get(out, "spec", "devices", 0, "capacity", k, "value"); got != want {
			t.Errorf("capacity %s = %#v, want %q", k, got, want)
		}
	}
	s["spec"].(map[string]any)["devices"] = []any{map[string]any{"name": "gpu-0",
		"capacity": map[string]any{"memory": map[string]any{"value": "12x"}}}}
	s["metadata"] = map[string]any{"name": "q2"}
	// A Quantity the Go type cannot parse is a decoding error, as in the real server.
	st := statusOf(t, f.do("POST", slicesPath, s), 400, "BadRequest")
	if !strings.HasPrefix(gets(st, "message"), `ResourceSlice in version "v1" cannot be handled as a ResourceSlice: spec.devices[0].capacity[memory].value: `) {
		t.Errorf("message %q", gets(st, "message"))
	}
}

func TestListPagingSelectorsAndContinueExpiry(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 5; i++ {
		s := slice(fmt.Sprintf("s%d", i), "gpu.example.com", fmt.Sprintf("node%d", i%2))
		if i >= 3 {
			s["spec"].(map[string]any)["driver"] = "nic.example.com"
		}
		s["metadata"].(map[string]any)["labels"] = map[string]any{"idx": strconv.Itoa(i), "tier": []string{"a", "b"}[i%2]}
		f.must(f.do("POST", slicesPath, s), 201)
	}
	page := f.must(f.do("GET", slicesPath+"?limit=2", nil), 200)
	if gets(page, "kind") != "ResourceSliceList" || gets(page, "apiVersion") != "resource.k8s.io/v1" {
		t.Fatalf("list: %s", mustJSON(page))
	}
	if get(page, "items", 0, "kind") != nil {
		t.Errorf("list items carry kind")
	}
	listRV := gets(page, "metadata", "resourceVersion")
	var names []string
	for page != nil {
		for _, it := range get(page, "items").([]any) {
			names = append(names, gets(it, "metadata", "name"))
		}
		cont := gets(page, "metadata", "continue")
		if cont == "" {
			break
		}
		if len(names) == 2 {
			if gets(page, "metadata", "remainingItemCount") != "3" {
				t.Errorf("remainingItemCount = %v", get(page, "metadata", "remainingItemCount"))
			}
			// Changes after the first page must not show up in later pages.
			f.must(f.do("POST", slicesPath, slice("s9", "gpu.example.com", "node9")), 201)
			f.must(f.do("DELETE", slicesPath+"/s3", nil), 200)
		}
		page = f.must(f.do("GET", slicesPath+"?limit=2&continue="+cont, nil), 200)
		if gets(page, "metadata", "resourceVersion") != listRV {
			t.Errorf("page resourceVersion %s, first page %s", gets(page, "metadata", "resourceVersion"), listRV)
		}
	}
	if strings.Join(names, ",") != "s0,s1,s2,s3,s4" {
		t.Errorf("paged names %v", names)
	}

	count := func(query string) int {
		t.Helper()
		l := f.must(f.do("GET", slicesPath+"?"+query, nil), 200)
		return len(get(l, "items").([]any))
	}
	for q, want := range map[string]int{
		"labelSelector=tier%3Da":                                 3, // s0 s2 s4 (s3 is deleted)
		"labelSelector=tier!%3Da":                                2, // s1 and s9, which has no labels
		"labelSelector=idx":                                      4,
		"labelSelector=!idx":                                     1,
		"labelSelector=idx+in+(0,1,3)":                           2,
		"labelSelector=idx+notin+(0,1)":                          3,
		"labelSelector=idx%3E2":                                  1,
		"fieldSelector=spec.driver%3Dnic.example.com":            1,
		"fieldSelector=spec.nodeName%3Dnode0":                    3,
		"fieldSelector=spec.pool.name%3Dnode1":                   1,
		"fieldSelector=metadata.name%3Ds1":                       1,
		"fieldSelector=spec.driver!%3Dgpu.example.com":           1,
		"fieldSelector=spec.nodeName%3Dnode0,metadata.name%3Ds9": 0,
	} {
		if got := count(q); got != want {
			t.Errorf("%s: %d items, want %d", q, got, want)
		}
	}
	statusOf(t, f.do("GET", slicesPath+"?fieldSelector=spec.bogus%3D1", nil), 400, "BadRequest")
	statusOf(t, f.do("GET", slicesPath+"?labelSelector=a+in+b", nil), 400, "BadRequest")
	statusOf(t, f.do("GET", slicesPath+"?continue=garbage", nil), 400, "BadRequest")

	page = f.must(f.do("GET", slicesPath+"?limit=1", nil), 200)
	f.must(f.do("POST", slicesPath, slice("s10", "gpu.example.com", "node1")), 201)
	f.admin("/fake/compact", map[string]any{})
	statusOf(t, f.do("GET", slicesPath+"?limit=1&continue="+gets(page, "metadata", "continue"), nil), 410, "Expired")
}

func TestUpdateConflictAndGeneration(t *testing.T) {
	f := newFixture(t)
	obj := f.must(f.do("POST", slicesPath, slice("s", "gpu.example.com", "node1", "gpu-0")), 201)
	rv := gets(obj, "metadata", "resourceVersion")

	// Label change: no generation bump.
	obj["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b"}
	upd := f.must(f.do("PUT", slicesPath+"/s", obj), 200)
	if gets(upd, "metadata", "generation") != "1" || gets(upd, "metadata", "resourceVersion") == rv {
		t.Fatalf("after label update: %s", mustJSON(upd["metadata"]))
	}
	// Stale resourceVersion.
	st := statusOf(t, f.do("PUT", slicesPath+"/s", obj), 409, "Conflict")
	want := `Operation cannot be fulfilled on resourceslices.resource.k8s.io "s": the object has been modified; please apply your changes to the latest version and try again`
	if gets(st, "message") != want {
		t.Errorf("message %q", gets(st, "message"))
	}
	// Spec change: generation 2.
	upd["spec"].(map[string]any)["devices"] = []any{map[string]any{"name": "gpu-1"}}
	upd2 := f.must(f.do("PUT", slicesPath+"/s", upd), 200)
	if gets(upd2, "metadata", "generation") != "2" {
		t.Errorf("generation %v", get(upd2, "metadata", "generation"))
	}
	// No-op update keeps the resourceVersion.
	same := f.must(f.do("PUT", slicesPath+"/s", upd2), 200)
	if gets(same, "metadata", "resourceVersion") != gets(upd2, "metadata", "resourceVersion") {
		t.Errorf("no-op update changed resourceVersion")
	}
	// Unconditional update (no resourceVersion) works.
	delete(upd2["metadata"].(map[string]any), "resourceVersion")
	upd2["spec"].(map[string]any)["devices"] = []any{map[string]any{"name": "gpu-2"}}
	f.must(f.do("PUT", slicesPath+"/s", upd2), 200)
	// Immutable driver.
	upd2["spec"].(map[string]any)["driver"] = "other.example.com"
	st = statusOf(t, f.do("PUT", slicesPath+"/s", upd2), 422, "Invalid")
	if gets(st, "details", "causes", 0, "field") != "spec.driver" {
		t.Errorf("causes %s", mustJSON(get(st, "details", "causes")))
	}
	statusOf(t, f.do("PUT", slicesPath+"/nope", slice("nope", "gpu.example.com", "n")), 404, "NotFound")
	statusOf(t, f.do("PUT", slicesPath+"/other", upd2), 400, "BadRequest")
}

func TestDeletePreconditions(t *testing.T) {
	f := newFixture(t)
	obj := f.must(f.do("POST", slicesPath, slice("s", "gpu.example.com", "node1")), 201)
	uid, rv := gets(obj, "metadata", "uid"), gets(obj, "metadata", "resourceVersion")
	st := statusOf(t, f.do("DELETE", slicesPath+"/s", map[string]any{"preconditions": map[string]any{"uid": "wrong"}}), 409, "Conflict")
	if gets(st, "message") != `Operation cannot be fulfilled on ResourceSlice.resource.k8s.io "s": the UID in the precondition (wrong) does not match the UID in record (`+uid+`). The object might have been deleted and then recreated` || gets(st, "details", "kind") != "ResourceSlice" {
		t.Errorf("message %q", gets(st, "message"))
	}
	st = statusOf(t, f.do("DELETE", slicesPath+"/s", map[string]any{"preconditions": map[string]any{"resourceVersion": "999"}}), 409, "Conflict")
	if gets(st, "message") != `Operation cannot be fulfilled on ResourceSlice.resource.k8s.io "s": the ResourceVersion in the precondition (999) does not match the ResourceVersion in record (`+rv+`). The object might have been modified` {
		t.Errorf("message %q", gets(st, "message"))
	}
	gone := f.must(f.do("DELETE", slicesPath+"/s", map[string]any{"preconditions": map[string]any{"uid": uid, "resourceVersion": rv}}), 200)
	if gets(gone, "kind") != "ResourceSlice" || gets(gone, "metadata", "uid") != uid {
		t.Errorf("delete returned %s", gone)
	}
	statusOf(t, f.do("DELETE", slicesPath+"/s", nil), 404, "NotFound")
}

func TestFinalizersDelayDeletion(t *testing.T) {
	f := newFixture(t)
	c := claim("c")
	c["metadata"].(map[string]any)["finalizers"] = []any{"example.com/keep"}
	f.must(f.do("POST", claimsPath, c), 201)
	marked := f.must(f.do("DELETE", claimsPath+"/c", nil), 200)
	if gets(marked, "metadata", "deletionTimestamp") == "" {
		t.Fatalf("no deletionTimestamp: %s", mustJSON(marked))
	}
	f.must(f.do("GET", claimsPath+"/c", nil), 200)
	f.must(f.req("PATCH", claimsPath+"/c", adminToken, "application/merge-patch+json", `{"metadata":{"finalizers":null}}`), 200)
	statusOf(t, f.do("GET", claimsPath+"/c", nil), 404, "NotFound")
}

// watchStream reads watch events from a streaming response.
type watchStream struct {
	t      *testing.T
	events chan map[string]any
	body   io.Closer
}

func (f *fixture) watch(path string) *watchStream {
	f.t.Helper()
	r, _ := http.NewRequest("GET", f.s.URL+path, nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := f.client.Do(r)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		f.t.Fatalf("watch %s: HTTP %d %s", path, resp.StatusCode, b)
	}
	w := &watchStream{t: f.t, events: make(chan map[string]any, 100), body: resp.Body}
	go func() {
		defer close(w.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			v, err := decodeObject(sc.Bytes())
			if err != nil {
				return
			}
			w.events <- v
		}
	}()
	f.t.Cleanup(func() { resp.Body.Close() })
	return w
}

// next returns the next event, skipping bookmarks unless wantBookmark.
func (w *watchStream) next(wantBookmark bool) map[string]any {
	w.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				return nil
			}
			if gets(ev, "type") == "BOOKMARK" && !wantBookmark {
				continue
			}
			return ev
		case <-timeout:
			w.t.Fatal("timed out waiting for a watch event")
		}
	}
}

func (w *watchStream) expect(typ, name string) map[string]any {
	w.t.Helper()
	ev := w.next(false)
	if gets(ev, "type") != typ || gets(ev, "object", "metadata", "name") != name {
		w.t.Fatalf("want %s %s, got %s", typ, name, mustJSON(ev))
	}
	if gets(ev, "object", "kind") != "ResourceSlice" && gets(ev, "object", "kind") != "ResourceClaim" {
		w.t.Fatalf("event object without kind: %s", mustJSON(ev))
	}
	return ev
}

func TestWatchEventsBookmarksSelectorsAndTimeout(t *testing.T) {
	f := newFixture(t)
	a := f.must(f.do("POST", slicesPath, slice("a", "gpu.example.com", "node1")), 201)
	rv := gets(a, "metadata", "resourceVersion")

	// From a resourceVersion: only later events.
	w := f.watch(slicesPath + "?watch=1&resourceVersion=" + rv)
	f.must(f.do("POST", slicesPath, slice("b", "gpu.example.com", "node2")), 201)
	w.expect("ADDED", "b")
	f.must(f.req("PATCH", slicesPath+"/b", adminToken, "application/merge-patch+json", `{"metadata":{"labels":{"x":"y"}}}`), 200)
	w.expect("MODIFIED", "b")
	f.must(f.do("DELETE", slicesPath+"/b", nil), 200)
	w.expect("DELETED", "b")

	// resourceVersion "" (and /watch/ path form): the current state first.
	w2 := f.watch("/apis/resource.k8s.io/v1/watch/resourceslices")
	w2.expect("ADDED", "a")

	// Resuming from an old resourceVersion replays history.
	w3 := f.watch(slicesPath + "?watch=true&resourceVersion=" + rv)
	w3.expect("ADDED", "b")
	w3.expect("MODIFIED", "b")
	w3.expect("DELETED", "b")

	// Bookmarks carry only the resourceVersion.
	w4 := f.watch(slicesPath + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv)
	for i := 0; i < 3; i++ {
		w4.next(false)
	}
	bm := w4.next(true)
	if gets(bm, "type") != "BOOKMARK" || gets(bm, "object", "metadata", "resourceVersion") == "" || get(bm, "object", "spec") != nil {
		t.Fatalf("bookmark %s", mustJSON(bm))
	}

	// Selectors: objects entering / leaving the selection are ADDED / DELETED.
	w5 := f.watch(slicesPath + "?watch=1&labelSelector=sel%3Dyes&fieldSelector=spec.nodeName%3Dnode1&resourceVersion=" + rv)
	f.must(f.req("PATCH", slicesPath+"/a", adminToken, "application/merge-patch+json", `{"metadata":{"labels":{"sel":"yes"}}}`), 200)
	w5.expect("ADDED", "a")
	f.must(f.do("POST", slicesPath, slice("c", "gpu.example.com", "node2")), 201) // other node: not seen
	f.must(f.req("PATCH", slicesPath+"/c", adminToken, "application/merge-patch+json", `{"metadata":{"labels":{"sel":"yes"}}}`), 200)
	f.must(f.req("PATCH", slicesPath+"/a", adminToken, "application/merge-patch+json", `{"metadata":{"labels":{"sel":"no"}}}`), 200)
	w5.expect("DELETED", "a")

	// timeoutSeconds ends the stream.
	start := time.Now()
	w6 := f.watch(slicesPath + "?watch=1&timeoutSeconds=1&resourceVersion=" + rv)
	for ev := w6.next(false); ev != nil; ev = w6.next(false) {
	}
	if d := time.Since(start); d < time.Second || d > 4*time.Second {
		t.Errorf("timeoutSeconds=1 stream lasted %v", d)
	}

	// sendInitialEvents ends the initial list with an annotated bookmark.
	w7 := f.watch(slicesPath + "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan")
	w7.expect("ADDED", "a")
	w7.expect("ADDED", "c")
	bm = w7.next(true)
	if gets(bm, "object", "metadata", "annotations", "k8s.io/initial-events-end") != "true" {
		t.Fatalf("initial-events-end bookmark: %s", mustJSON(bm))
	}
}

func TestWatchTooOldResourceVersion(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.History = 2 })
	first := f.must(f.do("POST", slicesPath, slice("a", "gpu.example.com", "node1")), 201)
	for _, n := range []string{"b", "c", "d"} {
		f.must(f.do("POST", slicesPath, slice(n, "gpu.example.com", "node1")), 201)
	}
	rv := gets(first, "metadata", "resourceVersion")
	w := f.watch(slicesPath + "?watch=1&resourceVersion=" + rv)
	ev := w.next(false)
	if gets(ev, "type") != "ERROR" || gets(ev, "object", "code") != "410" || gets(ev, "object", "reason") != "Expired" ||
		gets(ev, "object", "message") != "too old resource version: 1 (2)" {
		t.Fatalf("want a 410 ERROR event, got %s", mustJSON(ev))
	}
	if w.next(false) != nil {
		t.Fatal("stream not closed after the ERROR event")
	}
	// A retained resourceVersion still works; after /fake/compact it does not.
	last := f.must(f.do("GET", slicesPath, nil), 200)
	lrv := gets(last, "metadata", "resourceVersion")
	f.admin("/fake/compact", map[string]any{})
	f.watch(slicesPath + "?watch=1&resourceVersion=" + lrv) // current RV: fine
	prev, _ := strconv.Atoi(lrv)
	ev = f.watch(slicesPath + "?watch=1&resourceVersion=" + strconv.Itoa(prev-1)).next(false)
	if gets(ev, "type") != "ERROR" || gets(ev, "object", "code") != "410" {
		t.Fatalf("after compact: %s", mustJSON(ev))
	}
}

func TestStatusSubresource(t *testing.T) {
	f := newFixture(t)
	c := claim("c")
	c["status"] = map[string]any{"reservedFor": []any{map[string]any{"resource": "pods", "name": "p", "uid": "1"}}}
	created := f.must(f.do("POST", claimsPath, c), 201)
	if st, ok := created["status"].(map[string]any); !ok || len(st) != 0 {
		t.Fatalf("status kept on create (want {}, a struct that is not a pointer): %s", mustJSON(created))
	}
	if _, ok := get(created, "metadata").(map[string]any)["generation"]; ok {
		t.Errorf("claims have no generation: %s", mustJSON(created))
	}
	statusPath := claimsPath + "/c/status"
	withStatus := copyObj(created)
	result := map[string]any{"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d"}
	device := map[string]any{"driver": "gpu.example.com", "pool": "p", "device": "d"}
	// status.devices must name allocated devices.
	withStatus["status"] = map[string]any{"devices": []any{device}}
	st := statusOf(t, f.do("PUT", statusPath, withStatus), 422, "Invalid")
	if gets(st, "details", "causes", 0, "field") != "status.devices[0]" ||
		!strings.HasSuffix(gets(st, "details", "causes", 0, "message"), "must be an allocated device in the claim") {
		t.Errorf("causes %s", mustJSON(get(st, "details", "causes")))
	}
	withStatus["status"] = map[string]any{"allocation": map[string]any{"devices": map[string]any{"results": []any{result}}},
		"devices": []any{device}}
	withStatus["metadata"].(map[string]any)["labels"] = map[string]any{"ignored": "yes"}
	upd := f.must(f.do("PUT", statusPath, withStatus), 200)
	if gets(upd, "status", "devices", 0, "device") != "d" || get(upd, "metadata", "labels") != nil {
		t.Fatalf("status update: %s", mustJSON(upd))
	}
	// A main-resource PUT ignores status.
	main := copyObj(upd)
	main["status"] = map[string]any{}
	main["metadata"].(map[string]any)["labels"] = map[string]any{"kept": "yes"}
	upd2 := f.must(f.do("PUT", claimsPath+"/c", main), 200)
	if gets(upd2, "status", "devices", 0, "device") != "d" || gets(upd2, "metadata", "labels", "kept") != "yes" {
		t.Fatalf("main update: %s", mustJSON(upd2))
	}
	// Claim spec is immutable.
	main = copyObj(upd2)
	main["spec"] = map[string]any{}
	statusOf(t, f.do("PUT", claimsPath+"/c", main), 422, "Invalid")
	// Merge patch on /status.
	p := f.must(f.req("PATCH", statusPath, adminToken, "application/merge-patch+json", `{"status":{"devices":null},"metadata":{"labels":{"z":"z"}}}`), 200)
	if p["status"] != nil && get(p, "status", "devices") != nil {
		t.Fatalf("status patch: %s", mustJSON(p))
	}
	if get(p, "metadata", "labels", "z") != nil {
		t.Fatalf("status patch changed labels: %s", mustJSON(p))
	}
	statusOf(t, f.do("PUT", slicesPath+"/x/status", slice("x", "d.example.com", "n")), 404, "NotFound")
}

func TestServerSideApplyOnClaimStatus(t *testing.T) {
	f := newFixture(t)
	f.must(f.do("POST", claimsPath, claim("c")), 201)
	var results []any
	for _, d := range []string{"a.example.com/d0", "b.example.com/d1", "x/d"} {
		parts := strings.Split(d, "/")
		results = append(results, map[string]any{"request": "gpu", "driver": parts[0], "pool": "p", "device": parts[1]})
	}
	f.must(f.req("PATCH", claimsPath+"/c/status", adminToken, "application/merge-patch+json",
		map[string]any{"status": map[string]any{"allocation": map[string]any{"devices": map[string]any{"results": results}}}}), 200)
	apply := func(manager string, devices ...map[string]any) map[string]any {
		t.Helper()
		status := map[string]any{}
		for _, d := range devices {
			list, _ := status["devices"].([]any)
			status["devices"] = append(list, d)
		}
		body := map[string]any{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
			"metadata": map[string]any{"name": "c", "namespace": "default"}, "status": status}
		return f.must(f.req("PATCH", claimsPath+"/c/status?fieldManager="+manager+"&force=true", adminToken, "application/apply-patch+yaml", body), 200)
	}
	cond := func(typ string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": "R", "message": "", "lastTransitionTime": "2026-01-02T03:04:05.123Z"}
	}
	dev := func(driver, device string, conds ...string) map[string]any {
		d := map[string]any{"driver": driver, "pool": "p", "device": device}
		if len(conds) > 0 {
			var cs []any
			for _, c := range conds {
				cs = append(cs, cond(c))
			}
			d["conditions"] = cs
		}
		return d
	}
	apply("a", dev("a.example.com", "d0", "Ready", "Bound"))
	out := apply("b", dev("b.example.com", "d1", "Ready"))
	if n := len(get(out, "status", "devices").([]any)); n != 2 {
		t.Fatalf("want both managers' devices, got %s", mustJSON(out["status"]))
	}
	if got := gets(out, "status", "devices", 0, "conditions", 0, "lastTransitionTime"); got != "2026-01-02T03:04:05Z" {
		t.Errorf("lastTransitionTime %q not truncated to seconds", got)
	}
	// Manager a drops its Bound condition: removed; b's entry stays.
	out = apply("a", dev("a.example.com", "d0", "Ready"))
	devs := get(out, "status", "devices").([]any)
	if len(devs) != 2 || len(get(devs[0], "conditions").([]any)) != 1 || gets(devs[0], "conditions", 0, "type") != "Ready" {
		t.Fatalf("after re-apply: %s", mustJSON(out["status"]))
	}
	var managers []string
	for _, e := range get(out, "metadata", "managedFields").([]any) {
		managers = append(managers, gets(e, "manager")+"/"+gets(e, "operation")+"/"+gets(e, "subresource"))
	}
	if !strings.Contains(strings.Join(managers, ","), "a/Apply/status") || !strings.Contains(strings.Join(managers, ","), "b/Apply/status") {
		t.Errorf("managedFields managers %v", managers)
	}
	// Manager a applies no devices: its entry disappears.
	out = apply("a")
	devs = get(out, "status", "devices").([]any)
	if len(devs) != 1 || gets(devs[0], "driver") != "b.example.com" {
		t.Fatalf("after empty apply: %s", mustJSON(out["status"]))
	}
	// Same apply again is a no-op.
	again := apply("a")
	if gets(again, "metadata", "resourceVersion") != gets(out, "metadata", "resourceVersion") {
		t.Errorf("no-op apply bumped resourceVersion")
	}
	// fieldManager is required (a 422 about PatchOptions); apply bodies are JSON.
	st := statusOf(t, f.req("PATCH", claimsPath+"/c/status", adminToken, "application/apply-patch+yaml", `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim"}`), 422, "Invalid")
	if gets(st, "message") != `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch` {
		t.Errorf("message %q", gets(st, "message"))
	}
	statusOf(t, f.req("PATCH", claimsPath+"/c/status?fieldManager=x", adminToken, "application/apply-patch+yaml", "status: {}"), 400, "BadRequest")
	// Unknown fields in the applied configuration: a 500 without a reason, as the real server answers.
	r := f.req("PATCH", claimsPath+"/c/status?fieldManager=x", adminToken, "application/apply-patch+yaml",
		`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","status":{"devices":[{"driver":"x","pool":"p","device":"d","bogus":1}]}}`)
	if r.code != 500 || gets(r.obj, "message") != "failed to create typed patch object (default/c; resource.k8s.io/v1, Kind=ResourceClaim): .status.devices[0].bogus: field not declared in schema" {
		t.Errorf("got %d %s", r.code, r.body)
	}
}

func TestApplyConflictsAndForce(t *testing.T) {
	f := newFixture(t)
	applyPath := func(manager string, force bool) string {
		p := slicesPath + "/s?fieldManager=" + manager
		if force {
			p += "&force=true"
		}
		return p
	}
	s := slice("s", "gpu.example.com", "node1", "gpu-0")
	s["metadata"].(map[string]any)["labels"] = map[string]any{"l": "1"}
	f.must(f.req("PATCH", applyPath("m1", false), adminToken, "application/apply-patch+yaml", s), 201)
	// The same value from another manager is shared ownership, not a conflict.
	f.must(f.req("PATCH", applyPath("m2", false), adminToken, "application/apply-patch+yaml", s), 200)
	s["spec"].(map[string]any)["pool"].(map[string]any)["generation"] = 2
	st := statusOf(t, f.req("PATCH", applyPath("m2", false), adminToken, "application/apply-patch+yaml", s), 409, "Conflict")
	if gets(st, "message") != `Apply failed with 1 conflict: conflict with "m1": .spec.pool.generation` ||
		gets(st, "details", "causes", 0, "reason") != "FieldManagerConflict" || gets(st, "details", "causes", 0, "field") != ".spec.pool.generation" {
		t.Errorf("conflict %s", mustJSON(st))
	}
	out := f.must(f.req("PATCH", applyPath("m2", true), adminToken, "application/apply-patch+yaml", s), 200)
	if gets(out, "spec", "pool", "generation") != "2" {
		t.Fatalf("force: %s", mustJSON(out))
	}
	// m1 lost the field: its next apply without it does not remove it, and
	// dropping its label removes only the label.
	delete(s["metadata"].(map[string]any), "labels")
	s["spec"].(map[string]any)["pool"].(map[string]any)["generation"] = 2
	out = f.must(f.req("PATCH", applyPath("m1", false), adminToken, "application/apply-patch+yaml", s), 200)
	if get(out, "metadata", "labels", "l") != "1" { // m2 applied it too
		t.Errorf("label owned by m2 removed: %s", mustJSON(out))
	}
	// An Update manager is named with its API version.
	f.must(f.req("PATCH", slicesPath+"/s?fieldManager=u", adminToken, "application/merge-patch+json", `{"spec":{"pool":{"resourceSliceCount":2}}}`), 200)
	s["spec"].(map[string]any)["pool"].(map[string]any)["resourceSliceCount"] = 3
	st = statusOf(t, f.req("PATCH", applyPath("m1", false), adminToken, "application/apply-patch+yaml", s), 409, "Conflict")
	if !strings.Contains(gets(st, "message"), `conflict with "u" using resource.k8s.io/v1: .spec.pool.resourceSliceCount`) {
		t.Errorf("conflict %s", mustJSON(st))
	}
}

func TestManagedFieldsLikeTheRealServer(t *testing.T) {
	f := newFixture(t)
	c := claim("c")
	c["metadata"].(map[string]any)["labels"] = map[string]any{"a": "1"}
	out := f.must(f.do("POST", claimsPath, c), 201)
	// A map the write added is owned itself ("."); the structs every claim
	// has (spec, spec.devices) are not.
	want := `{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{"f:devices":{"f:requests":{}}}}`
	if got := string(mustJSON(get(out, "metadata", "managedFields", 0, "fieldsV1"))); got != want {
		t.Errorf("fieldsV1 %s, want %s", got, want)
	}
	alloc := map[string]any{"status": map[string]any{"allocation": map[string]any{"devices": map[string]any{
		"results": []any{map[string]any{"request": "gpu", "driver": "d.example.com", "pool": "p", "device": "x"}}}}}}
	out = f.must(f.req("PATCH", claimsPath+"/c/status", adminToken, "application/merge-patch+json", alloc), 200)
	entries := get(out, "metadata", "managedFields").([]any)
	if len(entries) != 2 || gets(entries[1], "subresource") != "status" {
		t.Fatalf("managedFields %s", mustJSON(entries))
	}
	want = `{"f:status":{"f:allocation":{".":{},"f:devices":{".":{},"f:results":{}}}}}`
	if got := string(mustJSON(get(entries[1], "fieldsV1"))); got != want {
		t.Errorf("status fieldsV1 %s, want %s", got, want)
	}
	// A PUT that changes nothing keeps the resourceVersion.
	again := f.must(f.do("PUT", claimsPath+"/c", out), 200)
	if gets(again, "metadata", "resourceVersion") != gets(out, "metadata", "resourceVersion") {
		t.Errorf("no-op update bumped the resourceVersion")
	}
	// Nodes: status is not owned through the main resource; allocatable
	// defaults to capacity; a new node is tainted not-ready.
	node := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n1"},
		"status": map[string]any{"capacity": map[string]any{"cpu": "2"}}}
	out = f.must(f.do("POST", "/api/v1/nodes", node), 201)
	if string(mustJSON(get(out, "metadata", "managedFields", 0, "fieldsV1"))) != `{"f:spec":{"f:taints":{}}}` || gets(out, "status", "allocatable", "cpu") != "2" ||
		gets(out, "spec", "taints", 0, "key") != "node.kubernetes.io/not-ready" || get(out, "status", "nodeInfo") == nil {
		t.Errorf("node %s", mustJSON(out))
	}
}

func TestPodsAreAStoreWithFieldSelectors(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"driver-a", "driver-b"} {
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "annotations": map[string]any{"health.example.com/gpu-0": "unhealthy"}}}
		f.must(f.do("POST", "/api/v1/namespaces/ns/pods", pod), 201)
	}
	list := f.must(f.do("GET", "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Ddriver-b", nil), 200)
	if items, _ := list["items"].([]any); len(items) != 1 || gets(items[0], "metadata", "name") != "driver-b" ||
		gets(items[0], "metadata", "annotations", "health.example.com/gpu-0") != "unhealthy" {
		t.Errorf("pods list %s", mustJSON(list))
	}
}

func TestApplyCreatesAndUpdatesMainResource(t *testing.T) {
	f := newFixture(t)
	body := slice("applied", "gpu.example.com", "node1", "gpu-0", "gpu-1")
	body["metadata"].(map[string]any)["labels"] = map[string]any{"a": "1", "b": "2"}
	out := f.must(f.req("PATCH", slicesPath+"/applied?fieldManager=publisher", adminToken, "application/apply-patch+yaml", body), 201)
	if gets(out, "metadata", "uid") == "" || gets(out, "metadata", "managedFields", 0, "operation") != "Apply" {
		t.Fatalf("apply create: %s", mustJSON(out))
	}
	body["metadata"].(map[string]any)["labels"] = map[string]any{"a": "1"}
	body["spec"].(map[string]any)["devices"] = []any{map[string]any{"name": "gpu-0"}}
	out = f.must(f.req("PATCH", slicesPath+"/applied?fieldManager=publisher", adminToken, "application/apply-patch+yaml", body), 200)
	if get(out, "metadata", "labels", "b") != nil || len(get(out, "spec", "devices").([]any)) != 1 || gets(out, "metadata", "generation") != "2" {
		t.Fatalf("apply update: %s", mustJSON(out))
	}
	// Missing apiVersion/kind is rejected.
	statusOf(t, f.req("PATCH", slicesPath+"/applied?fieldManager=publisher", adminToken, "application/apply-patch+yaml", `{"spec":{}}`), 400, "BadRequest")
}

func TestRequestsAreCountedEvenWhenRejected(t *testing.T) {
	f := newFixture(t)
	f.req("GET", slicesPath, "", "", nil)
	f.req("GET", slicesPath, noToken, "", nil)
	f.req("POST", slicesPath, roToken, "", slice("s", "gpu.example.com", "n"))
	c := f.admin("/fake/requests", nil)
	if gets(c, "counts", "LIST resourceslices") != "2" || gets(c, "counts", "CREATE resourceslices") != "1" {
		t.Fatalf("counts %s", mustJSON(c["counts"]))
	}
	codes := []string{}
	for _, e := range get(c, "requests").([]any) {
		codes = append(codes, gets(e, "code"))
	}
	if strings.Join(codes, ",") != "401,403,403" {
		t.Fatalf("codes %v", codes)
	}
}

func TestPatchTypes(t *testing.T) {
	f := newFixture(t)
	f.must(f.do("POST", slicesPath, slice("s", "gpu.example.com", "node1", "gpu-0")), 201)
	out := f.must(f.req("PATCH", slicesPath+"/s", adminToken, "application/json-patch+json",
		`[{"op":"add","path":"/spec/devices/-","value":{"name":"gpu-1"}},{"op":"replace","path":"/spec/pool/generation","value":2}]`), 200)
	if gets(out, "spec", "devices", 1, "name") != "gpu-1" || gets(out, "spec", "pool", "generation") != "2" || gets(out, "metadata", "generation") != "2" {
		t.Fatalf("json patch: %s", mustJSON(out))
	}
	statusOf(t, f.req("PATCH", slicesPath+"/s", adminToken, "application/json-patch+json", `[{"op":"test","path":"/spec/driver","value":"x"}]`), 422, "Invalid")
	// A stale resourceVersion in a merge patch is a conflict.
	statusOf(t, f.req("PATCH", slicesPath+"/s", adminToken, "application/merge-patch+json", `{"metadata":{"resourceVersion":"1"},"spec":{"allNodes":null}}`), 409, "Conflict")
	// Strategic merge patch: finalizers (patch strategy merge) are united.
	f.must(f.req("PATCH", slicesPath+"/s", adminToken, "application/merge-patch+json", `{"metadata":{"finalizers":["a/x"]}}`), 200)
	out = f.must(f.req("PATCH", slicesPath+"/s", adminToken, "application/strategic-merge-patch+json",
		`{"metadata":{"finalizers":["b/y"],"labels":{"l":"1"}},"spec":{"pool":{"generation":3}}}`), 200)
	if fin := get(out, "metadata", "finalizers").([]any); len(fin) != 2 || gets(out, "metadata", "labels", "l") != "1" || gets(out, "spec", "pool", "generation") != "3" {
		t.Fatalf("strategic merge patch: %s", mustJSON(out))
	}
	out = f.must(f.req("PATCH", slicesPath+"/s", adminToken, "application/strategic-merge-patch+json",
		`{"metadata":{"$deleteFromPrimitiveList/finalizers":["a/x","b/y"]}}`), 200)
	if len(asList(get(out, "metadata", "finalizers"))) != 0 {
		t.Fatalf("$deleteFromPrimitiveList: %s", mustJSON(out))
	}
	statusOf(t, f.req("PATCH", slicesPath+"/missing", adminToken, "application/merge-patch+json", `{}`), 404, "NotFound")
	// An unknown field in a patch is dropped with a warning (the default,
	// fieldValidation=Warn) or refused (Strict: a 422 on the field "patch").
	r := f.req("PATCH", slicesPath+"/s", adminToken, "application/merge-patch+json", `{"spec":{"devices":[{"name":"gpu-0","bogus":true}]}}`)
	if r.code != 200 || r.header.Get("Warning") != `299 - "unknown field \"spec.devices[0].bogus\""` || get(r.obj, "spec", "devices", 0, "bogus") != nil {
		t.Errorf("got %d %q %s", r.code, r.header.Get("Warning"), r.body)
	}
	st := statusOf(t, f.req("PATCH", slicesPath+"/s?fieldValidation=Strict", adminToken, "application/merge-patch+json", `{"spec":{"bogus":1}}`), 422, "Invalid")
	if gets(st, "details", "causes", 0, "field") != "patch" || !strings.HasSuffix(gets(st, "message"), `strict decoding error: unknown field "spec.bogus"`) {
		t.Errorf("status %s", mustJSON(st))
	}
}

func TestDropFields(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.DropFields = []string{"spec.devices[].taints", "spec.devices[].bindingConditions"}
	})
	s := slice("s", "gpu.example.com", "node1")
	s["spec"].(map[string]any)["devices"] = []any{map[string]any{"name": "gpu-0",
		"taints":            []any{map[string]any{"key": "k", "effect": "NoSchedule"}},
		"bindingConditions": []any{"c"}, "bindingFailureConditions": []any{"f"}, "bindsToNode": true}}
	out := f.must(f.do("POST", slicesPath, s), 201)
	d := get(out, "spec", "devices", 0).(map[string]any)
	if d["taints"] != nil || d["bindingConditions"] != nil || d["bindingFailureConditions"] == nil {
		t.Fatalf("drop-fields: %s", mustJSON(d))
	}
	cfg := f.admin("/fake/config", map[string]any{"dropFields": []string{"spec.devices[].bindingFailureConditions"}})
	if gets(cfg, "dropFields", 0) != "spec.devices[].bindingFailureConditions" {
		t.Fatalf("config %s", mustJSON(cfg))
	}
	s["metadata"] = map[string]any{"name": "s2"}
	out = f.must(f.do("POST", slicesPath, s), 201)
	d = get(out, "spec", "devices", 0).(map[string]any)
	if d["taints"] == nil || d["bindingFailureConditions"] != nil {
		t.Fatalf("runtime drop-fields: %s", mustJSON(d))
	}
}

func TestValidation(t *testing.T) {
	f := newFixture(t)
	s := slice("Bad_Name", "gpu.example.com", "node1")
	s["spec"].(map[string]any)["devices"] = []any{map[string]any{"name": "gpu-0"}}
	st := statusOf(t, f.do("POST", slicesPath, s), 422, "Invalid")
	if gets(st, "details", "kind") != "ResourceSlice" || gets(st, "details", "causes", 0, "field") != "metadata.name" ||
		!strings.HasPrefix(gets(st, "message"), `ResourceSlice.resource.k8s.io "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`) {
		t.Errorf("status %s", mustJSON(st))
	}
	// Unknown fields: dropped with a Warning header each (default and
	// fieldValidation=Warn), silently (Ignore), or a 400 (Strict).
	s = slice("u", "gpu.example.com", "node1")
	s["spec"].(map[string]any)["devices"] = []any{map[string]any{"name": "gpu-0", "bogus": 1}}
	s["spec"].(map[string]any)["bogus2"] = "x"
	r := f.do("POST", slicesPath, s)
	if r.code != 201 || get(r.obj, "spec", "bogus2") != nil || get(r.obj, "spec", "devices", 0, "bogus") != nil ||
		strings.Join(r.header.Values("Warning"), "|") != `299 - "unknown field \"spec.bogus2\""|299 - "unknown field \"spec.devices[0].bogus\""` {
		t.Errorf("got %d %q %s", r.code, r.header.Values("Warning"), r.body)
	}
	s["metadata"] = map[string]any{"name": "u2"}
	if r := f.do("POST", slicesPath+"?fieldValidation=Ignore", s); r.code != 201 || len(r.header.Values("Warning")) != 0 {
		t.Errorf("Ignore: got %d %q", r.code, r.header.Values("Warning"))
	}
	s["metadata"] = map[string]any{"name": "u3"}
	st = statusOf(t, f.do("POST", slicesPath+"?fieldValidation=Strict", s), 400, "BadRequest")
	if gets(st, "message") != `ResourceSlice in version "v1" cannot be handled as a ResourceSlice: strict decoding error: unknown field "spec.bogus2", unknown field "spec.devices[0].bogus"` {
		t.Errorf("message %q", gets(st, "message"))
	}
	// A wrong type is a 400 decoding error; a missing required integer is
	// its zero value (then judged by the rules), a missing required string
	// "Required value".
	s = slice("s", "gpu.example.com", "node1")
	s["spec"].(map[string]any)["pool"] = map[string]any{"name": "p", "generation": "one", "resourceSliceCount": 1}
	statusOf(t, f.do("POST", slicesPath, s), 400, "BadRequest")
	s["spec"].(map[string]any)["pool"] = map[string]any{"name": "p"}
	s["spec"].(map[string]any)["devices"] = []any{map[string]any{}}
	st = statusOf(t, f.do("POST", slicesPath, s), 422, "Invalid")
	fields := map[string]string{}
	for _, c := range get(st, "details", "causes").([]any) {
		fields[gets(c, "field")] = gets(c, "message")
	}
	if fields["spec.pool.resourceSliceCount"] != "Invalid value: 0: must be greater than zero" || fields["spec.devices[0].name"] != "Required value" || len(fields) != 2 {
		t.Fatalf("causes %s", mustJSON(get(st, "details", "causes")))
	}
	// Server rules: empty driver, node selection.
	s = slice("s", "", "")
	st = statusOf(t, f.do("POST", slicesPath, s), 422, "Invalid")
	fields = map[string]string{}
	for _, c := range get(st, "details", "causes").([]any) {
		fields[gets(c, "field")] = gets(c, "message")
	}
	if fields["spec.driver"] != "Required value" || !strings.Contains(fields["spec"], "exactly one of") {
		t.Fatalf("causes %s", mustJSON(get(st, "details", "causes")))
	}
	// Too many devices.
	s = slice("s", "gpu.example.com", "node1")
	var devs []any
	for i := 0; i <= maxDevicesPerSlice; i++ {
		devs = append(devs, map[string]any{"name": fmt.Sprintf("d%d", i)})
	}
	s["spec"].(map[string]any)["devices"] = devs
	st = statusOf(t, f.do("POST", slicesPath, s), 422, "Invalid")
	if gets(st, "details", "causes", 0, "reason") != "FieldValueTooMany" {
		t.Fatalf("causes %s", mustJSON(get(st, "details", "causes")))
	}
	// Nodes have no schema: anything goes, but the name is checked.
	node := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "node1"}, "whatever": map[string]any{"x": 1}}
	f.must(f.do("POST", "/api/v1/nodes", node), 201)
	node["metadata"] = map[string]any{"name": "Node_1"}
	statusOf(t, f.do("POST", "/api/v1/nodes", node), 422, "Invalid")
	// Wrong apiVersion / kind, malformed JSON, wrong media type.
	s = slice("s", "gpu.example.com", "node1")
	s["apiVersion"] = "resource.k8s.io/v1beta1"
	statusOf(t, f.do("POST", slicesPath, s), 400, "BadRequest")
	statusOf(t, f.req("POST", slicesPath, adminToken, "application/json", "{"), 400, "BadRequest")
	statusOf(t, f.req("POST", slicesPath, adminToken, "application/yaml", "a: b"), 415, "UnsupportedMediaType")
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t)
	st := statusOf(t, f.req("GET", slicesPath, "", "", nil), 401, "Unauthorized")
	if gets(st, "message") != "Unauthorized" {
		t.Errorf("401 message %q", gets(st, "message"))
	}
	statusOf(t, f.req("GET", slicesPath, "bogus", "", nil), 401, "Unauthorized")
	f.must(f.req("GET", slicesPath, userToken, "", nil), 200)
	// Health and version need no credentials.
	for _, p := range []string{"/healthz", "/readyz", "/livez", "/version"} {
		if r := f.req("GET", p, "", "", nil); r.code != 200 {
			t.Errorf("%s: %d", p, r.code)
		}
	}
	// Client certificate: CN is the user.
	certClient := newClient(t, filepath.Join(f.dir, "certs"), true)
	resp, err := certClient.Get(f.s.URL + slicesPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("client cert: HTTP %d", resp.StatusCode)
	}
	req := f.admin("/fake/requests", nil)
	found := false
	for _, e := range get(req, "requests").([]any) {
		found = found || gets(e, "user") == "cert-user"
	}
	if !found {
		t.Errorf("client-cert request not attributed to cert-user: %s", mustJSON(req["requests"]))
	}
}

func TestAuthorization(t *testing.T) {
	f := newFixture(t)
	f.must(f.req("GET", slicesPath, roToken, "", nil), 200)
	st := statusOf(t, f.req("POST", slicesPath, roToken, "", slice("s", "gpu.example.com", "n")), 403, "Forbidden")
	want := `resourceslices.resource.k8s.io is forbidden: User "reader" cannot create resource "resourceslices" in API group "resource.k8s.io" at the cluster scope`
	if gets(st, "message") != want {
		t.Errorf("message %q", gets(st, "message"))
	}
	st = statusOf(t, f.req("GET", claimsPath+"/c", noToken, "", nil), 403, "Forbidden")
	want = `resourceclaims.resource.k8s.io "c" is forbidden: User "mallory" cannot get resource "resourceclaims" in API group "resource.k8s.io" in the namespace "default"`
	if gets(st, "message") != want {
		t.Errorf("message %q", gets(st, "message"))
	}
	st = statusOf(t, f.req("PUT", claimsPath+"/c/status", roToken, "", claim("c")), 403, "Forbidden")
	if !strings.Contains(gets(st, "message"), `cannot update resource "resourceclaims/status"`) {
		t.Errorf("message %q", gets(st, "message"))
	}
	st = statusOf(t, f.req("GET", "/api/v1/nodes", noToken, "", nil), 403, "Forbidden")
	if !strings.HasPrefix(gets(st, "message"), `nodes is forbidden: User "mallory" cannot list resource "nodes" in API group "" at the cluster scope`) {
		t.Errorf("message %q", gets(st, "message"))
	}
	// Admin endpoints need the admin token.
	statusOf(t, f.req("GET", "/fake/requests", userToken, "", nil), 403, "Forbidden")
	statusOf(t, f.req("GET", "/fake/requests", "", "", nil), 401, "Unauthorized")
	// Users can be changed at run time.
	f.admin("/fake/config", map[string]any{"readonlyUsers": []string{"alice"}})
	statusOf(t, f.req("POST", slicesPath, userToken, "", slice("s", "gpu.example.com", "n")), 403, "Forbidden")
}

// /version says the release a test configures (an older server's).
func TestVersionConfigurable(t *testing.T) {
	f := newFixture(t)
	version := func() string { return gets(f.req("GET", "/version", "", "", nil).obj, "gitVersion") }
	if got := version(); got != "v1.37.0-fakeapiserver" {
		t.Errorf("default gitVersion %q", got)
	}
	f.admin("/fake/config", map[string]any{"gitVersion": "v1.36.3"})
	if got := version(); got != "v1.36.3" {
		t.Errorf("configured gitVersion %q", got)
	}
}

func TestFaultInjectionCountersAndDelay(t *testing.T) {
	f := newFixture(t)
	f.must(f.do("POST", claimsPath, claim("c")), 201)
	f.admin("/fake/reset", map[string]any{})
	f.admin("/fake/fail", map[string]any{"verb": "GET", "resource": "resourceclaims", "count": 2, "status": 429, "retryAfterSeconds": 3})
	for i := 0; i < 2; i++ {
		r := f.do("GET", claimsPath+"/c", nil)
		st := statusOf(t, r, 429, "TooManyRequests")
		if r.header.Get("Retry-After") != "3" || gets(st, "details", "retryAfterSeconds") != "3" {
			t.Fatalf("Retry-After %q, status %s", r.header.Get("Retry-After"), r.body)
		}
	}
	f.must(f.do("GET", claimsPath+"/c", nil), 200)
	// Other verbs are not affected by a GET rule; a LIST rule hits lists only.
	f.admin("/fake/fail", map[string]any{"verb": "LIST", "resource": "resourceclaims", "count": 1, "status": 503})
	f.must(f.do("GET", claimsPath+"/c", nil), 200)
	statusOf(t, f.do("GET", claimsPath, nil), 503, "ServiceUnavailable")
	f.admin("/fake/fail", map[string]any{"verb": "update", "resource": "resourceclaims/status", "status": 500})
	statusOf(t, f.do("PUT", claimsPath+"/c/status", claim("c")), 500, "InternalError")

	counters := f.admin("/fake/requests", nil)
	counts := counters["counts"].(map[string]any)
	if gets(counts, "GET resourceclaims") != "4" || gets(counts, "LIST resourceclaims") != "1" || gets(counts, "UPDATE resourceclaims/status") != "1" {
		t.Fatalf("counts %s", mustJSON(counts))
	}
	if gets(counters, "total") != "6" || gets(counters, "bytesReceived") == "0" {
		t.Fatalf("counters %s", mustJSON(counters))
	}
	f.admin("/fake/reset", map[string]any{})
	counters = f.admin("/fake/requests", nil)
	if gets(counters, "total") != "0" || len(counters["counts"].(map[string]any)) != 0 {
		t.Fatalf("after reset %s", mustJSON(counters))
	}

	f.admin("/fake/delay", map[string]any{"milliseconds": 200})
	start := time.Now()
	f.must(f.do("GET", claimsPath+"/c", nil), 200)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("delayed request took %v", d)
	}
	f.admin("/fake/delay", map[string]any{"milliseconds": 0})
	statusOf(t, f.req("POST", "/fake/fail", adminToken, "", map[string]any{"status": 200}), 400, "BadRequest")
	statusOf(t, f.req("POST", "/fake/fail", adminToken, "", map[string]any{"status": 500, "typo": 1}), 400, "BadRequest")
}

// A held create is stored at once (a GET sees it) and answered only when
// released; a WATCH cannot be held.
func TestHoldResponses(t *testing.T) {
	f := newFixture(t)
	claimsPath := "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
	f.admin("/fake/hold", map[string]any{"verb": "CREATE", "resource": "resourceclaims"})
	created := make(chan response, 1)
	go func() { created <- f.do("POST", claimsPath, claim("c")) }()
	for gets(f.admin("/fake/requests", nil), "held") != "1" {
		time.Sleep(time.Millisecond)
	}
	f.must(f.do("GET", claimsPath+"/c", nil), 200)
	select {
	case r := <-created:
		t.Fatalf("a held response came: %d %s", r.code, r.body)
	default:
	}
	if got := gets(f.must(f.req("DELETE", "/fake/hold", adminToken, "", nil), 200), "released"); got != "1" {
		t.Fatalf("released %s", got)
	}
	if r := <-created; r.code != 201 || gets(r.obj, "metadata", "name") != "c" {
		t.Fatalf("create after release: %d %s", r.code, r.body)
	}
	// The rule was used up: the next create is answered at once.
	f.must(f.do("POST", claimsPath, claim("d")), 201)
	statusOf(t, f.req("POST", "/fake/hold", adminToken, "", map[string]any{"verb": "WATCH"}), 400, "BadRequest")
	statusOf(t, f.req("POST", "/fake/hold", adminToken, "", map[string]any{"resource": "resourceclaims"}), 400, "BadRequest")
}

func TestDiscovery(t *testing.T) {
	f := newFixture(t)
	apis := f.must(f.do("GET", "/apis", nil), 200)
	if gets(apis, "groups", 0, "name") != "resource.k8s.io" {
		t.Fatalf("/apis %s", mustJSON(apis))
	}
	rl := f.must(f.do("GET", "/apis/resource.k8s.io/v1", nil), 200)
	names := map[string]bool{}
	for _, r := range get(rl, "resources").([]any) {
		names[gets(r, "name")] = true
	}
	for _, n := range []string{"resourceslices", "resourceclaims", "resourceclaims/status", "deviceclasses"} {
		if !names[n] {
			t.Errorf("discovery lacks %s: %s", n, mustJSON(rl))
		}
	}
	f.must(f.do("GET", "/api", nil), 200)
	f.must(f.do("GET", "/api/v1", nil), 200)
	dc := map[string]any{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": map[string]any{"name": "gpu.example.com"},
		"spec": map[string]any{"selectors": []any{map[string]any{"cel": map[string]any{"expression": "true"}}}}}
	f.must(f.do("POST", "/apis/resource.k8s.io/v1/deviceclasses", dc), 201)
	f.must(f.do("GET", "/apis/resource.k8s.io/v1/deviceclasses/gpu.example.com", nil), 200)
	// All-namespace claim list.
	f.must(f.do("POST", claimsPath, claim("c")), 201)
	l := f.must(f.do("GET", "/apis/resource.k8s.io/v1/resourceclaims", nil), 200)
	if len(get(l, "items").([]any)) != 1 {
		t.Fatalf("all-namespace list %s", mustJSON(l))
	}
	statusOf(t, f.do("POST", "/apis/resource.k8s.io/v1/resourceclaims", claim("x")), 405, "MethodNotAllowed")
}

// TestMain lets the tests run the real main() in a child process.
func TestMain(m *testing.M) {
	if os.Getenv("FAKEAPISERVER_RUN_MAIN") == "1" {
		os.Args = append([]string{"fakeapiserver"}, strings.Fields(os.Getenv("FAKEAPISERVER_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestBinaryPortFileAndSIGTERM(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(adminToken+",admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	portFile := filepath.Join(dir, "port")
	args := fmt.Sprintf("--cert-dir %s --port-file %s --token-file %s --openapi %s --quiet",
		filepath.Join(dir, "certs"), portFile, tokens, openAPIPath(t))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAKEAPISERVER_RUN_MAIN=1", "FAKEAPISERVER_ARGS="+args)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var port int
	deadline := time.Now().Add(20 * time.Second)
	for port == 0 && time.Now().Before(deadline) {
		if b, err := os.ReadFile(portFile); err == nil {
			port, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if port == 0 {
		t.Fatalf("no port file; stderr: %s", stderr.String())
	}
	for _, name := range []string{"ca.crt", "client-ca.crt", "client.crt", "client.key"} {
		if _, err := os.Stat(filepath.Join(dir, "certs", name)); err != nil {
			t.Errorf("missing %s", name)
		}
	}
	client := newClient(t, filepath.Join(dir, "certs"), false)
	resp, err := client.Get(fmt.Sprintf("https://localhost:%d/readyz", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("readyz %d", resp.StatusCode)
	}
	// An open watch must not keep the server from stopping.
	r, _ := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d%s?watch=1", port, slicesPath), nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	wresp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer wresp.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("did not exit after SIGTERM; stderr: %s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func TestRequestErrorsLikeTheRealServer(t *testing.T) {
	f := newFixture(t)
	f.must(f.do("POST", slicesPath, slice("s", "gpu.example.com", "node1")), 201)
	// An unknown fieldValidation is a 422 on the request's options, before anything else.
	st := statusOf(t, f.req("PATCH", slicesPath+"/missing?fieldValidation=Bogus", adminToken, "application/merge-patch+json", `{}`), 422, "Invalid")
	if gets(st, "message") != `PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"` ||
		gets(st, "details", "kind") != "PatchOptions" {
		t.Errorf("status %s", mustJSON(st))
	}
	st = statusOf(t, f.do("POST", slicesPath+"?fieldValidation=Bogus", slice("s2", "gpu.example.com", "node1")), 422, "Invalid")
	if gets(st, "details", "kind") != "CreateOptions" {
		t.Errorf("status %s", mustJSON(st))
	}
	// Bodies that are not an object of the kind.
	for body, want := range map[string]string{
		"":  "the object provided is unrecognized (must be of type ResourceSlice): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)",
		"{": "the object provided is unrecognized (must be of type ResourceSlice): couldn't get version/kind; json parse error: unexpected end of JSON input ({)",
		`{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass"}`: `DeviceClass in version "v1" cannot be handled as a ResourceSlice: converting (v1.DeviceClass) to (resource.ResourceSlice): unknown conversion`,
		`{"apiVersion":"resource.k8s.io/v1","kind":"Foo"}`:         `Foo in version "v1" cannot be handled as a ResourceSlice: no kind "Foo" is registered for version "resource.k8s.io/v1" in scheme "pkg/runtime/scheme.go:111"`,
	} {
		st = statusOf(t, f.req("POST", slicesPath, adminToken, "application/json", body), 400, "BadRequest")
		if gets(st, "message") != want {
			t.Errorf("body %q: message %q, want %q", body, gets(st, "message"), want)
		}
	}
	st = statusOf(t, f.req("POST", slicesPath, adminToken, "text/plain", `{}`), 415, "UnsupportedMediaType")
	if !strings.HasSuffix(gets(st, "message"), "accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf") {
		t.Errorf("message %q", gets(st, "message"))
	}
	statusOf(t, f.req("PATCH", slicesPath+"/s", adminToken, "text/plain", `{}`), 415, "UnsupportedMediaType")
	statusOf(t, f.req("PATCH", slicesPath+"/missing", adminToken, "application/json-patch+json", `[1]`), 404, "NotFound")
	st = statusOf(t, f.req("PATCH", slicesPath+"/s", adminToken, "application/json-patch+json", `[1]`), 400, "BadRequest")
	if gets(st, "message") != "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp" {
		t.Errorf("message %q", gets(st, "message"))
	}
	st = statusOf(t, f.req("PATCH", slicesPath+"/s", adminToken, "application/merge-patch+json", `{`), 400, "BadRequest")
	if gets(st, "message") != "invalid JSON patch" {
		t.Errorf("message %q", gets(st, "message"))
	}
	// limit: a negative one is none, a malformed one strconv's error.
	if list := f.must(f.do("GET", slicesPath+"?limit=-1", nil), 200); len(get(list, "items").([]any)) != 1 {
		t.Errorf("limit=-1: %s", mustJSON(list))
	}
	st = statusOf(t, f.do("GET", slicesPath+"?limit=abc", nil), 400, "BadRequest")
	if gets(st, "message") != `strconv.ParseInt: parsing "abc": invalid syntax` {
		t.Errorf("message %q", gets(st, "message"))
	}
	// Unsupported field selectors, in each resource's wording.
	for path, want := range map[string]string{
		slicesPath + "?fieldSelector=spec.foo%3Dx": "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.foo",
		claimsPath + "?fieldSelector=spec.foo%3Dx": `"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"`,
		"/api/v1/nodes?fieldSelector=spec.foo%3Dx": "field label not supported: spec.foo",
	} {
		st = statusOf(t, f.do("GET", path, nil), 400, "BadRequest")
		if gets(st, "message") != want {
			t.Errorf("%s: message %q, want %q", path, gets(st, "message"), want)
		}
	}
}

func TestWatchListDefaultsAndListOptions(t *testing.T) {
	f := newFixture(t)
	f.must(f.do("POST", slicesPath, slice("a", "gpu.example.com", "node1")), 201)
	// A watch from "" or "0" with bookmarks ends its initial events with the
	// initial-events-end bookmark, as the real server (WatchList) does.
	for _, rv := range []string{"", "&resourceVersion=0"} {
		w := f.watch(slicesPath + "?watch=1&allowWatchBookmarks=true" + rv)
		w.expect("ADDED", "a")
		if bm := w.next(true); gets(bm, "object", "metadata", "annotations", "k8s.io/initial-events-end") != "true" {
			t.Errorf("rv %q: want the initial-events-end bookmark, got %s", rv, mustJSON(bm))
		}
	}
	// sendInitialEvents=false with NotOlderThan: from now, no initial events.
	w := f.watch(slicesPath + "?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	f.must(f.do("POST", slicesPath, slice("b", "gpu.example.com", "node1")), 201)
	w.expect("ADDED", "b")
	for query, want := range map[string]string{
		"?watch=1&sendInitialEvents=true":                              `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`,
		"?watch=1&resourceVersion=1&resourceVersionMatch=NotOlderThan": `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided`,
		"?sendInitialEvents=true":                                      `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list`,
		"?resourceVersionMatch=Exact":                                  `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`,
	} {
		st := statusOf(t, f.do("GET", slicesPath+query, nil), 422, "Invalid")
		if gets(st, "message") != want || gets(st, "details", "kind") != "ListOptions" {
			t.Errorf("%s: %s", query, mustJSON(st))
		}
	}
}

func TestWatchListGateOff(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.NoWatchList = true })
	st := statusOf(t, f.do("GET", slicesPath+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", nil), 422, "Invalid")
	if want := `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled`; gets(st, "message") != want {
		t.Errorf("message %q, want %q", gets(st, "message"), want)
	}
}

func TestDeviceRules(t *testing.T) {
	f := newFixture(t)
	s := slice("s", "gpu.example.com", "node1")
	spec := s["spec"].(map[string]any)
	spec["sharedCounters"] = []any{map[string]any{"name": "cs", "counters": map[string]any{"mem": map[string]any{"value": "1Gi"}}}}
	spec["devices"] = []any{
		map[string]any{"name": "d0", "attributes": map[string]any{"none": map[string]any{}, "two": map[string]any{"int": 1, "string": "x"}}},
		map[string]any{"name": "d1", "capacity": map[string]any{"mem": map[string]any{"value": "1Gi", "requestPolicy": map[string]any{"default": "1Gi"}}}},
	}
	st := statusOf(t, f.do("POST", slicesPath, s), 422, "Invalid")
	var got []string
	for _, c := range get(st, "details", "causes").([]any) {
		got = append(got, gets(c, "field")+": "+gets(c, "message"))
	}
	want := []string{
		"spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed",
		"spec.devices[1].capacity[mem].requestPolicy: Forbidden: allowMultipleAllocations must be true",
		"spec.devices[0].attributes[none]: Invalid value: \"\": must specify one of: " + attributeTypeList,
		"spec.devices[0].attributes[two]: Invalid value: \"{int, string}\": must specify exactly one of: " + attributeTypeList,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("causes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	delete(spec, "sharedCounters")
	spec["devices"] = []any{map[string]any{"name": "d0", "allowMultipleAllocations": true,
		"capacity": map[string]any{"mem": map[string]any{"value": "1Gi", "requestPolicy": map[string]any{"validValues": []any{"1Gi"}}}}}}
	st = statusOf(t, f.do("POST", slicesPath, s), 422, "Invalid")
	if gets(st, "details", "causes", 0, "field") != "spec.devices[0].capacity[mem].requestPolicy.default" ||
		gets(st, "details", "causes", 0, "message") != "Required value: required when validValues is defined" {
		t.Errorf("causes %s", mustJSON(get(st, "details", "causes")))
	}
}

func TestWatchListGzippedOneMemberPerFlush(t *testing.T) {
	f := newFixture(t)
	f.must(f.do("POST", slicesPath, slice("a", "gpu.example.com", "node1")), 201)
	req, err := http.NewRequest("GET", f.s.URL+slicesPath+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Accept-Encoding", "gzip") // set by hand: Go's transport then leaves the body as it came
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(zr)
	var added, bookmark map[string]any
	if err := dec.Decode(&added); err != nil || gets(added, "type") != "ADDED" {
		t.Fatalf("first event %v: %v", added, err)
	}
	f.must(f.do("POST", slicesPath, slice("b", "gpu.example.com", "node1")), 201) // a later flush: a member of its own
	for dec.Decode(&bookmark) == nil {
		if gets(bookmark, "type") == "ADDED" && gets(bookmark, "object", "metadata", "name") == "b" {
			return
		}
	}
	t.Fatal("no ADDED b after the initial events")
}
