// kubeletpeer drives a DRA kubelet plugin with the kubelet's own code from
// k8s.io/kubernetes v1.37.2: the plugin manager (pkg/kubelet/pluginmanager:
// plugin watcher, reconciler, operation executor) discovers the driver's
// registration socket in a registry directory and runs the registration
// handshake (GetInfo, validation, NotifyRegistrationStatus) against the DRA
// plugin manager (pkg/kubelet/cm/dra/plugin), exactly as the kubelet does.
// Then the DRAPlugin the kubelet would use calls NodePrepareResources,
// NodeUnprepareResources and the health stream.
//
// Every step prints one JSON object on its own line to stdout; klog goes to
// stderr. The exit code is 0 when every step ran (per-claim errors in a
// response are data, not failures), 1 when a step failed (no registration in
// time, an RPC error), 2 for bad flags.
//
//	kubeletpeer --registry-dir DIR --driver NAME \
//	  --claim NS/NAME/UID [--claim ...] \
//	  [--steps register,prepare,prepare,health,unprepare] [--timeout 30s]
//
// Steps:
//
//	register   wait until the driver is registered (always first, implied)
//	prepare    NodePrepareResources for all --claim
//	unprepare  NodeUnprepareResources for all --claim
//	health     wait for the first message of the health stream the kubelet
//	           opened at registration (--health-wait), print it
//	sleep      sleep --sleep
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	draplugin "k8s.io/kubernetes/pkg/kubelet/cm/dra/plugin"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
)

type claimList []*drapbv1.Claim

func (c *claimList) String() string { return fmt.Sprint(*c) }
func (c *claimList) Set(v string) error {
	parts := strings.Split(v, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return fmt.Errorf("--claim %q: want NAMESPACE/NAME/UID", v)
	}
	*c = append(*c, &drapbv1.Claim{Namespace: parts[0], Name: parts[1], Uid: parts[2]})
	return nil
}

// out prints one JSON line; safe from several goroutines.
var outMu sync.Mutex

func out(fields map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	b, err := json.Marshal(fields)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"step": "internal", "error": err.Error()})
	}
	fmt.Fprintln(os.Stdout, string(b))
}

// protoJSON turns a protobuf message into a JSON value for out().
func protoJSON(m proto.Message) any {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return map[string]any{"marshal_error": err.Error()}
	}
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

// recordingHandler wraps the kubelet's DRA plugin manager and records what
// the plugin manager's registration handshake passed to it.
type recordingHandler struct {
	*draplugin.DRAPluginManager
	start      time.Time
	mu         sync.Mutex
	registered chan struct{}
	once       sync.Once
	driver     string
	endpoint   string
	versions   []string
}

func (h *recordingHandler) ValidatePlugin(ctx context.Context, name, endpoint string, versions []string) error {
	err := h.DRAPluginManager.ValidatePlugin(ctx, name, endpoint, versions)
	ev := map[string]any{"step": "validate", "driver": name, "endpoint": endpoint, "versions": versions,
		"elapsed_ms": msSince(h.start)}
	if err != nil {
		ev["error"] = err.Error()
	}
	out(ev)
	return err
}

func (h *recordingHandler) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string, timeout *time.Duration) error {
	err := h.DRAPluginManager.RegisterPlugin(ctx, name, endpoint, versions, timeout)
	if err == nil {
		h.mu.Lock()
		h.driver, h.endpoint, h.versions = name, endpoint, versions
		h.mu.Unlock()
		h.once.Do(func() { close(h.registered) })
	} else {
		out(map[string]any{"step": "register", "driver": name, "endpoint": endpoint, "error": err.Error()})
	}
	return err
}

func (h *recordingHandler) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	out(map[string]any{"step": "deregister", "driver": name, "endpoint": endpoint, "elapsed_ms": msSince(h.start)})
	h.DRAPluginManager.DeRegisterPlugin(ctx, name, endpoint)
}

var _ cache.PluginHandler = &recordingHandler{}

// healthHandler is the kubelet's StreamHandler role: it receives the health
// stream the DRA plugin manager opens at registration.
type healthHandler struct {
	messages chan *drahealthv1.NodeWatchResourcesResponse
}

