// A stand-in for sigs.k8s.io/iptables-wrappers v1.0.0, which the 1.38
// kubelet imports (pkg/kubelet/kubelet_network_linux.go, for the
// KUBE-IPTABLES-HINT and KUBE-FIREWALL chains it sets up for other
// components) and which the Go module proxy does not serve (its .zip is
// refused, 2026-12-06). It has only what the kubelet uses and finds no
// iptables: the kubelet logs "No iptables support on this system" and goes
// on, as on a host with nftables only. The e2e node needs no such chains (it
// runs no kube-proxy), and the host's iptables stay untouched.
module sigs.k8s.io/iptables-wrappers

go 1.26.0
