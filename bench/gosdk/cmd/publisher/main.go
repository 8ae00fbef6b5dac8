// gosdk-publisher publishes N devices on one node through the Go resourceslice
// controller, k8s.io/dynamic-resource-allocation/resourceslice (v0.37.2,
// StartController): the Go side of bench/publisher_go_vs_cpp.sh, whose dra-cpp
// side is bench/slice_publisher.cc. Both take the same flags and the same
// commands, so the script drives them alike. Benchmark tooling only; built by
// tests/e2e/build-k8s.sh gosdk-publisher.
//
//	gosdk-publisher --kubeconfig FILE --node NAME [--nodes N] [--driver NAME]
//	  [--devices N | --slices FILE] [--publish-at-start] [--qps Q --burst B]
//	  [--v LEVEL]
//
// --nodes N (bench/scale): N simulated nodes NAME-0..NAME-<N-1> instead of
// the one node NAME, each with a client of its own (its own connection, as
// client-go shares one transport between clients of equal config only when
// it may cache it, which a custom dialer prevents; its own rate limiter), a
// controller and watches of its own, as N real nodes' drivers would have.
// Every command applies to all of them.
//
// --slices FILE: the pool's slices are the spec.devices and
// spec.sharedCounters of the items of FILE (a ResourceSliceList as JSON,
// bench/scale's gpu_slices prints the example GPU driver's), the same on
// every node, instead of the --devices devices below.
//
// --publish-at-start: the controllers start with the devices (Options.Resources),
// as a driver restarted by a rollout does; "ready" then waits until they are
// idle.
//
// The devices: "gpu-00000".."gpu-<N-1>", each with the attributes model
// (string "a100"), index (int), driverVersion (version "1.2.3") and healthy
// (bool true) and the capacity memory (80Gi); one node-local pool named after
// the node (Owner: the Node, whose UID the controller looks up), in slices of
// at most 128 devices, as dra::resourceslice::SplitIntoSlices cuts them.
//
// Commands on stdin, one per line; one JSON line on stdout answers each:
//
//	publish    give the controller all devices (Update)
//	change K   toggle the model of K devices ("h100" -> "a100", anything
//	           else -> "h100"): device N/K/2 + i*N/K for i < K of the N
//	           devices in slice order (K=1: the middle device; K=100: every
//	           100th device from the 50th), then Update
//	idle       wait until the controller has had nothing to do for 500 ms:
//	           its work queue empty, no item being synced, no delayed add
//	           pending (so the wait includes the controller's own delayed
//	           re-syncs: SyncDelay after an informer event, MutationCacheTTL
//	           after a create)
//	quit       stop the controller and exit
//
// publish and change answer {"update_ns": <CLOCK_REALTIME just before the
// first node's Update>, "updated_ns": <just after the last node's>};
// idle answers {"idle_ns": ..., "creates", "updates", "deletes", "errors"}.
// "ready" is printed once StartController returned (its informer has synced)
// for every node.
//
// Everything is the controller's default (SyncDelay 30 s, MutationCacheTTL
// 1 min, the default rate limiter of its queue, utilruntime's error logging)
// except the work queue, which is the default one wrapped to tell when it is
// idle (see idleQueue), and --qps/--burst (client-go's rest.Config; 0 keeps
// client-go's defaults of 5 and 10, a negative qps disables the rate limit).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

const (
	devicesPerSlice = 128                    // dra::resourceslice::SplitIntoSlices: at most 128 plain devices per slice
	quietPeriod     = 500 * time.Millisecond // "idle": idle for this long without a break
)

func ptrTo[T any](v T) *T { return &v }

func device(i int) resourceapi.Device {
	return resourceapi.Device{
		Name: fmt.Sprintf("gpu-%05d", i),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"model":         {StringValue: ptrTo("a100")},
			"index":         {IntValue: ptrTo(int64(i))},
			"driverVersion": {VersionValue: ptrTo("1.2.3")},
			"healthy":       {BoolValue: ptrTo(true)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: resource.MustParse("80Gi")},
		},
	}
}

// idleQueue is the controller's default work queue (a rate-limiting,
// delaying queue with workqueue.DefaultTypedControllerRateLimiter, named
// "node_resource_slices") with the same semantics, made observable: it knows
// which items are queued, being processed or waiting for a delayed add. A
// delayed add of an item that already waits keeps the earlier time, as the
// delaying queue does, so each item has at most one timer.
type idleQueue struct {
	inner   *workqueue.Typed[string]
	limiter workqueue.TypedRateLimiter[string]

	mu      sync.Mutex
	queued  map[string]bool // added (to inner) and not yet returned by Get
	active  int             // returned by Get, Done not yet called
	waiting map[string]*delayed
}

