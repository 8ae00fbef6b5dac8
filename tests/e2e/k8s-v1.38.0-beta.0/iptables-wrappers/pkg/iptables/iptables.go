// Package iptables is the part of sigs.k8s.io/iptables-wrappers/pkg/iptables
// that the Kubernetes 1.38 kubelet uses; see ../../go.mod.
package iptables

import (
	"context"
	"time"
)

// Chain names an iptables chain.
type Chain string

// Table names an iptables table.
type Table string

// RulePosition says where EnsureRule puts a rule.
type RulePosition string

// Protocol is IPv4 or IPv6.
type Protocol string

// Mode says which iptables binary NewBestEffort picks.
type Mode int

const (
	ChainInput  Chain = "INPUT"
	ChainOutput Chain = "OUTPUT"

	TableFilter Table = "filter"
	TableMangle Table = "mangle"
	TableNAT    Table = "nat"

	Prepend RulePosition = "-I"
	Append  RulePosition = "-A"

	UseInstalledMode Mode = 0
)

// Interface is what the kubelet calls on a client of one IP family.
type Interface interface {
	EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error)
	EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error)
	IsIPv6() bool
	Protocol() Protocol
	Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration)
}

// NewBestEffort returns a client per IP family whose iptables works: none
// here.
func NewBestEffort(ctx context.Context, mode Mode) map[Protocol]Interface {
	return map[Protocol]Interface{}
}
