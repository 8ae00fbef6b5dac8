// The hello world of examples/minimal/main.cc on the Go SDK's kubeletplugin
// helper (k8s.io/dynamic-resource-allocation v0.37.2), with the CDI library
// dra-example-driver writes its specs with: the same flags (those without
// an environment variable in the C++ one have none here either but
// NODE_NAME), the same devices, the same CDI edits. docs/migrating-from-go.md
// puts the two side by side; built by tests/e2e/build-k8s.sh gosdk-minimal.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

const driverName = "minimal.example.com"

type minimalDriver struct{ cdi *cdiapi.Cache }

func (d *minimalDriver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	results := make(map[types.UID]kubeletplugin.PrepareResult)
	for _, claim := range claims {
		spec := &cdispec.Spec{Kind: driverName + "/claim"}
		var devices []kubeletplugin.Device
		for _, result := range claim.Status.Allocation.Devices.Results {
			if result.Driver != driverName {
				continue
			}
			name := string(claim.UID) + "-" + result.Device
			spec.Devices = append(spec.Devices, cdispec.Device{Name: name, ContainerEdits: cdispec.ContainerEdits{
				Env: []string{"MINIMAL_" + strings.ToUpper(result.Device) + "=" + result.Device}}})
			devices = append(devices, kubeletplugin.Device{Requests: []string{result.Request}, PoolName: result.Pool,
				DeviceName: result.Device, CDIDeviceIDs: []string{spec.Kind + "=" + name}})
		}
		version, err := cdiapi.MinimumRequiredVersion(spec)
		if err == nil {
			spec.Version = version
			err = d.cdi.WriteSpec(spec, cdiapi.GenerateTransientSpecName(driverName, "claim", string(claim.UID)))
		}
		results[claim.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
	}
	return results, nil
}

func (d *minimalDriver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	results := make(map[types.UID]error)
	for _, claim := range claims {
		results[claim.UID] = d.cdi.RemoveSpec(cdiapi.GenerateTransientSpecName(driverName, "claim", string(claim.UID)))
	}
	return results, nil
}

func (d *minimalDriver) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
}

func (d *minimalDriver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

func main() {
	nodeName := flag.String("node-name", os.Getenv("NODE_NAME"), "the node this plugin runs on")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file; default in-cluster")
	cdiRoot := flag.String("cdi-root", "/var/run/cdi", "where the container runtime reads CDI specs")
	registrarDir := flag.String("kubelet-registrar-directory-path", kubeletplugin.KubeletRegistryDir, "")
	pluginsDir := flag.String("kubelet-plugins-directory-path", kubeletplugin.KubeletPluginsDir, "")
	numDevices := flag.Int("devices", 2, "devices to publish")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(*nodeName, *kubeconfig, *cdiRoot, *registrarDir, *pluginsDir+"/"+driverName, *numDevices); err != nil {
		fmt.Fprintln(os.Stderr, "minimal-driver:", err)
		os.Exit(1)
	}
}

func run(nodeName, kubeconfig, cdiRoot, registrarDir, dataDir string, numDevices int) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	cdi, err := cdiapi.NewCache(cdiapi.WithSpecDirs(cdiRoot), cdiapi.WithAutoRefresh(false))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	helper, err := kubeletplugin.Start(ctx, &minimalDriver{cdi: cdi}, kubeletplugin.KubeClient(client),
		kubeletplugin.NodeName(nodeName), kubeletplugin.DriverName(driverName),
		kubeletplugin.RegistrarDirectoryPath(registrarDir), kubeletplugin.PluginDataDirectoryPath(dataDir))
	if err != nil {
		return err
	}
	defer helper.Stop()
	devices := make([]resourceapi.Device, numDevices)
	for i := range devices {
		devices[i].Name = fmt.Sprintf("dev%d", i)
	}
	resources := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		nodeName: {Slices: []resourceslice.Slice{{Devices: devices}}}}}
	if err := helper.PublishResources(ctx, resources); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
