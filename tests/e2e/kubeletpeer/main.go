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
//	  [--steps register,prepare,prepare,health,unprepare] [--timeout 30s] \
//	  [-- DRIVER-COMMAND [ARG...]]
//
// Steps:
//
//	register   wait until the driver is registered (always first, implied)
//	prepare    NodePrepareResources for all --claim
//	unprepare  NodeUnprepareResources for all --claim
//	health     wait for the first message of the health stream the kubelet
//	           opened at registration (--health-wait), print it
//	sleep      sleep --sleep
//	bench      NodePrepareResources of one claim per call, closed loop, from
//	           --bench-concurrency goroutines sharing the kubelet's DRAPlugin
//	           client (one gRPC connection, as in the kubelet), for
//	           --bench-duration or --bench-calls after --bench-warmup; one
//	           line per concurrency level in the comma-separated list, with
//	           p50/p90/p99 latency (us), calls/s, count and errors. Claims:
//	           --bench-claims N (default/claim-<i>, UID
//	           00000000-0000-4000-8000-<i as 12 hex digits>) or the --claim
//	           list. Each goroutine uses its own share of the claims and
//	           unprepares its last --bench-unprepare-every prepared claims in
//	           one call (timed apart: unprepare_p50_us, unprepare_p99_us), so
//	           every prepare is of an unprepared claim (a checkpointing
//	           driver takes its real path) and unprepare costs stay small;
//	           with --bench-unprepare-every 1, each prepare and unprepare is
//	           one cycle. Errors count failed calls of either kind. With a
//	           driver pid, driver_{vmrss_kb,threads,fds}_{start,end}: its
//	           footprint when the timed run starts and ends.
//	rss        VmRSS, VmHWM, RssAnon, RssFile and Threads of the driver
//	           process (the spawned one, or --driver-pid) from /proc
//	serve      kubelet calls on request, while something else restarts the
//	           driver: one JSON command per stdin line, one answer each (see
//	           serve.go), until stdin ends
//
// Spawning the driver: with a command after "--" the peer starts the plugin
// watcher, then starts the driver itself and measures from just before the
// exec to the moment the kubelet's DRA handler accepted the registration
// (RegisterPlugin returned); the register line then has driver_pid,
// exec_to_validate_ms (GetInfo answered and validated) and
// exec_to_registered_ms. The kubelet's reconciler looks at the registry only
// every second (--reconcile-period, the kubelet's fixed 1 s by default); set
// it to 1ms to time the driver rather than that loop. The driver gets SIGTERM
// when the peer ends; its output goes to --driver-log (default: stderr).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	draplugin "k8s.io/kubernetes/pkg/kubelet/cm/dra/plugin"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/operationexecutor"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/pluginwatcher"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/reconciler"
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
	start        time.Time
	mu           sync.Mutex
	registered   chan struct{}
	once         sync.Once
	driver       string
	endpoint     string
	versions     []string
	validatedAt  time.Time // first ValidatePlugin call (GetInfo answered)
	registeredAt time.Time // RegisterPlugin returned success
}

func (h *recordingHandler) ValidatePlugin(ctx context.Context, name, endpoint string, versions []string) error {
	now := time.Now()
	h.mu.Lock()
	if h.validatedAt.IsZero() {
		h.validatedAt = now
	}
	h.mu.Unlock()
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
		now := time.Now()
		h.mu.Lock()
		h.driver, h.endpoint, h.versions = name, endpoint, versions
		if h.registeredAt.IsZero() {
			h.registeredAt = now
		}
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

func msBetween(from, to time.Time) float64 { return float64(to.Sub(from).Microseconds()) / 1000 }

// benchClaimUID is the UID of generated bench claim i; the same scheme as
// bench/gosdk and bench/trivial_driver.cc.
func benchClaimUID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012x", i) }

// percentile of sorted samples, nearest rank.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

type benchConfig struct {
	claims         []*drapbv1.Claim
	concurrency    int
	unprepareEvery int
}

// procCPUSeconds is utime+stime of a process (all its threads, also those
// that ended) from /proc/PID/stat, in clock ticks of 1/100 s (USER_HZ, 100
// on every Linux architecture Kubernetes runs on).
func procCPUSeconds(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b)[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseFloat(f[11], 64) // field 14
	stime, err2 := strconv.ParseFloat(f[12], 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (utime + stime) / 100, true
}

// procContextSwitches sums voluntary and involuntary context switches over
// the live threads of a process (/proc/PID/task/*/status); threads that ended
// in between are not counted.
func procContextSwitches(pid int) (int64, bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, false
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				total += n
			}
		}
	}
	return total, true
}

