package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	draplugin "k8s.io/kubernetes/pkg/kubelet/cm/dra/plugin"
)

// serveCommand is one stdin line of the serve step:
//
//	{"id":1,"op":"prepare","claims":["NS/NAME/UID",...],"timeout":"20s"}
//	  -> {"step":"prepare","id":1,"response":{...},"rpc_ms":..}, or
//	     {"step":"prepare","id":1,"error":"..."} when the call failed
//	{"id":2,"op":"unprepare",...}: the same with NodeUnprepareResources
//
// Commands run one at a time, in order, through the DRAPlugin the kubelet's
// DRA plugin manager picks for the driver at that moment, as the kubelet
// calls a driver after it restarted. Other lines (validate, register,
// deregister) may come in between, at any time: they have no "id".
type serveCommand struct {
	ID      int64    `json:"id"`
	Op      string   `json:"op"`
	Claims  []string `json:"claims"`
	Timeout string   `json:"timeout"`
}

func serve(ctx context.Context, pm *draplugin.DRAPluginManager, driver string) error {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for in.Scan() {
		var cmd serveCommand
		if err := json.Unmarshal(in.Bytes(), &cmd); err != nil {
			out(map[string]any{"step": "serve", "error": fmt.Sprintf("command %q: %v", in.Text(), err)})
			continue
		}
		ev := map[string]any{"step": cmd.Op, "id": cmd.ID}
		if err := serveCall(ctx, pm, driver, cmd, ev); err != nil {
			ev["error"] = err.Error()
		}
		out(ev)
	}
	return in.Err()
}

func serveCall(ctx context.Context, pm *draplugin.DRAPluginManager, driver string, cmd serveCommand, ev map[string]any) error {
	var claims []*drapbv1.Claim
	for _, c := range cmd.Claims {
		parts := strings.Split(c, "/")
		if len(parts) != 3 {
			return fmt.Errorf("claim %q: want NAMESPACE/NAME/UID", c)
		}
		claims = append(claims, &drapbv1.Claim{Namespace: parts[0], Name: parts[1], Uid: parts[2]})
	}
	timeout := 45 * time.Second // the kubelet's own limit for a DRA call
	if cmd.Timeout != "" {
		d, err := time.ParseDuration(cmd.Timeout)
		if err != nil {
			return fmt.Errorf("timeout: %w", err)
		}
		timeout = d
	}
	plugin, err := pm.GetPlugin(driver)
	if err != nil {
		return err
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.Now()
	switch cmd.Op {
	case "prepare":
		resp, err := plugin.NodePrepareResources(callCtx, &drapbv1.NodePrepareResourcesRequest{Claims: claims})
		if err != nil {
			return err
		}
		ev["response"] = protoJSON(resp)
	case "unprepare":
		resp, err := plugin.NodeUnprepareResources(callCtx, &drapbv1.NodeUnprepareResourcesRequest{Claims: claims})
		if err != nil {
			return err
		}
		ev["response"] = protoJSON(resp)
	default:
		return fmt.Errorf("unknown op %q: want prepare or unprepare", cmd.Op)
	}
	ev["rpc_ms"] = msSince(t)
	return nil
}
