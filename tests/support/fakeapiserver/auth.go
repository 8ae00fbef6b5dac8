package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// tokenFile is the parsed --token-file: lines "token,user[,uid[,groups]]"
// (the kube-apiserver static token file format; extra columns are ignored).
// The first token is the admin token for the /fake/ endpoints.
type tokenFile struct {
	users      map[string]string // token -> user
	adminToken string
}

func loadTokenFile(path string) (*tokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tf := &tokenFile{users: map[string]string{}}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		parts := strings.Split(text, ",")
		if len(parts) < 2 || strings.TrimSpace(parts[0]) == "" || strings.TrimSpace(parts[1]) == "" {
			return nil, fmt.Errorf("%s:%d: want \"token,user\"", path, line)
		}
		tok, user := strings.TrimSpace(parts[0]), strings.Trim(strings.TrimSpace(parts[1]), `"`)
		if tf.adminToken == "" {
			tf.adminToken = tok
		}
		tf.users[tok] = user
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if tf.adminToken == "" {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return tf, nil
}

func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:]), true
	}
	return "", false
}

// authenticate returns the user of a request: a verified client certificate
// (CN) first, then a bearer token.
func (s *Server) authenticate(r *http.Request) (string, bool) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		if cn := r.TLS.VerifiedChains[0][0].Subject.CommonName; cn != "" {
			return cn, true
		}
	}
	if tok, ok := bearerToken(r); ok {
		if user, ok := s.tokens.users[tok]; ok {
			return user, true
		}
	}
	return "", false
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// authorize applies --forbidden-users (403 on everything) and
// --readonly-users (403 on writes), with the real server's message.
func (s *Server) authorize(user, verb string, pp *parsedPath, path string) *apiError {
	forbidden, readonly := s.admin.userLists()
	if !forbidden[user] && !(readonly[user] && writeVerbs[verb]) {
		return nil
	}
	if pp == nil || pp.ri == nil {
		return &apiError{Code: 403, Reason: "Forbidden",
			Message: fmt.Sprintf("forbidden: User %q cannot %s path %q", user, verb, path), Details: &statusDetails{}}
	}
	resource := pp.ri.Resource
	if pp.subresource != "" {
		resource += "/" + pp.subresource
	}
	var why string
	if pp.namespace != "" {
		why = fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", user, verb, resource, pp.ri.Group, pp.namespace)
	} else {
		why = fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", user, verb, resource, pp.ri.Group)
	}
	msg := fmt.Sprintf("%s is forbidden: %s", pp.ri.Qualified(), why)
	if pp.name != "" {
		msg = fmt.Sprintf("%s %q is forbidden: %s", pp.ri.Qualified(), pp.name, why)
	}
	return &apiError{Code: 403, Reason: "Forbidden", Message: msg,
		Details: &statusDetails{Name: pp.name, Group: pp.ri.Group, Kind: pp.ri.Resource}}
}