// selfCPUSeconds is the peer's own user+system CPU time.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// runBench runs the closed loop once. record=false is the warm-up. With a
// driver pid, the driver's and the peer's CPU time per timed call are added.
func runBench(ctx context.Context, plugin *draplugin.DRAPlugin, cfg benchConfig, duration time.Duration, calls int, record bool, driverPid int) map[string]any {
	c := cfg.concurrency
	var errCount atomic.Int64
	var firstErr atomic.Value
	noteErr := func(err error) {
		errCount.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	samples := make([][]float64, c)
	unprepareSamples := make([][]float64, c)
	driverStart := driverFootprint(driverPid)
	driverCPU0, haveDriverCPU := procCPUSeconds(driverPid)
	driverCS0, _ := procContextSwitches(driverPid)
	selfCPU0 := selfCPUSeconds()
	deadline := time.Now().Add(duration)
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < c; g++ {
		// Goroutine g's claims: every c-th one from g (all of them when there
		// are fewer claims than goroutines).
		var own []*drapbv1.Claim
		if len(cfg.claims) >= c {
			for i := g; i < len(cfg.claims); i += c {
				own = append(own, cfg.claims[i])
			}
		} else {
			own = cfg.claims
		}
		perCaller := 0
		if calls > 0 {
			perCaller = calls / c
			if g < calls%c {
				perCaller++
			}
		}
		batch := min(cfg.unprepareEvery, len(own))
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			local := make([]float64, 0, 4096)
			var localUnprepare []float64
			var pending []*drapbv1.Claim
			flush := func() {
				if len(pending) == 0 {
					return
				}
				t := time.Now()
				resp, err := plugin.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: pending})
				if record {
					localUnprepare = append(localUnprepare, float64(time.Since(t).Nanoseconds())/1000)
				}
				if err != nil {
					noteErr(fmt.Errorf("unprepare: %w", err))
				} else {
					for _, cl := range pending {
						if r, ok := resp.Claims[cl.Uid]; !ok || r.Error != "" {
							noteErr(fmt.Errorf("unprepare %s: %v", cl.Uid, r))
						}
					}
				}
				pending = pending[:0]
			}
			next := 0
			for n := 0; ; n++ {
				if calls > 0 {
					if n >= perCaller {
						break
					}
				} else if time.Now().After(deadline) {
					break
				}
				if ctx.Err() != nil {
					break
				}
				claim := own[next]
				next = (next + 1) % len(own)
				req := &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{claim}}
				t := time.Now()
				resp, err := plugin.NodePrepareResources(ctx, req)
				took := time.Since(t)
				if record {
					local = append(local, float64(took.Nanoseconds())/1000)
				}
				switch {
				case err != nil:
					noteErr(err)
				default:
					if r, ok := resp.Claims[claim.Uid]; !ok || !preparedOK(r) {
						noteErr(fmt.Errorf("claim %s: unexpected answer %v", claim.Uid, r))
					}
				}
				pending = append(pending, claim)
				if len(pending) >= batch {
					flush()
				}
			}
			flush()
			samples[g] = local
			unprepareSamples[g] = localUnprepare
		}(g)
	}
	wg.Wait()
	driverEnd := driverFootprint(driverPid)
	wall := time.Since(start)
	selfCPU := selfCPUSeconds() - selfCPU0
	driverCPU1, haveDriverCPU1 := procCPUSeconds(driverPid)
	driverCS1, _ := procContextSwitches(driverPid)
	var all, allUnprepare []float64
	for g := range samples {
		all = append(all, samples[g]...)
		allUnprepare = append(allUnprepare, unprepareSamples[g]...)
	}
	sort.Float64s(all)
	sort.Float64s(allUnprepare)
	mean := 0.0
	for _, v := range all {
		mean += v
	}
	if len(all) > 0 {
		mean /= float64(len(all))
	}
	ev := map[string]any{
		"step": "bench", "concurrency": c, "count": len(all), "errors": errCount.Load(),
		"p50_us": math.Round(percentile(all, 0.50)*10) / 10, "p90_us": math.Round(percentile(all, 0.90)*10) / 10,
		"p99_us": math.Round(percentile(all, 0.99)*10) / 10, "mean_us": math.Round(mean*10) / 10,
		"calls_per_s": math.Round(float64(len(all))/wall.Seconds()*10) / 10, "wall_s": math.Round(wall.Seconds()*1000) / 1000,
		"claims": len(cfg.claims), "unprepare_every": cfg.unprepareEvery,
		"unprepare_count": len(allUnprepare), "unprepare_p50_us": math.Round(percentile(allUnprepare, 0.50)*10) / 10,
		"unprepare_p99_us": math.Round(percentile(allUnprepare, 0.99)*10) / 10,
	}
	for k, v := range driverStart {
		ev["driver_"+k+"_start"] = v
	}
	for k, v := range driverEnd {
		ev["driver_"+k+"_end"] = v
	}
	if len(all) > 0 {
		// Includes the untimed unprepare calls (one per unprepare_every prepares).
		ev["peer_cpu_us_per_call"] = math.Round(selfCPU/float64(len(all))*1e6*10) / 10
		if driverPid > 0 && haveDriverCPU && haveDriverCPU1 {
			ev["driver_cpu_us_per_call"] = math.Round((driverCPU1-driverCPU0)/float64(len(all))*1e6*10) / 10
			ev["driver_ctxsw_per_call"] = math.Round(float64(driverCS1-driverCS0)/float64(len(all))*100) / 100
		}
	}
	if e := firstErr.Load(); e != nil {
		ev["first_error"] = e
	}
	return ev
}

