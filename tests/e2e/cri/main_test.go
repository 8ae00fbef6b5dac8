package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	criapi "k8s.io/cri-api/pkg/apis"
	kubeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	criclient "k8s.io/cri-client/pkg"
)

type harness struct {
	runtime criapi.RuntimeService // the kubelet's own CRI client
	images  criapi.ImageManagerService
	specDir string
	record  string
	sock    string
	http    string // the --http address, if any
	stop    func() // as SIGTERM does; also at the test's end
}

// start runs the server as main does, on a fresh socket, until the test ends.
func start(t *testing.T, withHTTP bool) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri-test") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &harness{specDir: filepath.Join(dir, "cdi"), record: filepath.Join(dir, "record.json"), sock: filepath.Join(dir, "cri.sock")}
	if err := os.Mkdir(h.specDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A stale socket, as a killed run leaves behind.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: h.sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	args := []string{"--endpoint", "unix://" + h.sock, "--cdi-spec-dir", filepath.Join(dir, "missing"), "--cdi-spec-dir", h.specDir, "--record", h.record}
	if withHTTP {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h.http = l.Addr().String()
		l.Close()
		args = append(args, "--http", h.http)
	}
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()
	h.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		if _, err := os.Lstat(h.sock); !os.IsNotExist(err) {
			t.Errorf("socket left behind after shutdown: %v", err)
		}
	})
	t.Cleanup(h.stop)
	waitFor(t, func() bool { // the stale socket refuses connections
		c, err := net.Dial("unix", h.sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if st, err := os.Stat(h.sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v, %v", st, err)
	}
	h.runtime, err = criclient.NewRemoteRuntimeService(ctx, "unix://"+h.sock, 10*time.Second, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	h.images, err = criclient.NewRemoteImageService(ctx, "unix://"+h.sock, 10*time.Second, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

func (h *harness) writeSpec(t *testing.T, name, spec string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.specDir, name), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) readRecord(t *testing.T) []container {
	t.Helper()
	data, err := os.ReadFile(h.record)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Containers []container }
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("record %s: %v", data, err)
	}
	return rec.Containers
}

func podConfig(name string) *kubeapi.PodSandboxConfig {
	return &kubeapi.PodSandboxConfig{Metadata: &kubeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: "uid-" + name}}
}

func containerConfig(name string, cdiDevices ...string) *kubeapi.ContainerConfig {
	cfg := &kubeapi.ContainerConfig{
		Metadata: &kubeapi.ContainerMetadata{Name: name},
		Image:    &kubeapi.ImageSpec{Image: "registry.k8s.io/pause:3.10"},
		Envs:     []*kubeapi.KeyValue{{Key: "FROM_POD", Value: []byte("1")}},
		Mounts:   []*kubeapi.Mount{{ContainerPath: "/etc/hosts", HostPath: "/tmp/hosts"}},
	}
	for _, d := range cdiDevices {
		cfg.CDIDevices = append(cfg.CDIDevices, &kubeapi.CDIDevice{Name: d})
	}
	return cfg
}

func TestCDIInjectionAndLifecycle(t *testing.T) {
	h := start(t, true)
	ctx := context.Background()

	// What the kubelet needs before it marks the node Ready.
	st, err := h.runtime.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.GetStatus().GetConditions() {
		if !c.Status {
			t.Errorf("condition %s is false", c.Type)
		}
	}
	if n := len(st.GetStatus().GetConditions()); n != 2 {
		t.Errorf("%d conditions, want RuntimeReady and NetworkReady", n)
	}
	rc, err := h.runtime.RuntimeConfig(ctx)
	if err != nil || rc.GetLinux().GetCgroupDriver() != kubeapi.CgroupDriver_CGROUPFS {
		t.Errorf("RuntimeConfig: %v, %v", rc, err)
	}
	fsInfo, err := h.images.ImageFsInfo(ctx)
	if err != nil || len(fsInfo.GetImageFilesystems()) != 1 || fsInfo.ImageFilesystems[0].GetFsId().GetMountpoint() != filepath.Dir(h.sock) {
		t.Errorf("ImageFsInfo: %v, %v", fsInfo, err)
	}

	// Written after the server started: specs are read on CreateContainer.
	h.writeSpec(t, "vendor.com-gpu.json", `{
  "cdiVersion": "0.6.0",
  "kind": "vendor.com/gpu",
  "devices": [{
    "name": "gpu0",
    "containerEdits": {
      "env": ["GPU=gpu0"],
      "deviceNodes": [{"path": "/dev/vendor-gpu0", "type": "c", "major": 195, "minor": 0}],
      "mounts": [{"hostPath": "/opt/vendor/lib", "containerPath": "/usr/lib/vendor", "options": ["ro", "nosuid", "bind"]}],
      "hooks": [{"hookName": "createContainer", "path": "/usr/bin/vendor-hook", "args": ["vendor-hook", "gpu0"]}]
    }
  }]
}`)
	sandbox, err := h.runtime.RunPodSandbox(ctx, podConfig("p1"), "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := h.runtime.CreateContainer(ctx, sandbox, containerConfig("c1", "vendor.com/gpu=gpu0"), podConfig("p1"))
	if err != nil {
		t.Fatal(err)
	}

	got := h.readRecord(t)
	if len(got) != 1 {
		t.Fatalf("record: %+v", got)
	}
	c := got[0]
	want := container{
		ID: id, PodName: "p1", PodNamespace: "ns", PodUID: "uid-p1", ContainerName: "c1",
		CDIDevices:  []string{"vendor.com/gpu=gpu0"},
		State:       stateCreated,
		Env:         []string{"FROM_POD=1", "GPU=gpu0"},
		DeviceNodes: []deviceNode{{Path: "/dev/vendor-gpu0", Type: "c", Major: 195}},
		Mounts: []mount{
			{ContainerPath: "/etc/hosts", HostPath: "/tmp/hosts", Options: []string{"rbind", "rprivate", "rw"}},
			{ContainerPath: "/usr/lib/vendor", HostPath: "/opt/vendor/lib", Options: []string{"ro", "nosuid", "bind"}},
		},
		Hooks:       []hook{{HookName: "createContainer", Path: "/usr/bin/vendor-hook", Args: []string{"vendor-hook", "gpu0"}}},
		Annotations: map[string]string{},
	}
	if time.Since(c.CreatedAt) > time.Minute {
		t.Errorf("createdAt %v", c.CreatedAt)
	}
	c.CreatedAt = time.Time{}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("record\n got %+v\nwant %+v", c, want)
	}

	// The kubelet sees the container run, then exit.
	if err := h.runtime.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if s, err := h.runtime.ContainerStatus(ctx, id, false); err != nil || s.GetStatus().GetState() != kubeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("ContainerStatus after start: %v, %v", s, err)
	}
	if got := h.readRecord(t)[0].State; got != stateRunning {
		t.Errorf("state %q after StartContainer", got)
	}
	resp, err := http.Get("http://" + h.http + "/containers")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if file, _ := os.ReadFile(h.record); string(body) != string(file) {
		t.Errorf("GET /containers\n%s\nis not the record file\n%s", body, file)
	}
	if err := h.runtime.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if s, err := h.runtime.ContainerStatus(ctx, id, false); err != nil || s.GetStatus().GetState() != kubeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("ContainerStatus after stop: %v, %v", s, err)
	}
	if got := h.readRecord(t)[0].State; got != stateExited {
		t.Errorf("state %q after StopContainer", got)
	}
	// Removing the sandbox removes its containers.
	if err := h.runtime.StopPodSandbox(ctx, sandbox); err != nil {
		t.Fatal(err)
	}
	if err := h.runtime.RemovePodSandbox(ctx, sandbox); err != nil {
		t.Fatal(err)
	}
	if got := h.readRecord(t)[0].State; got != stateRemoved {
		t.Errorf("state %q after RemovePodSandbox", got)
	}
	if cs, err := h.runtime.ListContainers(ctx, nil); err != nil || len(cs) != 0 {
		t.Errorf("ListContainers after RemovePodSandbox: %v, %v", cs, err)
	}
}