type delayed struct {
	at    time.Time
	timer *time.Timer
}

var _ workqueue.TypedRateLimitingInterface[string] = &idleQueue{}

func newIdleQueue() *idleQueue {
	return &idleQueue{
		inner:   workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "node_resource_slices"}),
		limiter: workqueue.DefaultTypedControllerRateLimiter[string](),
		queued:  map[string]bool{},
		waiting: map[string]*delayed{},
	}
}

func (q *idleQueue) Add(item string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.inner.ShuttingDown() {
		return
	}
	q.queued[item] = true
	q.inner.Add(item)
}

func (q *idleQueue) AddAfter(item string, d time.Duration) {
	if d <= 0 {
		q.Add(item)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.inner.ShuttingDown() {
		return
	}
	at := time.Now().Add(d)
	if w, ok := q.waiting[item]; ok {
		if !at.Before(w.at) {
			return
		}
		w.timer.Stop()
	}
	w := &delayed{at: at}
	w.timer = time.AfterFunc(d, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.waiting[item] != w {
			return // replaced by an earlier one
		}
		delete(q.waiting, item)
		if !q.inner.ShuttingDown() {
			q.queued[item] = true
			q.inner.Add(item)
		}
	})
	q.waiting[item] = w
}

func (q *idleQueue) AddRateLimited(item string) { q.AddAfter(item, q.limiter.When(item)) }
func (q *idleQueue) Forget(item string)         { q.limiter.Forget(item) }
func (q *idleQueue) NumRequeues(item string) int {
	return q.limiter.NumRequeues(item)
}
func (q *idleQueue) Len() int { return q.inner.Len() }

func (q *idleQueue) Get() (string, bool) {
	item, shutdown := q.inner.Get()
	if !shutdown {
		q.mu.Lock()
		delete(q.queued, item)
		q.active++
		q.mu.Unlock()
	}
	return item, shutdown
}

func (q *idleQueue) Done(item string) {
	q.mu.Lock()
	q.active--
	q.mu.Unlock()
	q.inner.Done(item) // re-queues the item if it was added while processed; queued[item] is set then
}

func (q *idleQueue) ShutDown() {
	q.mu.Lock()
	for item, w := range q.waiting {
		w.timer.Stop()
		delete(q.waiting, item)
	}
	q.mu.Unlock()
	q.inner.ShutDown()
}

func (q *idleQueue) ShutDownWithDrain() { q.ShutDown() }
func (q *idleQueue) ShuttingDown() bool { return q.inner.ShuttingDown() }

func (q *idleQueue) Idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queued) == 0 && q.active == 0 && len(q.waiting) == 0
}

// syntheticSlices: n devices in slices of at most devicesPerSlice.
func syntheticSlices(n int) []resourceslice.Slice {
	var slices []resourceslice.Slice
	for start := 0; start < n; start += devicesPerSlice {
		end := min(start+devicesPerSlice, n)
		devices := make([]resourceapi.Device, 0, end-start)
		for i := start; i < end; i++ {
			devices = append(devices, device(i))
		}
		slices = append(slices, resourceslice.Slice{Devices: devices})
	}
	return slices
}

func slicesFromFile(path string) ([]resourceslice.Slice, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list resourceapi.ResourceSliceList
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var slices []resourceslice.Slice
	for _, item := range list.Items {
		slices = append(slices, resourceslice.Slice{Devices: item.Spec.Devices, SharedCounters: item.Spec.SharedCounters})
	}
	if len(slices) == 0 {
		return nil, fmt.Errorf("%s: no items", path)
	}
	return slices, nil
}

