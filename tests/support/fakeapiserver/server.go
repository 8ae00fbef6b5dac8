package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is the fake's configuration; main fills it from flags.
type Config struct {
	CertDir          string        // where ca.crt, client.crt, ... are written (required)
	PortFile         string        // where the chosen port is written ("" = don't)
	TokenFile        string        // "token,user" lines; the first is the admin token (required)
	OpenAPIPath      string        // OpenAPI v3 document for resource.k8s.io/v1 ("" = no schema validation)
	ReadonlyUsers    []string      // 403 on writes
	ForbiddenUsers   []string      // 403 on everything
	History          int           // events kept for watch resumption and paging (default 1000)
	BookmarkInterval time.Duration // for allowWatchBookmarks (default 1s)
	NoWatchList      bool          // the WatchList feature gate off, as before 1.34: sendInitialEvents refused
	DropFields       []string      // e.g. spec.devices[].taints
	ClientCertUser   string        // CN of the generated client certificate (default "cert-user")
	Address          string        // listen address (default 127.0.0.1:0)
	LogRequests      bool          // one stderr line per request
	Logger           *log.Logger   // default: stderr
}

// Server is a running fake API server.
type Server struct {
	cfg      Config
	st       *store
	schema   *openAPI
	tokens   *tokenFile
	admin    *adminState
	httpSrv  *http.Server
	ln       net.Listener
	stopping chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	logger   *log.Logger

	Port int
	URL  string
}

const maxRequestBody = 3 * 1024 * 1024 // the real server's limit for JSON bodies

// Start generates certificates, listens, serves, and writes the port file.
func Start(cfg Config) (*Server, error) {
	if cfg.CertDir == "" {
		return nil, errors.New("--cert-dir is required")
	}
	if cfg.TokenFile == "" {
		return nil, errors.New("--token-file is required")
	}
	if cfg.History <= 0 {
		cfg.History = 1000
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = time.Second
	}
	if cfg.ClientCertUser == "" {
		cfg.ClientCertUser = "cert-user"
	}
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = log.New(os.Stderr, "fakeapiserver: ", log.LstdFlags|log.Lmicroseconds)
	}
	s := &Server{cfg: cfg, st: newStore(cfg.History), stopping: make(chan struct{}), done: make(chan struct{}), logger: cfg.Logger}
	var err error
	if s.tokens, err = loadTokenFile(cfg.TokenFile); err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if cfg.OpenAPIPath != "" {
		if s.schema, err = loadOpenAPI(cfg.OpenAPIPath); err != nil {
			return nil, fmt.Errorf("openapi: %w", err)
		}
	} else {
		s.logger.Printf("no --openapi given: request bodies are not validated against a schema")
	}
	if s.admin, err = newAdminState(cfg.DropFields, cfg.ReadonlyUsers, cfg.ForbiddenUsers); err != nil {
		return nil, fmt.Errorf("drop fields: %w", err)
	}
	certs, err := generateCerts(cfg.CertDir, cfg.ClientCertUser)
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	s.ln, err = net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, err
	}
	s.Port = s.ln.Addr().(*net.TCPAddr).Port
	host, _, _ := net.SplitHostPort(cfg.Address)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	s.URL = "https://" + net.JoinHostPort(host, strconv.Itoa(s.Port))
	s.httpSrv = &http.Server{
		Handler: s,
		TLSConfig: &tls.Config{
			// The first whose names match the client's SNI; the first when none does.
			Certificates: []tls.Certificate{certs.serving, certs.expired},
			ClientAuth:   tls.VerifyClientCertIfGiven,
			ClientCAs:    certs.clientCAs,
			MinVersion:   tls.VersionTLS12,
		},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, state http.ConnState) {
			if state == http.StateNew {
				s.admin.countConnection()
			}
		},
	}
	go func() {
		defer close(s.done)
		if err := s.httpSrv.ServeTLS(s.ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Printf("serve: %v", err)
		}
	}()
	if cfg.PortFile != "" {
		if err := writeFileAtomic(cfg.PortFile, []byte(strconv.Itoa(s.Port)+"\n"), 0o644); err != nil {
			s.Close()
			return nil, fmt.Errorf("port file: %w", err)
		}
	}
	s.logger.Printf("serving on %s (certs in %s, %d tokens, history %d, bookmarks every %v)",
		s.URL, cfg.CertDir, len(s.tokens.users), cfg.History, cfg.BookmarkInterval)
	return s, nil
}

