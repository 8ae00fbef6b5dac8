// gosdk-driver is the trivial DRA driver of bench/go_vs_cpp.sh on the Go SDK,
// k8s.io/dynamic-resource-allocation/kubeletplugin (v0.37.2): the same work as
// bench/trivial_driver.cc on dra-cpp, for a side-by-side measurement. Test
// tooling only; the product is C++.
//
//	gosdk-driver --registrar-dir DIR --plugin-data-dir DIR [--driver-name NAME]
//	  [--claims N] [--claim-client map|fake] [--checkpoint off|reference] [--v LEVEL]
//
// The Go helper fetches every claim of a NodePrepareResources call through a
// kube client (ResourceV1().ResourceClaims(ns).Get). Here the claims are N
// allocated ResourceClaims held in memory, the equivalent of dra-cpp's
// InMemoryClaimSource: namespace "default", name "claim-<i>", UID
// "00000000-0000-4000-8000-<i as 12 hex digits>", one allocation result
// (request "gpu", pool "pool-a", device "gpu-0") for this driver.
//
// --claim-client map (default): a real client-go clientset, as a production
// driver has (its API server address is never contacted: nothing but
// ResourceClaims Get is used without ResourceSlice publishing), with
// ResourceClaims Get served from a read-only map (a DeepCopy per Get, as a
// client returns a fresh object).
//
// --claim-client fake (only in a binary built with -tags fakeclient): the
// fake clientset (k8s.io/client-go/kubernetes/fake, NewClientset) preloaded
// with the claims, as it is. Not the default because its test machinery is
// not SDK cost: it builds a type converter for every API type (about 20 MB
// more RSS at idle), records every call in a slice that is never emptied (RSS
// grows with the call count) and serializes all calls on one mutex; merely
// linking the package adds about 3 MB.
//
// --checkpoint reference: the driver keeps its prepared claims crash-safe the
// way dra-example-driver's kubelet plugin does (cmd/dra-example-kubeletplugin:
// state.go, checkpoint.go): under one lock, each prepare and unprepare reads
// the whole checkpoint file and decodes it, answers a claim found there from
// it, and otherwise writes the whole file again (encode into a temp file,
// fsync, rename), as JSON in <plugin-data-dir>/checkpoint.json. What a Go
// driver pays for being crash-safe, beside dra-cpp's checkpoint.
//
// Serialization is off (kubeletplugin.Serialize(false)) and the health
// service is off (the driver does not report health; the dra-cpp driver does
// not advertise it either). Prepare returns one device with one CDI device ID
// per allocation result of this driver; unprepare always succeeds.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	resourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

const (
	claimNamespace = "default"
	requestName    = "gpu"
	poolName       = "pool-a"
	deviceName     = "gpu-0"
)

// claimUID is the UID of bench claim i; the same scheme as trivial_driver.cc
// and the kubelet peer's --bench-claims.
func claimUID(i int) types.UID {
	return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i))
}

func benchClaim(driverName string, i int) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: claimNamespace, Name: fmt.Sprintf("claim-%d", i), UID: claimUID(i)},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{
				Devices: resourceapi.DeviceAllocationResult{
					Results: []resourceapi.DeviceRequestAllocationResult{
						{Request: requestName, Driver: driverName, Pool: poolName, Device: deviceName},
					},
				},
			},
		},
	}
}

// referenceCheckpoint is dra-example-driver's way of keeping prepared claims
// (see --checkpoint above): the whole file read and rewritten per change.
type referenceCheckpoint struct {
	mu   sync.Mutex
	path string
}

func (c *referenceCheckpoint) read() (map[types.UID][]kubeletplugin.Device, error) {
	claims := map[types.UID][]kubeletplugin.Device{}
	data, err := os.ReadFile(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return claims, nil
	}
	if err != nil {
		return nil, err
	}
	return claims, json.Unmarshal(data, &claims)
}

