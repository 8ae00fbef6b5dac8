package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	kubeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/fake"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// server is the fake runtime and image service of k8s.io/cri-client, with
// CDI injection on CreateContainer, a record of every container, and the few
// answers the kubelet needs that the fake leaves empty.
type server struct {
	*fake.RemoteRuntime
	cdi      *cdi.Cache
	rec      *recorder
	imageFs  string        // reported as the image filesystem's mountpoint
	stopping chan struct{} // closed on shutdown, ends GetContainerEvents streams

	mu sync.Mutex // serializes the calls that change containers
}

func newServer(specDirs []string, rec *recorder, imageFs string) *server {
	f := fake.NewFakeRemoteRuntime()
	// RemoteRuntime.Start (which we do not use: it listens with its own,
	// unwrapped server) is what would mark the fake ready; without it
	// Status carries no conditions and the node never becomes Ready.
	f.RuntimeService.FakeStatus = &kubeapi.RuntimeStatus{Conditions: []*kubeapi.RuntimeCondition{
		{Type: kubeapi.RuntimeReady, Status: true},
		{Type: kubeapi.NetworkReady, Status: true},
	}}
	f.RuntimeService.FakeLinuxConfiguration = &kubeapi.LinuxRuntimeConfiguration{
		CgroupDriver: kubeapi.CgroupDriver_CGROUPFS,
	}
	// The kubelet refuses a pulled image whose size is 0 ("Id or size of
	// image ... is not set"), the fake's default.
	f.ImageService.SetFakeImageSize(1 << 20)
	// Manual refresh: the specs are re-read on every CreateContainer, as
	// containerd does, rather than watched.
	cache, _ := cdi.NewCache(cdi.WithSpecDirs(specDirs...), cdi.WithAutoRefresh(false))
	return &server{RemoteRuntime: f, cdi: cache, rec: rec, imageFs: imageFs, stopping: make(chan struct{})}
}

func (s *server) register(g *grpc.Server) {
	kubeapi.RegisterRuntimeServiceServer(g, s)
	kubeapi.RegisterImageServiceServer(g, s)
}

// intercept logs failed calls (CreateContainer logs its own) and empties the
// fakes' call logs, which would otherwise grow by every call the kubelet makes
// for as long as we run.
func (s *server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil && info.FullMethod != kubeapi.RuntimeService_CreateContainer_FullMethodName {
		log.Printf("%s: %v", info.FullMethod, err)
	}
	s.forgetCalls()
	return resp, err
}

func (s *server) interceptStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	if err != nil {
		log.Printf("%s: %v", info.FullMethod, err)
	}
	s.forgetCalls()
	return err
}

func (s *server) forgetCalls() {
	rs, is := s.RuntimeService, s.ImageService
	rs.Lock()
	rs.Called = rs.Called[:0]
	rs.Unlock()
	is.Lock()
	is.Called = is.Called[:0]
	is.Unlock()
}