// preparedOK: no error, and at least one device, each with a CDI ID.
func preparedOK(r *drapbv1.NodePrepareResourceResponse) bool {
	if r == nil || r.Error != "" || len(r.Devices) == 0 {
		return false
	}
	for _, d := range r.Devices {
		if len(d.CdiDeviceIds) == 0 {
			return false
		}
	}
	return true
}

// driverFootprint is the driver's VmRSS (kB), threads and open files now;
// empty without a readable driver pid.
func driverFootprint(pid int) map[string]int64 {
	if pid <= 0 {
		return nil
	}
	status, err := procStatus(pid)
	fds, fdErr := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil || fdErr != nil {
		return nil
	}
	fp := map[string]int64{"fds": int64(len(fds))}
	for _, k := range []string{"vmrss_kb", "threads"} {
		if v, ok := status[k].(int64); ok {
			fp[k] = v
		}
	}
	return fp
}

// procStatus reads the memory lines of /proc/PID/status.
func procStatus(pid int) (map[string]any, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ev := map[string]any{"step": "rss", "pid": pid}
	keys := map[string]string{"VmRSS": "vmrss_kb", "VmHWM": "vmhwm_kb", "RssAnon": "rssanon_kb", "RssFile": "rssfile_kb",
		"RssShmem": "rssshmem_kb", "Threads": "threads"}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if name, want := keys[k]; ok && want {
			fields := strings.Fields(v)
			if len(fields) > 0 {
				if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					ev[name] = n
				}
			}
		}
	}
	return ev, sc.Err()
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "decode-metadata" {
		os.Exit(decodeMetadata(os.Args[2]))
	}
	registryDir := flag.String("registry-dir", "", "the kubelet's plugins_registry directory to watch (required)")
	driver := flag.String("driver", "", "the DRA driver name to wait for (required)")
	var claims claimList
	flag.Var(&claims, "claim", "NAMESPACE/NAME/UID of a claim to prepare/unprepare (repeatable)")
	stepsFlag := flag.String("steps", "register,prepare,unprepare", "comma-separated steps")
	timeout := flag.Duration("timeout", 30*time.Second, "how long to wait for registration")
	healthWait := flag.Duration("health-wait", 10*time.Second, "how long the health step waits for a message")
	sleep := flag.Duration("sleep", time.Second, "duration of the sleep step")
	reconcilePeriod := flag.Duration("reconcile-period", time.Second, "the plugin manager's reconciler loop period (the kubelet's is 1s)")
	benchClaims := flag.Int("bench-claims", 0, "bench: generate N claims default/claim-<i> (0: use the --claim list)")
	benchConcurrency := flag.String("bench-concurrency", "1", "bench: comma-separated numbers of concurrent callers, one result line each")
	benchDuration := flag.Duration("bench-duration", 5*time.Second, "bench: timed run length per concurrency level")
	benchCalls := flag.Int("bench-calls", 0, "bench: total timed calls per concurrency level instead of --bench-duration")
	benchWarmup := flag.Duration("bench-warmup", time.Second, "bench: untimed warm-up before each level")
	benchUnprepareEvery := flag.Int("bench-unprepare-every", 16, "bench: each caller unprepares its prepared claims in one untimed call every N prepares")
	driverPid := flag.Int("driver-pid", 0, "rss: the driver's pid when the peer did not start it")
	driverLog := flag.String("driver-log", "", "where a spawned driver's stdout and stderr go (default: the peer's stderr)")
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
		case "register", "prepare", "unprepare", "health", "sleep", "bench", "rss", "serve":
		default:
			fmt.Fprintf(os.Stderr, "kubeletpeer: unknown step %q\n", s)
			os.Exit(2)
		}
	}
	var concurrencies []int
	for _, v := range strings.Split(*benchConcurrency, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "kubeletpeer: --bench-concurrency %q: want positive numbers\n", *benchConcurrency)
			os.Exit(2)
		}
		concurrencies = append(concurrencies, n)
	}
	if *reconcilePeriod <= 0 || *benchUnprepareEvery < 1 || *benchClaims < 0 || *benchCalls < 0 {
		fmt.Fprintln(os.Stderr, "kubeletpeer: --reconcile-period, --bench-unprepare-every must be positive; --bench-claims, --bench-calls not negative")
		os.Exit(2)
	}
	benchClaimList := []*drapbv1.Claim(claims)
	if *benchClaims > 0 {
		benchClaimList = nil
		for i := 0; i < *benchClaims; i++ {
			benchClaimList = append(benchClaimList, &drapbv1.Claim{Namespace: "default", Name: fmt.Sprintf("claim-%d", i), Uid: benchClaimUID(i)})
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

	// The kubelet's plugin manager (pluginmanager.NewPluginManager and Run),
	// assembled from its parts so that the reconciler period can be set and
	// the watcher is known to be running before a spawned driver starts.
	dsw := cache.NewDesiredStateOfWorld()
	asw := cache.NewActualStateOfWorld()
	rc := reconciler.NewReconciler(
		operationexecutor.NewOperationExecutor(operationexecutor.NewOperationGenerator(record.NewFakeRecorder(100))),
		*reconcilePeriod, dsw, asw)
	rc.AddHandler(registerapi.DRAPlugin, handler)
	stopCh := make(chan struct{})
	if err := pluginwatcher.NewWatcher(*registryDir, dsw).Start(ctx, stopCh); err != nil {
		out(map[string]any{"step": "register", "error": "plugin watcher: " + err.Error(), "elapsed_ms": msSince(start)})
		os.Exit(1)
	}
	rcCtx, rcCancel := context.WithCancel(ctx)
	var pmDone sync.WaitGroup
	pmDone.Add(1)
	go func() {
		defer pmDone.Done()
		rc.Run(rcCtx)
	}()
	defer func() { close(stopCh); rcCancel(); pmDone.Wait() }()

	// The driver, when the peer starts it.
	var cmd *exec.Cmd
	var execAt time.Time
	var driverDone chan struct{} // closed when a spawned driver exited; nil otherwise
	var driverErr error          // its exit status, once driverDone is closed
	stopDriver := func() {}
	if args := flag.Args(); len(args) > 0 {
		cmd = exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if *driverLog != "" {
			f, err := os.Create(*driverLog)
			if err != nil {
				out(map[string]any{"step": "register", "error": "driver log: " + err.Error(), "elapsed_ms": msSince(start)})
				os.Exit(1)
			}
			defer f.Close()
			cmd.Stdout, cmd.Stderr = f, f
		}
		execAt = time.Now()
		if err := cmd.Start(); err != nil {
			out(map[string]any{"step": "register", "error": "start driver: " + err.Error(), "elapsed_ms": msSince(start)})
			os.Exit(1)
		}
		driverDone = make(chan struct{})
		go func() { driverErr = cmd.Wait(); close(driverDone) }()
		var once sync.Once
		stopDriver = func() {
			once.Do(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-driverDone:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-driverDone
				}
			})
		}
		*driverPid = cmd.Process.Pid
	}
	defer func() { stopDriver() }()

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
	case <-driverDone:
		fail("register", fmt.Errorf("driver exited before registering: %v", driverErr))
	case <-ctx.Done():
		fail("register", ctx.Err())
	}
	if !failed {
		handler.mu.Lock()
		name, endpoint, versions := handler.driver, handler.endpoint, handler.versions
		validatedAt, registeredAt := handler.validatedAt, handler.registeredAt
		handler.mu.Unlock()
		if name != *driver {
			fail("register", fmt.Errorf("registered driver %q, want %q", name, *driver))
		} else {
			p, err := draManager.GetPlugin(*driver)
			if err != nil {
				fail("register", err)
			} else {
				plugin = p
				ev := map[string]any{"step": "register", "driver": name, "endpoint": endpoint, "versions": versions,
					"elapsed_ms": msSince(start)}
				if cmd != nil {
					ev["driver_pid"] = cmd.Process.Pid
					ev["exec_to_validate_ms"] = msBetween(execAt, validatedAt)
					ev["exec_to_registered_ms"] = msBetween(execAt, registeredAt)
					ev["reconcile_period_ms"] = float64(reconcilePeriod.Microseconds()) / 1000
				}
				out(ev)
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
		case "bench":
			if len(benchClaimList) == 0 {
				fail(step, errors.New("no claims: give --bench-claims N or --claim"))
				continue
			}
			for _, c := range concurrencies {
				cfg := benchConfig{claims: benchClaimList, concurrency: c, unprepareEvery: *benchUnprepareEvery}
				if *benchWarmup > 0 {
					runBench(ctx, plugin, cfg, *benchWarmup, 0, false, *driverPid)
				}
				ev := runBench(ctx, plugin, cfg, *benchDuration, *benchCalls, true, *driverPid)
				out(ev)
				if n, _ := ev["errors"].(int64); n > 0 {
					failed = true
				}
			}
		case "rss":
			if *driverPid == 0 {
				fail(step, errors.New("no driver pid: start the driver through the peer or give --driver-pid"))
				continue
			}
			ev, err := procStatus(*driverPid)
			if err != nil {
				fail(step, err)
				continue
			}
			out(ev)
		case "serve":
			if err := serve(ctx, draManager, *driver); err != nil {
				fail(step, err)
			}
		}
	}
	if failed {
		stopDriver()
		os.Exit(1)
	}
}
