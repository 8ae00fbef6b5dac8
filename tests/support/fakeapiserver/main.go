// Command fakeapiserver is a local stand-in for kube-apiserver used by the
// dra-cpp integration tests. See README.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func main() {
	var cfg Config
	var readonly, forbidden, drop string
	var port int
	var host string
	var quiet, exitWithParent bool
	flag.StringVar(&cfg.CertDir, "cert-dir", "", "directory for ca.crt, server.{crt,key}, client-ca.crt, client.{crt,key} (required)")
	flag.StringVar(&cfg.PortFile, "port-file", "", "file to write the listening port to (written atomically once serving)")
	flag.StringVar(&cfg.TokenFile, "token-file", "", "bearer tokens, one \"token,user\" per line; the first is the admin token (required)")
	flag.StringVar(&cfg.OpenAPIPath, "openapi", "", "OpenAPI v3 document of resource.k8s.io/v1 used to validate request bodies")
	flag.StringVar(&readonly, "readonly-users", "", "comma-separated users that get 403 on writes")
	flag.StringVar(&forbidden, "forbidden-users", "", "comma-separated users that get 403 on every request")
	flag.IntVar(&cfg.History, "history", 1000, "number of events kept for watch resumption and consistent paging")
	flag.DurationVar(&cfg.BookmarkInterval, "bookmark-interval", time.Second, "interval between BOOKMARK events on watches with allowWatchBookmarks=true")
	watchList := flag.Bool("watch-list", true, "the WatchList feature (default on since 1.34); false refuses sendInitialEvents as a server with the gate off")
	flag.StringVar(&drop, "drop-fields", "", "comma-separated field paths removed before storing, e.g. spec.devices[].taints")
	flag.StringVar(&cfg.ClientCertUser, "client-cert-user", "cert-user", "CN (user name) of the generated client certificate")
	flag.StringVar(&host, "address", "127.0.0.1", "address to listen on")
	flag.IntVar(&port, "port", 0, "port to listen on (0: chosen by the kernel)")
	flag.BoolVar(&quiet, "quiet", false, "do not log every request")
	flag.BoolVar(&exitWithParent, "exit-with-parent", false, "exit when the parent process goes away (no orphans after a crashed test)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "fakeapiserver: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	cfg.ReadonlyUsers, cfg.ForbiddenUsers, cfg.DropFields = splitList(readonly), splitList(forbidden), splitList(drop)
	cfg.Address = fmt.Sprintf("%s:%d", host, port)
	if strings.Contains(host, ":") {
		cfg.Address = fmt.Sprintf("[%s]:%d", host, port)
	}
	cfg.LogRequests = !quiet
	cfg.NoWatchList = !*watchList

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	s, err := Start(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeapiserver: %v\n", err)
		os.Exit(1)
	}
	orphaned := make(chan struct{})
	if exitWithParent {
		go watchParent(os.Getppid(), orphaned)
	}
	select {
	case sig := <-sigs:
		s.logger.Printf("received %v, shutting down", sig)
	case <-orphaned:
		s.logger.Printf("parent process exited, shutting down")
	}
	if err := s.Close(); err != nil {
		s.logger.Printf("shutdown: %v", err)
	}
	s.logger.Printf("stopped")
}

// watchParent closes orphaned once the process is re-parented.
func watchParent(parent int, orphaned chan<- struct{}) {
	for os.Getppid() == parent {
		time.Sleep(200 * time.Millisecond)
	}
	close(orphaned)
}