// node is one simulated node's controller.
type node struct {
	name       string
	queue      *idleQueue
	controller *resourceslice.Controller
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (required)")
	nodeName := flag.String("node", "", "the Node the pool is local to (required; it must exist); with --nodes: the prefix of the nodes' names")
	numNodes := flag.Int("nodes", 1, "simulated nodes, each with its own client and controller")
	driverName := flag.String("driver", "gpu.example.com", "DRA driver name")
	numDevices := flag.Int("devices", 10000, "number of devices")
	slicesFile := flag.String("slices", "", "the pool's slices from this ResourceSliceList (JSON) instead of --devices")
	publishAtStart := flag.Bool("publish-at-start", false, "start the controllers with the devices")
	qps := flag.Float64("qps", 0, "client QPS (0: client-go's default 5; negative: no limit)")
	burst := flag.Int("burst", 0, "client burst (0: client-go's default 10)")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" || *nodeName == "" || *numDevices <= 0 || *numNodes <= 0 {
		fmt.Fprintln(os.Stderr, "usage: gosdk-publisher --kubeconfig FILE --node NAME [--nodes N] [--driver NAME] [--devices N | --slices FILE] [--qps Q --burst B]")
		os.Exit(2)
	}
	template := syntheticSlices(*numDevices)
	if *slicesFile != "" {
		var err error
		if template, err = slicesFromFile(*slicesFile); err != nil {
			klog.Fatalf("--slices: %v", err)
		}
	}
	var models []*string // the model attribute of every device of the template, in slice order
	for _, slice := range template {
		for d := range slice.Devices {
			device := &slice.Devices[d]
			if device.Attributes == nil {
				device.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
			}
			model := device.Attributes["model"]
			if model.StringValue == nil {
				model = resourceapi.DeviceAttribute{StringValue: ptrTo("")}
				device.Attributes["model"] = model
			}
			models = append(models, model.StringValue)
		}
	}

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("load %s: %v", *kubeconfig, err)
	}
	config.QPS = float32(*qps)
	config.Burst = *burst

	resources := func(name string) *resourceslice.DriverResources {
		slices := make([]resourceslice.Slice, len(template))
		for i := range template {
			slices[i] = *template[i].DeepCopy()
		}
		return &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{name: {Slices: slices}}}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errorCount atomic.Int64
	nodes := make([]*node, *numNodes)
	var started sync.WaitGroup
	for i := range nodes {
		n := &node{name: *nodeName, queue: newIdleQueue()}
		if *numNodes > 1 {
			n.name = fmt.Sprintf("%s-%d", *nodeName, i)
		}
		nodes[i] = n
		nodeConfig := rest.CopyConfig(config)
		if *numNodes > 1 {
			nodeConfig.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		client, err := kubernetes.NewForConfig(nodeConfig)
		if err != nil {
			klog.Fatalf("client: %v", err)
		}
		var initial *resourceslice.DriverResources
		if *publishAtStart {
			initial = resources(n.name)
		}
		started.Add(1)
		go func() {
			defer started.Done()
			controller, err := resourceslice.StartController(ctx, resourceslice.Options{
				DriverName: *driverName,
				KubeClient: client,
				Owner:      &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: n.name},
				Resources:  initial,
				Queue:      n.queue,
				ErrorHandler: func(ctx context.Context, err error, msg string) {
					errorCount.Add(1)
					klog.FromContext(ctx).Error(err, msg)
				},
			})
			if err != nil {
				klog.Fatalf("start the controller of %s: %v", n.name, err)
			}
			n.controller = controller
		}()
	}
	started.Wait()

	update := func() map[string]any {
		now := time.Now().UnixNano()
		for _, n := range nodes {
			n.controller.Update(resources(n.name))
		}
		return map[string]any{"update_ns": now, "updated_ns": time.Now().UnixNano()}
	}
	idle := func() bool {
		for _, n := range nodes {
			if !n.queue.Idle() {
				return false
			}
		}
		return true
	}
	waitIdle := func() {
		for since := time.Now(); time.Since(since) < quietPeriod; {
			time.Sleep(5 * time.Millisecond)
			if !idle() {
				since = time.Now()
			}
		}
	}
	stop := func() {
		for _, n := range nodes {
			n.controller.Stop()
		}
	}

	out := json.NewEncoder(os.Stdout)
	reply := func(v map[string]any) {
		if err := out.Encode(v); err != nil {
			klog.Fatalf("stdout: %v", err)
		}
	}
	if *publishAtStart {
		waitIdle()
	}
	reply(map[string]any{"ready": true, "pid": os.Getpid()})

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "publish":
			reply(update())
		case "change":
			k := 0
			if len(fields) == 2 {
				k, _ = strconv.Atoi(fields[1])
			}
			if k <= 0 || k > len(models) {
				reply(map[string]any{"error": "change K: K from 1 to the number of devices"})
				continue
			}
			step := len(models) / k
			for i := 0; i < k; i++ {
				model := models[step/2+i*step]
				if *model == "h100" {
					*model = "a100"
				} else {
					*model = "h100"
				}
			}
			reply(update())
		case "idle":
			waitIdle()
			var creates, updates, deletes int64
			for _, n := range nodes {
				stats := n.controller.GetStats()
				creates += stats.NumCreates
				updates += stats.NumUpdates
				deletes += stats.NumDeletes
			}
			reply(map[string]any{"idle_ns": time.Now().UnixNano(), "creates": creates,
				"updates": updates, "deletes": deletes, "errors": errorCount.Load()})
		case "quit":
			stop()
			reply(map[string]any{"quit": true})
			return
		default:
			reply(map[string]any{"error": "unknown command " + strconv.Quote(fields[0])})
		}
	}
	stop()
}