func (s *server) CreateContainer(ctx context.Context, req *kubeapi.CreateContainerRequest) (*kubeapi.CreateContainerResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	cfg := req.GetConfig()
	pod := req.GetSandboxConfig().GetMetadata()
	c := &container{
		PodName:       pod.GetName(),
		PodNamespace:  pod.GetNamespace(),
		PodUID:        pod.GetUid(),
		ContainerName: cfg.GetMetadata().GetName(),
		Attempt:       cfg.GetMetadata().GetAttempt(),
		CDIDevices:    []string{},
		CreatedAt:     time.Now().UTC(),
	}
	for _, d := range cfg.GetCDIDevices() {
		c.CDIDevices = append(c.CDIDevices, d.GetName())
	}
	who := fmt.Sprintf("%s/%s container %q (attempt %d)", c.PodNamespace, c.PodName, c.ContainerName, c.Attempt)

	c.setEdits(nil)
	fail := func(err error) (*kubeapi.CreateContainerResponse, error) {
		c.State, c.Error = stateFailed, err.Error()
		s.rec.add(c)
		log.Printf("CreateContainer %s, CDI devices %v: FAILED: %v", who, c.CDIDevices, err)
		return nil, status.Error(codes.Unknown, err.Error())
	}

	if cfg.GetMetadata() == nil || cfg.GetImage() == nil {
		return fail(fmt.Errorf("container config lacks metadata or image")) // the fake would panic
	}
	spec, err := s.ociSpec(cfg, c.CDIDevices)
	if err != nil {
		return fail(err)
	}
	id, err := s.RuntimeService.CreateContainer(ctx, req.PodSandboxId, cfg, req.SandboxConfig)
	if err != nil {
		return fail(err)
	}
	c.ID, c.State = id, stateCreated
	c.setEdits(spec)
	s.rec.add(c)
	log.Printf("CreateContainer %s, CDI devices %v: created %s", who, c.CDIDevices, id)
	return &kubeapi.CreateContainerResponse{ContainerId: id}, nil
}

// ociSpec is the part of the OCI spec a runtime would build from cfg that CDI
// edits (env, mounts, devices, hooks, annotations), with cdiDevices injected.
func (s *server) ociSpec(cfg *kubeapi.ContainerConfig, cdiDevices []string) (*oci.Spec, error) {
	spec := &oci.Spec{
		Process:     &oci.Process{Env: []string{}},
		Linux:       &oci.Linux{},
		Annotations: map[string]string{},
	}
	for _, kv := range cfg.GetEnvs() {
		spec.Process.Env = append(spec.Process.Env, kv.GetKey()+"="+string(kv.GetValue())) // Value is bytes since cri-api v0.37
	}
	for _, m := range cfg.GetMounts() {
		spec.Mounts = append(spec.Mounts, ociMount(m))
	}
	for k, v := range cfg.GetAnnotations() {
		spec.Annotations[k] = v
	}
	if len(cdiDevices) == 0 {
		return spec, nil
	}
	// As containerd's WithCDIDevices: a spec that fails to load is no reason
	// to refuse devices from the others; the injection fails if it matters.
	if err := s.cdi.Refresh(); err != nil {
		log.Printf("CDI registry refresh: %v", err)
	}
	if _, err := s.cdi.InjectDevices(spec, cdiDevices...); err != nil {
		return nil, fmt.Errorf("CDI device injection failed: %w", err)
	}
	return spec, nil
}

// ociMount converts a CRI mount the way containerd's CRI plugin does.
func ociMount(m *kubeapi.Mount) oci.Mount {
	opts := []string{"rbind"}
	switch m.GetPropagation() {
	case kubeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
		opts = append(opts, "rshared")
	case kubeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
		opts = append(opts, "rslave")
	default:
		opts = append(opts, "rprivate")
	}
	if m.GetReadonly() {
		opts = append(opts, "ro")
	} else {
		opts = append(opts, "rw")
	}
	return oci.Mount{Destination: m.GetContainerPath(), Source: m.GetHostPath(), Type: "bind", Options: opts}
}

func (s *server) StartContainer(ctx context.Context, req *kubeapi.StartContainerRequest) (*kubeapi.StartContainerResponse, error) {
	return containerCall(s, req.ContainerId, "StartContainer", stateRunning, func() (*kubeapi.StartContainerResponse, error) {
		return s.RemoteRuntime.StartContainer(ctx, req)
	})
}

func (s *server) StopContainer(ctx context.Context, req *kubeapi.StopContainerRequest) (*kubeapi.StopContainerResponse, error) {
	return containerCall(s, req.ContainerId, "StopContainer", stateExited, func() (*kubeapi.StopContainerResponse, error) {
		return s.RemoteRuntime.StopContainer(ctx, req)
	})
}