// Close ends open watches and stops the server.
func (s *Server) Close() error {
	s.stopOnce.Do(func() { close(s.stopping) })
	// A short grace period: HTTP/2 connections otherwise hold Shutdown for a
	// second waiting for the client to answer GOAWAY, and nothing in flight
	// matters to a test fixture that is going away.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := s.httpSrv.Shutdown(ctx)
	if err != nil {
		err = s.httpSrv.Close()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	<-s.done
	return err
}

func (s *Server) bookmarkInterval() time.Duration { return s.cfg.BookmarkInterval }

// AdminToken is the first token of the token file.
func (s *Server) AdminToken() string { return s.tokens.adminToken }

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	user := ""
	defer func() {
		if s.cfg.LogRequests {
			s.logger.Printf("%s %s %d user=%q %v", r.Method, r.URL.RequestURI(), rw.code, user, time.Since(start).Round(time.Microsecond))
		}
	}()
	path := r.URL.Path
	switch {
	case path == "/healthz" || path == "/readyz" || path == "/livez":
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(rw, "ok")
		return
	case path == "/version":
		writeJSON(rw, http.StatusOK, map[string]any{"major": "1", "minor": "37", "gitVersion": s.admin.currentGitVersion(),
			"gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
			"buildDate": "2026-01-01T00:00:00Z", "goVersion": runtime.Version(), "compiler": runtime.Compiler,
			"platform": runtime.GOOS + "/" + runtime.GOARCH})
		return
	case strings.HasPrefix(path, "/fake/"):
		s.serveAdmin(rw, r)
		return
	}

	// Every API request is counted, including the ones that fail authentication.
	user, authenticated := s.authenticate(r)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		writeError(rw, errBadRequest("reading the request body: "+err.Error()))
		return
	}
	pp, isResource, perr := parseResourcePath(path)
	entry := &requestLogEntry{Path: path, Query: r.URL.RawQuery, User: user, Bytes: len(body)}
	defer func() { s.admin.setCode(entry, rw.code) }()
	if !isResource {
		entry.Verb = strings.ToUpper(r.Method)
		defer s.admin.record(entry)()
		if !authenticated {
			writeError(rw, errUnauthorized())
			return
		}
		if aerr := s.authorize(user, strings.ToLower(r.Method), nil, path); aerr != nil {
			writeError(rw, aerr)
			return
		}
		s.serveNonResource(rw, r, path)
		return
	}
	if perr != nil {
		entry.Verb = strings.ToUpper(r.Method)
		defer s.admin.record(entry)()
		if !authenticated {
			perr = errUnauthorized()
		}
		writeError(rw, perr)
		return
	}
	verb, aerr := requestVerb(r, pp)
	entry.Verb, entry.Resource, entry.Namespace, entry.Name = strings.ToUpper(verb), pp.ri.Resource, pp.namespace, pp.name
	if verb == "" {
		entry.Verb = strings.ToUpper(r.Method)
	}
	if pp.subresource != "" {
		entry.Resource += "/" + pp.subresource
	}
	defer s.admin.record(entry)()
	if !authenticated {
		writeError(rw, errUnauthorized())
		return
	}
	if aerr != nil {
		writeError(rw, aerr)
		return
	}
	if len(body) > maxRequestBody {
		writeError(rw, errTooLarge(maxRequestBody))
		return
	}
	if aerr := s.authorize(user, verb, &pp, path); aerr != nil {
		writeError(rw, aerr)
		return
	}
	if d := s.admin.currentDelay(); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if aerr := s.admin.takeFault(verb, pp.ri.Resource, pp.subresource); aerr != nil {
		writeError(rw, aerr)
		return
	}
	req := &apiRequest{pp: pp, verb: verb, user: user, body: body, r: r}
	if release := s.admin.takeHold(verb, pp.ri.Resource, pp.subresource); release != nil {
		held := &heldResponse{header: http.Header{}, code: http.StatusOK}
		s.serveAPI(held, req)
		s.admin.addHeld(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		s.admin.addHeld(-1)
		held.writeTo(rw)
		return
	}
	s.serveAPI(rw, req)
}

// heldResponse keeps a response until it may go (POST /fake/hold).
type heldResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header         { return h.header }
func (h *heldResponse) WriteHeader(code int)        { h.code = code }
func (h *heldResponse) Write(b []byte) (int, error) { return h.body.Write(b) }

func (h *heldResponse) writeTo(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	w.WriteHeader(h.code)
	_, _ = w.Write(h.body.Bytes())
}

// serveNonResource serves discovery and the OpenAPI document.
func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request, path string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, errMethodNotAllowed(nil))
		return
	}
	path = strings.TrimSuffix(path, "/")
	switch {
	case path == "/api":
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []any{map[string]any{"clientCIDR": "0.0.0.0/0", "serverAddress": strings.TrimPrefix(s.URL, "https://")}}})
	case path == "/api/v1":
		writeJSON(w, http.StatusOK, apiResourceList("", "v1"))
	case path == "/apis":
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": apiGroups()})
	case strings.HasPrefix(path, "/apis/") && strings.Count(path, "/") == 2:
		for _, g := range apiGroups() {
			if g["name"] == strings.TrimPrefix(path, "/apis/") {
				g["kind"], g["apiVersion"] = "APIGroup", "v1"
				writeJSON(w, http.StatusOK, g)
				return
			}
		}
		writeError(w, errPathNotFound())
	case strings.HasPrefix(path, "/apis/") && strings.Count(path, "/") == 3:
		parts := strings.Split(path, "/")
		list := apiResourceList(parts[2], parts[3])
		if res, _ := list["resources"].([]any); len(res) == 0 {
			writeError(w, errPathNotFound())
			return
		}
		writeJSON(w, http.StatusOK, list)
	case path == "/openapi/v3/apis/resource.k8s.io/v1" && s.cfg.OpenAPIPath != "":
		b, err := os.ReadFile(filepath.Clean(s.cfg.OpenAPIPath))
		if err != nil {
			writeError(w, errInternal(err.Error()))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
	default:
		writeError(w, errPathNotFound())
	}
}