func (c *referenceCheckpoint) write(claims map[types.UID][]kubeletplugin.Device) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(c.path), "tmp-checkpoint-*")
	if err != nil {
		return err
	}
	defer func() {
		if err1 := tmp.Close(); err1 != nil && err == nil {
			err = err1
		}
	}()
	if err := json.NewEncoder(tmp).Encode(claims); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), c.path)
}

// trivialDriver implements kubeletplugin.DRAPlugin.
type trivialDriver struct {
	name       string
	checkpoint *referenceCheckpoint // nil: none
}

func (d *trivialDriver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	results := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		if d.checkpoint != nil {
			devices, err := d.prepareCheckpointed(claim)
			results[claim.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
			continue
		}
		results[claim.UID] = kubeletplugin.PrepareResult{Devices: d.devices(claim)}
	}
	return results, nil
}

// prepareCheckpointed is dra-example-driver's DeviceState.Prepare around the
// trivial preparation.
func (d *trivialDriver) prepareCheckpointed(claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	d.checkpoint.mu.Lock()
	defer d.checkpoint.mu.Unlock()
	prepared, err := d.checkpoint.read()
	if err != nil {
		return nil, fmt.Errorf("unable to sync from checkpoint: %w", err)
	}
	if devices, ok := prepared[claim.UID]; ok {
		return devices, nil
	}
	devices := d.devices(claim)
	prepared[claim.UID] = devices
	if err := d.checkpoint.write(prepared); err != nil {
		return nil, fmt.Errorf("unable to sync to checkpoint: %w", err)
	}
	return devices, nil
}

func (d *trivialDriver) devices(claim *resourceapi.ResourceClaim) []kubeletplugin.Device {
	var devices []kubeletplugin.Device
	for _, allocated := range claim.Status.Allocation.Devices.Results {
		if allocated.Driver != d.name {
			continue
		}
		devices = append(devices, kubeletplugin.Device{
			Requests:     []string{allocated.Request},
			PoolName:     allocated.Pool,
			DeviceName:   allocated.Device,
			CDIDeviceIDs: []string{d.name + "/device=" + string(claim.UID) + "-" + allocated.Device},
		})
	}
	return devices
}

func (d *trivialDriver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	results := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		results[claim.UID] = nil
		if d.checkpoint != nil {
			results[claim.UID] = d.unprepareCheckpointed(claim.UID)
		}
	}
	return results, nil
}

// unprepareCheckpointed is dra-example-driver's DeviceState.Unprepare around
// the trivial unpreparation.
func (d *trivialDriver) unprepareCheckpointed(uid types.UID) error {
	d.checkpoint.mu.Lock()
	defer d.checkpoint.mu.Unlock()
	prepared, err := d.checkpoint.read()
	if err != nil {
		return fmt.Errorf("unable to sync from checkpoint: %w", err)
	}
	if _, ok := prepared[uid]; !ok {
		return nil
	}
	delete(prepared, uid)
	if err := d.checkpoint.write(prepared); err != nil {
		return fmt.Errorf("unable to sync to checkpoint: %w", err)
	}
	return nil
}

func (d *trivialDriver) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
}

func (d *trivialDriver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

var _ kubeletplugin.DRAPlugin = &trivialDriver{}

// newFakeClient is set by fake.go in a binary built with -tags fakeclient.
var newFakeClient func(driverName string, numClaims int) kubernetes.Interface

// mapClientset is a clientset with ResourceClaims Get served from a
// read-only map; everything else is the wrapped clientset's.
type mapClientset struct {
	kubernetes.Interface
	claims map[types.NamespacedName]*resourceapi.ResourceClaim
}

func (c *mapClientset) ResourceV1() resourcev1.ResourceV1Interface {
	return &mapResourceV1{ResourceV1Interface: c.Interface.ResourceV1(), claims: c.claims}
}

type mapResourceV1 struct {
	resourcev1.ResourceV1Interface
	claims map[types.NamespacedName]*resourceapi.ResourceClaim
}

func (r *mapResourceV1) ResourceClaims(namespace string) resourcev1.ResourceClaimInterface {
	return &mapClaims{ResourceClaimInterface: r.ResourceV1Interface.ResourceClaims(namespace), namespace: namespace, claims: r.claims}
}

type mapClaims struct {
	resourcev1.ResourceClaimInterface
	namespace string
	claims    map[types.NamespacedName]*resourceapi.ResourceClaim
}

func (m *mapClaims) Get(ctx context.Context, name string, opts metav1.GetOptions) (*resourceapi.ResourceClaim, error) {
	claim, ok := m.claims[types.NamespacedName{Namespace: m.namespace, Name: name}]
	if !ok {
		return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), name)
	}
	return claim.DeepCopy(), nil
}

