// The CRI stand-in of the e2e suite: the fake runtime of k8s.io/cri-client at
// the version of the Kubernetes the suite runs (../k8s/go.mod; keep in step),
// with CDI injection by tags.cncf.io/container-device-interface.
module dra-cpp/e2e-cri

go 1.26.0

godebug default=go1.26

require (
	github.com/opencontainers/runtime-spec v1.3.0
	google.golang.org/grpc v1.82.1
	k8s.io/cri-api v0.37.2
	k8s.io/cri-client v0.37.2
	tags.cncf.io/container-device-interface v1.1.2
)

require (
	github.com/Microsoft/go-winio v0.6.2 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc v0.68.0 // indirect
	go.opentelemetry.io/otel v1.44.0 // indirect
	go.opentelemetry.io/otel/metric v1.44.0 // indirect
	go.opentelemetry.io/otel/trace v1.44.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
	k8s.io/component-base v0.37.2 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
	tags.cncf.io/container-device-interface/specs-go v1.1.1 // indirect
)
