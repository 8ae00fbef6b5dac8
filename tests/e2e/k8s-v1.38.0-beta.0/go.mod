// Pins Kubernetes v1.38.0-beta.0, the next release, ahead of its general
// availability (see ../build-k8s.sh, DRA_K8S_VERSION=v1.38.0-beta.0). It needs
// Go 1.27, which build-k8s.sh takes from the Go module proxy (GOTOOLCHAIN) for
// this release only. k8s.io/kubernetes requires its staging modules at v0.0.0
// and replaces them with ./staging paths that only exist in its own tree, so
// every one of them is replaced here with its matching published release.
module dra-cpp/e2e-k8s-v1.38.0-beta.0

go 1.27.0

godebug default=go1.27

require k8s.io/kubernetes v1.38.0-beta.0

// The kubelet's iptables helper, which the module proxy does not serve:
// a stand-in that finds no iptables (see iptables-wrappers/go.mod).
replace sigs.k8s.io/iptables-wrappers => ./iptables-wrappers

replace (
	k8s.io/api => k8s.io/api v0.38.0-beta.0
	k8s.io/apiextensions-api => k8s.io/apiextensions-api v0.38.0-beta.0
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.38.0-beta.0
	k8s.io/apimachinery => k8s.io/apimachinery v0.38.0-beta.0
	k8s.io/apiserver => k8s.io/apiserver v0.38.0-beta.0
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.38.0-beta.0
	k8s.io/client-go => k8s.io/client-go v0.38.0-beta.0
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.38.0-beta.0
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.38.0-beta.0
	k8s.io/code-generator => k8s.io/code-generator v0.38.0-beta.0
	k8s.io/component-base => k8s.io/component-base v0.38.0-beta.0
	k8s.io/component-helpers => k8s.io/component-helpers v0.38.0-beta.0
	k8s.io/controller-manager => k8s.io/controller-manager v0.38.0-beta.0
	k8s.io/cri-api => k8s.io/cri-api v0.38.0-beta.0
	k8s.io/cri-client => k8s.io/cri-client v0.38.0-beta.0
	k8s.io/cri-streaming => k8s.io/cri-streaming v0.38.0-beta.0
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.38.0-beta.0
	k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.38.0-beta.0
	k8s.io/endpointslice => k8s.io/endpointslice v0.38.0-beta.0
	k8s.io/externaljwt => k8s.io/externaljwt v0.38.0-beta.0
	k8s.io/kms => k8s.io/kms v0.38.0-beta.0
	k8s.io/ktesting => k8s.io/ktesting v0.38.0-beta.0
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.38.0-beta.0
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.38.0-beta.0
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.38.0-beta.0
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.38.0-beta.0
	k8s.io/kubectl => k8s.io/kubectl v0.38.0-beta.0
	k8s.io/kubelet => k8s.io/kubelet v0.38.0-beta.0
	k8s.io/metrics => k8s.io/metrics v0.38.0-beta.0
	k8s.io/mount-utils => k8s.io/mount-utils v0.38.0-beta.0
	k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.38.0-beta.0
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.38.0-beta.0
	k8s.io/sample-cli-plugin => k8s.io/sample-cli-plugin v0.38.0-beta.0
	k8s.io/sample-controller => k8s.io/sample-controller v0.38.0-beta.0
	k8s.io/streaming => k8s.io/streaming v0.38.0-beta.0
)
