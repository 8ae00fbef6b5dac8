// Command cri is the container runtime of the e2e suite's real kubelet: the
// fake CRI runtime and image service of k8s.io/cri-client, which creates no
// processes, with CDI devices injected on CreateContainer by the CDI library
// containerd and CRI-O use, and every container recorded in a JSON file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

type config struct {
	endpoint string   // the socket's path
	specDirs []string // CDI spec dirs, in increasing priority
	record   string   // the record file, "" for none
	httpAddr string   // where to serve GET /containers, "" for nowhere
}

type dirList []string

func (d *dirList) String() string     { return strings.Join(*d, ",") }
func (d *dirList) Set(v string) error { *d = append(*d, v); return nil }

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("cri", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.endpoint, "endpoint", "", "unix socket to serve the CRI on (path, or unix://path); its directory must exist")
	fs.Var((*dirList)(&cfg.specDirs), "cdi-spec-dir", "CDI spec directory, repeatable, later ones take precedence (default "+strings.Join(cdi.DefaultSpecDirs, ", ")+")")
	fs.StringVar(&cfg.record, "record", "", "JSON file to (re)write with every container seen")
	fs.StringVar(&cfg.httpAddr, "http", "", "also serve the record at GET http://ADDR/containers (e.g. 127.0.0.1:8099)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cri --endpoint PATH [--cdi-spec-dir DIR]... [--record FILE] [--http ADDR]")
		fmt.Fprintln(stderr, "A fake CRI runtime and image service for a kubelet, injecting CDI devices and recording containers.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err // fs printed it
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments: %q", fs.Args())
	case cfg.endpoint == "":
		err = errors.New("--endpoint is required")
	}
	if err != nil {
		fmt.Fprintf(stderr, "cri: %v (see cri -h)\n", err)
		return cfg, err
	}
	cfg.endpoint = strings.TrimPrefix(cfg.endpoint, "unix://")
	if len(cfg.specDirs) == 0 {
		cfg.specDirs = cdi.DefaultSpecDirs
	}
	return cfg, nil
}

func main() {
	log.SetPrefix("cri: ")
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then stops gracefully and removes the socket.
func run(ctx context.Context, cfg config) error {
	sock := cfg.endpoint
	if st, err := os.Stat(filepath.Dir(sock)); err != nil || !st.IsDir() {
		return fmt.Errorf("--endpoint %s: its directory does not exist", sock)
	}
	if st, err := os.Lstat(sock); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("--endpoint %s: exists and is not a socket", sock)
		}
		if err := os.Remove(sock); err != nil {
			return fmt.Errorf("removing the stale socket: %w", err)
		}
	}
	rec, err := newRecorder(cfg.record)
	if err != nil {
		return fmt.Errorf("--record %s: %w", cfg.record, err)
	}

	l, err := listenPrivate(sock)
	if err != nil {
		return err
	}
	defer os.Remove(sock)
	srv := newServer(cfg.specDirs, rec, filepath.Dir(sock))
	g := grpc.NewServer(grpc.ChainUnaryInterceptor(srv.intercept), grpc.ChainStreamInterceptor(srv.interceptStream))
	srv.register(g)
	served := make(chan error, 2)
	go func() { served <- g.Serve(l) }()

	if cfg.httpAddr != "" {
		hl, err := net.Listen("tcp", cfg.httpAddr)
		if err != nil {
			g.Stop()
			return fmt.Errorf("--http: %w", err)
		}
		hs := &http.Server{Handler: rec, ReadHeaderTimeout: 10 * time.Second}
		defer hs.Close()
		go func() { served <- hs.Serve(hl) }()
		log.Printf("record at http://%s/containers", hl.Addr())
	}
	log.Printf("serving the CRI on %s; CDI spec dirs %s; record %q", sock, strings.Join(cfg.specDirs, ", "), cfg.record)

	select {
	case <-ctx.Done():
	case err := <-served:
		g.Stop()
		return fmt.Errorf("serving: %w", err)
	}
	log.Print("stopping")
	close(srv.stopping)
	// GracefulStop waits for the calls in flight; do not let one hold us.
	t := time.AfterFunc(5*time.Second, g.Stop)
	defer t.Stop()
	g.GracefulStop()
	return nil
}

// listenPrivate binds a socket under a temporary name and renames it to sock
// once it has mode 0600, so that it never appears with other permissions.
func listenPrivate(sock string) (net.Listener, error) {
	tmp := sock + ".new"
	os.Remove(tmp)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false) // run removes sock itself
	if err = os.Chmod(tmp, 0o600); err == nil {
		err = os.Rename(tmp, sock)
	}
	if err != nil {
		l.Close()
		os.Remove(tmp)
		return nil, err
	}
	return l, nil
}
