package main

import (
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

type watchItem struct {
	typ string // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
	obj map[string]any
}

// watcher is one open watch: a filter and an unbounded queue the store
// appends to (under the store lock, so the order is the commit order).
type watcher struct {
	filter *objectFilter
	mu     sync.Mutex
	queue  []watchItem
	notify chan struct{}
	closed chan struct{} // closed by /fake/closewatches
}

func newWatcher(f *objectFilter) *watcher {
	return &watcher{filter: f, notify: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (w *watcher) push(it watchItem) {
	w.mu.Lock()
	w.queue = append(w.queue, it)
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *watcher) drain() []watchItem {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queue
	w.queue = nil
	return q
}

// eventFor translates a store event for this watcher's filter the way the
// watch cache does: an object entering the selection is ADDED, one leaving
// it is DELETED.
func (w *watcher) eventFor(ev *event) (string, map[string]any, bool) {
	f := w.filter
	switch ev.typ {
	case "ADDED":
		if f.matches(ev.obj) {
			return "ADDED", ev.obj, true
		}
	case "MODIFIED":
		was, is := f.matches(ev.prev), f.matches(ev.obj)
		switch {
		case was && is:
			return "MODIFIED", ev.obj, true
		case is:
			return "ADDED", ev.obj, true
		case was:
			gone := copyObj(ev.prev)
			meta(gone)["resourceVersion"] = strconv.FormatUint(ev.rv, 10)
			return "DELETED", gone, true
		}
	case "DELETED":
		if f.matches(ev.obj) {
			return "DELETED", ev.obj, true
		}
	}
	return "", nil, false
}

func bookmarkObject(ri *resourceInfo, rv uint64, initialEnd bool) map[string]any {
	md := map[string]any{"resourceVersion": strconv.FormatUint(rv, 10)}
	if initialEnd {
		md["annotations"] = map[string]any{"k8s.io/initial-events-end": "true"}
	}
	return map[string]any{"kind": ri.Kind, "apiVersion": ri.GroupVersion(), "metadata": md}
}

type watchOptions struct {
	resourceVersion   string
	allowBookmarks    bool
	sendInitialEvents *bool
	timeout           time.Duration
}

// startWatch registers a watcher and queues the events it must see first:
// the current objects as ADDED (resourceVersion "" or "0", or
// sendInitialEvents=true), or the history after resourceVersion. A
// resourceVersion older than the retained history yields a 410 error.
func (st *store) startWatch(f *objectFilter, o watchOptions) (*watcher, *apiError) {
	st.mu.Lock()
	defer st.mu.Unlock()
	w := newWatcher(f)
	initial := o.resourceVersion == "" || o.resourceVersion == "0"
	if o.sendInitialEvents != nil {
		initial = *o.sendInitialEvents
	}
	if initial {
		objs, rv, _ := st.snapshot(f.ri, 0)
		for _, k := range sortedKeys(objs) {
			if f.matches(objs[k]) {
				w.push(watchItem{typ: "ADDED", obj: objs[k]})
			}
		}
		if o.sendInitialEvents != nil && *o.sendInitialEvents && o.allowBookmarks {
			w.push(watchItem{typ: "BOOKMARK", obj: bookmarkObject(f.ri, rv, true)})
		}
	} else if o.resourceVersion != "" && o.resourceVersion != "0" {
		from, err := parseRV(o.resourceVersion)
		if err != nil {
			return nil, errBadRequest(err.Error())
		}
		if from < st.compactRev {
			return nil, errExpired("too old resource version: " + o.resourceVersion + " (" + strconv.FormatUint(st.compactRev, 10) + ")")
		}
		for _, ev := range st.history {
			if ev.rv > from && ev.ri == f.ri {
				if typ, obj, ok := w.eventFor(ev); ok {
					w.push(watchItem{typ: typ, obj: obj})
				}
			}
		}
	}
	st.watchers[w] = struct{}{}
	return w, nil
}

func (st *store) stopWatch(w *watcher) {
	st.mu.Lock()
	delete(st.watchers, w)
	st.mu.Unlock()
}

// closeWatches ends every open watch stream, as an apiserver restart or a
// broken connection does; clients resume from their last resourceVersion.
func (st *store) closeWatches() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	for w := range st.watchers {
		close(w.closed)
	}
	n := len(st.watchers)
	st.watchers = map[*watcher]struct{}{}
	return n
}

func (st *store) queueBookmark(w *watcher) {
	st.mu.Lock()
	w.push(watchItem{typ: "BOOKMARK", obj: bookmarkObject(w.filter.ri, st.rv, false)})
	st.mu.Unlock()
}

// serveWatch streams watch events as newline-separated JSON objects.
func (s *Server) serveWatch(w http.ResponseWriter, req *apiRequest) {
	f, aerr := s.buildFilter(req)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	q := req.r.URL.Query()
	o := watchOptions{resourceVersion: q.Get("resourceVersion"), allowBookmarks: isTrue(q.Get("allowWatchBookmarks"))}
	if v := q.Get("sendInitialEvents"); v != "" {
		b := isTrue(v)
		o.sendInitialEvents = &b
	}
	if aerr := checkWatchListOptions(q, &o, !s.cfg.NoWatchList); aerr != nil {
		writeError(w, aerr)
		return
	}
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, errBadRequest("invalid timeoutSeconds "+strconv.Quote(v)))
			return
		}
		o.timeout = time.Duration(n) * time.Second
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	enc := json.NewEncoder(w)
	wt, aerr := s.st.startWatch(f, o)
	if aerr != nil {
		if aerr.Code != http.StatusGone {
			writeError(w, aerr)
			return
		}
		// Like the watch cache: the request succeeds, the stream carries one ERROR event.
		w.WriteHeader(http.StatusOK)
		_ = enc.Encode(map[string]any{"type": "ERROR", "object": aerr.statusObject()})
		if flusher != nil {
			flusher.Flush()
		}
		return
	}
	defer s.st.stopWatch(wt)
	// As kube-apiserver with WatchListCompression (beta, on in 1.37): a
	// watch-list stream is gzipped for a client that accepts it, one gzip
	// member per flush.
	gzipped := o.sendInitialEvents != nil && *o.sendInitialEvents && acceptsGzip(req.r)
	if gzipped {
		w.Header().Set("Content-Encoding", "gzip")
	}
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	var bookmarks <-chan time.Time
	if o.allowBookmarks {
		t := time.NewTicker(s.bookmarkInterval())
		defer t.Stop()
		bookmarks = t.C
	}
	var timeout <-chan time.Time
	if o.timeout > 0 {
		t := time.NewTimer(o.timeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case <-wt.notify:
			events := enc
			var member *gzip.Writer
			if gzipped {
				member = gzip.NewWriter(w)
				events = json.NewEncoder(member)
			}
			for _, it := range wt.drain() {
				if err := events.Encode(map[string]any{"type": it.typ, "object": it.obj}); err != nil {
					return
				}
			}
			// As the real server: a sync flush (the events decodable at once),
			// then the member's end.
			if member != nil && (member.Flush() != nil || member.Close() != nil) {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		case <-bookmarks:
			s.st.queueBookmark(wt)
		case <-timeout:
			return
		case <-wt.closed:
			return
		case <-req.r.Context().Done():
			return
		case <-s.stopping:
			return
		}
	}
}

// acceptsGzip: the request's Accept-Encoding names gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, coding := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(strings.SplitN(coding, ";", 2)[0]), "gzip") {
				return true
			}
		}
	}
	return false
}