var _ kubernetes.Interface = &mapClientset{}

func main() {
	registrarDir := flag.String("registrar-dir", kubeletplugin.KubeletRegistryDir, "where the kubelet looks for registration sockets (must exist)")
	pluginDataDir := flag.String("plugin-data-dir", "", "DRA socket directory (created; default /var/lib/kubelet/plugins/<driver name>)")
	driverName := flag.String("driver-name", "bench.example.com", "DRA driver name")
	numClaims := flag.Int("claims", 1024, "number of allocated claims claim-0 .. claim-<N-1> in namespace default")
	claimClient := flag.String("claim-client", "map", "map: a clientset with claims Get from a map; fake: the fake clientset (needs -tags fakeclient)")
	checkpointMode := flag.String("checkpoint", "off", "off, or reference: keep prepared claims as dra-example-driver does")
	klog.InitFlags(nil)
	flag.Parse()

	if *pluginDataDir == "" {
		*pluginDataDir = kubeletplugin.KubeletPluginsDir + "/" + *driverName
	}
	// The Go helper wants the directory to exist; dra-cpp creates it.
	if err := os.MkdirAll(*pluginDataDir, 0o750); err != nil {
		fmt.Fprintln(os.Stderr, "gosdk-driver:", err)
		os.Exit(1)
	}

	var client kubernetes.Interface
	switch *claimClient {
	case "map":
		claims := make(map[types.NamespacedName]*resourceapi.ResourceClaim, *numClaims)
		for i := 0; i < *numClaims; i++ {
			c := benchClaim(*driverName, i)
			claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
		}
		// Port 1 on loopback: never contacted (see above); a call would fail.
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
		if err != nil {
			fmt.Fprintln(os.Stderr, "gosdk-driver:", err)
			os.Exit(1)
		}
		client = &mapClientset{Interface: cs, claims: claims}
	case "fake":
		if newFakeClient == nil {
			fmt.Fprintln(os.Stderr, "gosdk-driver: --claim-client fake needs a binary built with -tags fakeclient")
			os.Exit(2)
		}
		client = newFakeClient(*driverName, *numClaims)
	default:
		fmt.Fprintf(os.Stderr, "gosdk-driver: --claim-client %q: want map or fake\n", *claimClient)
		os.Exit(2)
	}

	driver := &trivialDriver{name: *driverName}
	switch *checkpointMode {
	case "off":
	case "reference":
		driver.checkpoint = &referenceCheckpoint{path: filepath.Join(*pluginDataDir, "checkpoint.json")}
	default:
		fmt.Fprintf(os.Stderr, "gosdk-driver: --checkpoint %q: want off or reference\n", *checkpointMode)
		os.Exit(2)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	helper, err := kubeletplugin.Start(ctx, driver,
		kubeletplugin.DriverName(*driverName),
		kubeletplugin.KubeClient(client),
		kubeletplugin.RegistrarDirectoryPath(*registrarDir),
		kubeletplugin.PluginDataDirectoryPath(*pluginDataDir),
		kubeletplugin.Serialize(false),
		kubeletplugin.HealthService(false),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosdk-driver: start:", err)
		os.Exit(1)
	}
	<-ctx.Done()
	helper.Stop()
}
