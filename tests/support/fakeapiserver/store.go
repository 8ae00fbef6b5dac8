package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// record is one stored object and its field managers.
type record struct {
	obj      map[string]any // immutable once stored
	managers []*managerEntry
}

// event is one change, kept in a bounded history for watches and for
// consistent paging (lists at an older resourceVersion are rebuilt from it).
type event struct {
	rv   uint64
	ri   *resourceInfo
	key  string
	typ  string // ADDED, MODIFIED, DELETED
	obj  map[string]any
	prev map[string]any // state before the change (nil for ADDED)
}

// store is the fake etcd: every object, one global resourceVersion counter,
// the event history and the open watches. One mutex guards all of it.
type store struct {
	mu         sync.Mutex
	rv         uint64
	objects    map[*resourceInfo]map[string]*record
	history    []*event
	histLimit  int
	compactRev uint64 // events with rv <= compactRev may be gone
	watchers   map[*watcher]struct{}
}

func newStore(histLimit int) *store {
	if histLimit < 1 {
		histLimit = 1
	}
	st := &store{objects: map[*resourceInfo]map[string]*record{}, histLimit: histLimit,
		watchers: map[*watcher]struct{}{}}
	for _, ri := range allResources {
		st.objects[ri] = map[string]*record{}
	}
	return st
}

// nextRV allocates a resourceVersion. Caller holds mu.
func (st *store) nextRV() uint64 {
	st.rv++
	return st.rv
}

// record appends an event, trims the history and notifies watchers. Caller holds mu.
func (st *store) recordEvent(ev *event) {
	st.history = append(st.history, ev)
	if over := len(st.history) - st.histLimit; over > 0 {
		st.compactRev = st.history[over-1].rv
		st.history = append([]*event(nil), st.history[over:]...)
	}
	for w := range st.watchers {
		if w.filter.ri == ev.ri {
			if typ, obj, ok := w.eventFor(ev); ok {
				w.push(watchItem{typ: typ, obj: obj})
			}
		}
	}
}

// compact drops all history, so any watch or continue token from before now gets 410.
func (st *store) compact() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.history = nil
	st.compactRev = st.rv
	return st.rv
}

// snapshot returns the objects of ri as they were at resourceVersion at
// (0 = now) and the resourceVersion of that state. Caller holds mu.
func (st *store) snapshot(ri *resourceInfo, at uint64) (map[string]map[string]any, uint64, *apiError) {
	out := make(map[string]map[string]any, len(st.objects[ri]))
	for k, rec := range st.objects[ri] {
		out[k] = rec.obj
	}
	if at == 0 || at >= st.rv {
		return out, st.rv, nil
	}
	if at < st.compactRev {
		return nil, 0, errExpired(fmt.Sprintf("too old resource version: %d (%d)", at, st.compactRev))
	}
	for i := len(st.history) - 1; i >= 0 && st.history[i].rv > at; i-- {
		ev := st.history[i]
		if ev.ri != ri {
			continue
		}
		if ev.prev == nil {
			delete(out, ev.key)
		} else {
			out[ev.key] = ev.prev
		}
	}
	return out, at, nil
}

func sortedKeys(m map[string]map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// continueToken mirrors the apiserver's: base64 of {"v","rv","start"}.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion uint64 `json:"rv"`
	StartKey        string `json:"start"`
}

func encodeContinue(rv uint64, lastKey string) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rv, StartKey: "/" + lastKey + "\x00"})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, fmt.Errorf("continue key is not valid: %v", err)
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("continue key is not valid: %v", err)
	}
	if t.APIVersion != "meta.k8s.io/v1" || t.ResourceVersion == 0 {
		return t, fmt.Errorf("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	// Like the real server's key relative to the resource prefix: "/name" or "/namespace/name".
	t.StartKey = strings.TrimPrefix(t.StartKey, "/")
	return t, nil
}

func objRV(obj map[string]any) string { return str(child(obj, "metadata"), "resourceVersion") }

func parseRV(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid resource version %q", s)
	}
	return v, nil
}