func TestUnresolvableCDIDeviceFails(t *testing.T) {
	h := start(t, false)
	ctx := context.Background()
	h.writeSpec(t, "vendor.com-gpu.yaml", "cdiVersion: 0.6.0\nkind: vendor.com/gpu\ndevices:\n- name: gpu0\n  containerEdits:\n    env: [GPU=gpu0]\n")
	sandbox, err := h.runtime.RunPodSandbox(ctx, podConfig("p2"), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.runtime.CreateContainer(ctx, sandbox, containerConfig("c2", "vendor.com/gpu=gpu0", "vendor.com/gpu=x"), podConfig("p2"))
	const msg = "CDI device injection failed: unresolvable CDI devices vendor.com/gpu=x"
	if status.Code(err) != codes.Unknown || status.Convert(err).Message() != msg {
		t.Fatalf("CreateContainer: %v, want code Unknown and %q", err, msg)
	}
	got := h.readRecord(t)
	if len(got) != 1 || got[0].State != stateFailed || got[0].Error != msg || got[0].ID != "" ||
		got[0].PodName != "p2" || got[0].ContainerName != "c2" || len(got[0].Env) != 0 ||
		!slices.Equal(got[0].CDIDevices, []string{"vendor.com/gpu=gpu0", "vendor.com/gpu=x"}) {
		t.Errorf("record: %+v", got)
	}
	if cs, err := h.runtime.ListContainers(ctx, nil); err != nil || len(cs) != 0 {
		t.Errorf("a container was created: %v, %v", cs, err)
	}
}

func TestSameEnvFromTwoDevices(t *testing.T) {
	h := start(t, false)
	ctx := context.Background()
	h.writeSpec(t, "minimal.json", `{"cdiVersion": "0.6.0", "kind": "minimal.example.com/device", "devices": [
  {"name": "dev-0", "containerEdits": {"env": ["MINIMAL_DEVICE=dev-0"]}},
  {"name": "dev-1", "containerEdits": {"env": ["MINIMAL_DEVICE=dev-1"]}}]}`)
	sandbox, err := h.runtime.RunPodSandbox(ctx, podConfig("p3"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.runtime.CreateContainer(ctx, sandbox, containerConfig("c3", "minimal.example.com/device=dev-0", "minimal.example.com/device=dev-1"), podConfig("p3")); err != nil {
		t.Fatal(err)
	}
	// The CDI library applies the devices' edits in the order asked for, a
	// later value replacing an earlier one of the same name in place.
	env := h.readRecord(t)[0].Env
	if want := []string{"FROM_POD=1", "MINIMAL_DEVICE=dev-1"}; !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
	t.Logf("env of a container given dev-0 then dev-1: %q", env)
}

// The kubelet keeps a GetContainerEvents stream open (with EventedPLEG); it
// must neither end at once nor keep the server from stopping.
func TestShutdownEndsEventStream(t *testing.T) {
	h := start(t, false)
	conn, err := grpc.NewClient("unix://"+h.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := kubeapi.NewRuntimeServiceClient(conn).GetContainerEvents(context.Background(), &kubeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { _, err := stream.Recv(); ended <- err }()
	select {
	case err := <-ended:
		t.Fatalf("the event stream ended before shutdown: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	began := time.Now()
	h.stop()
	if err := <-ended; err != io.EOF {
		t.Errorf("the event stream ended with %v, want EOF", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("shutdown took %v", d)
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"-h"}, flag.ErrHelp.Error()},
		{[]string{}, "--endpoint is required"},
		{[]string{"--endpoint", "/x.sock", "extra"}, "unexpected arguments"},
		{[]string{"--endpoint", "/x.sock", "--bogus"}, "flag provided but not defined: -bogus"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.wantErr)
		}
	}
	cfg, err := parseFlags([]string{"--endpoint", "unix:///run/x.sock", "--cdi-spec-dir", "/a", "--cdi-spec-dir", "/b"}, io.Discard)
	if err != nil || cfg.endpoint != "/run/x.sock" || !slices.Equal(cfg.specDirs, []string{"/a", "/b"}) {
		t.Errorf("%+v, %v", cfg, err)
	}
	if cfg, _ := parseFlags([]string{"--endpoint", "/x.sock"}, io.Discard); len(cfg.specDirs) == 0 {
		t.Error("no default CDI spec dirs")
	}
	if err := run(context.Background(), config{endpoint: "/nonexistent-dir/cri.sock"}); err == nil || !strings.Contains(err.Error(), "directory does not exist") {
		t.Errorf("run with a missing socket dir: %v", err)
	}
	sock := filepath.Join(t.TempDir(), "not-a-socket")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), config{endpoint: sock}); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("run on a regular file: %v", err)
	}
}