func (h *healthHandler) HandleWatchResourcesStream(ctx context.Context, stream drahealthv1.DRAResourceHealth_NodeWatchResourcesClient, driver string) error {
	for {
		msg, err := stream.Recv()
		if err != nil {
			return err
		}
		select {
		case h.messages <- msg:
		default: // nobody is waiting: drop
		}
	}
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func main() {
	registryDir := flag.String("registry-dir", "", "the kubelet's plugins_registry directory to watch (required)")
	driver := flag.String("driver", "", "the DRA driver name to wait for (required)")
	var claims claimList
	flag.Var(&claims, "claim", "NAMESPACE/NAME/UID of a claim to prepare/unprepare (repeatable)")
	stepsFlag := flag.String("steps", "register,prepare,unprepare", "comma-separated steps")
	timeout := flag.Duration("timeout", 30*time.Second, "how long to wait for registration")
	healthWait := flag.Duration("health-wait", 10*time.Second, "how long the health step waits for a message")
	sleep := flag.Duration("sleep", time.Second, "duration of the sleep step")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	verbosity := flag.String("v", "0", "klog verbosity (stderr)")
	flag.Parse()
	_ = klogFlags.Set("v", *verbosity)
	_ = klogFlags.Set("logtostderr", "true")
	if *registryDir == "" || *driver == "" {
		fmt.Fprintln(os.Stderr, "kubeletpeer: --registry-dir and --driver are required")
		os.Exit(2)
	}
	steps := strings.Split(*stepsFlag, ",")
	for _, s := range steps {
		switch s {
		case "register", "prepare", "unprepare", "health", "sleep":
		default:
			fmt.Fprintf(os.Stderr, "kubeletpeer: unknown step %q\n", s)
			os.Exit(2)
		}
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	start := time.Now()

	health := &healthHandler{messages: make(chan *drahealthv1.NodeWatchResourcesResponse, 1)}
	// No kube client: the kubelet uses it only to wipe this node's
	// ResourceSlices when a driver goes away, which a peer must not do.
	draManager := draplugin.NewDRAPluginManager(ctx, nil, nil, health, 30*time.Second)
	defer draManager.Stop()
	handler := &recordingHandler{DRAPluginManager: draManager, start: start, registered: make(chan struct{})}

	pm := pluginmanager.NewPluginManager(*registryDir, record.NewFakeRecorder(100))
	pm.AddHandler(registerapi.DRAPlugin, handler)
	stopCh := make(chan struct{})
	var pmDone sync.WaitGroup
	pmDone.Add(1)
	go func() {
		defer pmDone.Done()
		pm.Run(ctx, config.NewSourcesReady(func(sets.Set[string]) bool { return true }), stopCh)
	}()
	defer func() { close(stopCh); pmDone.Wait() }()

	failed := false
	fail := func(step string, err error) {
		failed = true
		out(map[string]any{"step": step, "error": err.Error(), "elapsed_ms": msSince(start)})
	}

	// register: the plugin manager finds the socket and registers it.
	var plugin *draplugin.DRAPlugin
	select {
	case <-handler.registered:
	case <-time.After(*timeout):
		fail("register", fmt.Errorf("driver %s did not register within %v (registry dir %s)", *driver, *timeout, *registryDir))
	case <-ctx.Done():
		fail("register", ctx.Err())
	}
	if !failed {
		handler.mu.Lock()
		name, endpoint, versions := handler.driver, handler.endpoint, handler.versions
		handler.mu.Unlock()
		if name != *driver {
			fail("register", fmt.Errorf("registered driver %q, want %q", name, *driver))
		} else {
			p, err := draManager.GetPlugin(*driver)
			if err != nil {
				fail("register", err)
			} else {
				plugin = p
				out(map[string]any{"step": "register", "driver": name, "endpoint": endpoint, "versions": versions,
					"elapsed_ms": msSince(start)})
			}
		}
	}

	for _, step := range steps {
		if failed || plugin == nil {
			break
		}
		t := time.Now()
		switch step {
		case "register":
		case "prepare":
			resp, err := plugin.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claims})
			if err != nil {
				fail(step, err)
				continue
			}
			out(map[string]any{"step": step, "response": protoJSON(resp), "rpc_ms": msSince(t)})
		case "unprepare":
			resp, err := plugin.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: claims})
			if err != nil {
				fail(step, err)
				continue
			}
			out(map[string]any{"step": step, "response": protoJSON(resp), "rpc_ms": msSince(t)})
		case "health":
			select {
			case msg := <-health.messages:
				out(map[string]any{"step": step, "response": protoJSON(msg), "wait_ms": msSince(t)})
			case <-time.After(*healthWait):
				fail(step, errors.New("no health stream message within "+healthWait.String()))
			case <-ctx.Done():
				fail(step, ctx.Err())
			}
		case "sleep":
			select {
			case <-time.After(*sleep):
			case <-ctx.Done():
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}