func (s *server) RemoveContainer(ctx context.Context, req *kubeapi.RemoveContainerRequest) (*kubeapi.RemoveContainerResponse, error) {
	return containerCall(s, req.ContainerId, "RemoveContainer", stateRemoved, func() (*kubeapi.RemoveContainerResponse, error) {
		return s.RemoteRuntime.RemoveContainer(ctx, req)
	})
}

// containerCall runs one call that moves container id to state, and records
// and logs the move.
func containerCall[R any](s *server, id, method, state string, call func() (R, error)) (R, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp, err := call()
	if err != nil {
		return resp, err
	}
	s.rec.setState(id, state)
	log.Printf("%s %s: %s", method, id, state)
	return resp, nil
}

func (s *server) RunPodSandbox(ctx context.Context, req *kubeapi.RunPodSandboxRequest) (*kubeapi.RunPodSandboxResponse, error) {
	if req.GetConfig().GetMetadata() == nil {
		return nil, status.Error(codes.InvalidArgument, "pod sandbox config lacks metadata") // the fake would panic
	}
	resp, err := s.RemoteRuntime.RunPodSandbox(ctx, req)
	if err == nil {
		log.Printf("RunPodSandbox: %s", resp.PodSandboxId)
	}
	return resp, err
}

// StopPodSandbox and RemovePodSandbox must also stop and remove the sandbox's
// containers (the CRI's contract); the fake leaves them alone.
func (s *server) StopPodSandbox(ctx context.Context, req *kubeapi.StopPodSandboxRequest) (*kubeapi.StopPodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.sandboxContainers(ctx, req.PodSandboxId) {
		if c.State == kubeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		if err := s.RuntimeService.StopContainer(ctx, c.Id, 0); err == nil {
			s.rec.setState(c.Id, stateExited)
		}
	}
	resp, err := s.RemoteRuntime.StopPodSandbox(ctx, req)
	if err == nil {
		log.Printf("StopPodSandbox: %s", req.PodSandboxId)
	}
	return resp, err
}

func (s *server) RemovePodSandbox(ctx context.Context, req *kubeapi.RemovePodSandboxRequest) (*kubeapi.RemovePodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.sandboxContainers(ctx, req.PodSandboxId) {
		if err := s.RuntimeService.RemoveContainer(ctx, c.Id); err == nil {
			s.rec.setState(c.Id, stateRemoved)
		}
	}
	resp, err := s.RemoteRuntime.RemovePodSandbox(ctx, req)
	if err == nil {
		log.Printf("RemovePodSandbox: %s", req.PodSandboxId)
	}
	return resp, err
}

func (s *server) sandboxContainers(ctx context.Context, sandboxID string) []*kubeapi.Container {
	cs, _ := s.RuntimeService.ListContainers(ctx, &kubeapi.ContainerFilter{PodSandboxId: sandboxID})
	return cs
}

// ImageFsInfo reports one (empty) filesystem for images and containers: with
// none the kubelet's stats provider fails ("imageFs information is
// unavailable"), and it asks cAdvisor about the mountpoint, so it must exist.
func (s *server) ImageFsInfo(context.Context, *kubeapi.ImageFsInfoRequest) (*kubeapi.ImageFsInfoResponse, error) {
	fs := []*kubeapi.FilesystemUsage{{
		Timestamp:  time.Now().UnixNano(),
		FsId:       &kubeapi.FilesystemIdentifier{Mountpoint: s.imageFs},
		UsedBytes:  &kubeapi.UInt64Value{},
		InodesUsed: &kubeapi.UInt64Value{},
	}}
	return &kubeapi.ImageFsInfoResponse{ImageFilesystems: fs, ContainerFilesystems: fs}, nil
}

// GetContainerEvents is a stream of no events (the fake ends it at once),
// open until the client or the server goes.
func (s *server) GetContainerEvents(_ *kubeapi.GetEventsRequest, stream kubeapi.RuntimeService_GetContainerEventsServer) error {
	select {
	case <-stream.Context().Done():
	case <-s.stopping:
	}
	return nil
}
