package main

import (
	"encoding/json"
	"log"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
)

const (
	stateCreated = "created"
	stateRunning = "running"
	stateExited  = "exited"
	stateRemoved = "removed"
	stateFailed  = "failed"
)

// container is one CreateContainer call and what became of its container.
type container struct {
	ID            string    `json:"id"` // empty when the call failed
	PodName       string    `json:"podName"`
	PodNamespace  string    `json:"podNamespace"`
	PodUID        string    `json:"podUID"`
	ContainerName string    `json:"containerName"`
	Attempt       uint32    `json:"attempt"`
	CDIDevices    []string  `json:"cdiDevices"`
	Error         string    `json:"error"`
	State         string    `json:"state"`
	CreatedAt     time.Time `json:"createdAt"` // RFC 3339 with nanoseconds, UTC

	// The OCI spec after CDI injection (empty when the call failed). Env is
	// the whole process env: the container config's envs, then what CDI set,
	// a CDI variable replacing one of the same name in place.
	Env         []string          `json:"env"`
	DeviceNodes []deviceNode      `json:"deviceNodes"`
	Mounts      []mount           `json:"mounts"` // the config's and CDI's
	Hooks       []hook            `json:"hooks"`
	Annotations map[string]string `json:"annotations"`
}

type deviceNode struct {
	Path  string `json:"path"`
	Type  string `json:"type"`
	Major int64  `json:"major"`
	Minor int64  `json:"minor"`
}

type mount struct {
	ContainerPath string   `json:"containerPath"`
	HostPath      string   `json:"hostPath"`
	Options       []string `json:"options"`
}

type hook struct {
	HookName string   `json:"hookName"`
	Path     string   `json:"path"`
	Args     []string `json:"args"`
}

// setEdits copies the edited fields of spec (none for nil) into c.
func (c *container) setEdits(spec *oci.Spec) {
	c.Env, c.DeviceNodes, c.Mounts, c.Hooks = []string{}, []deviceNode{}, []mount{}, []hook{}
	c.Annotations = map[string]string{}
	if spec == nil {
		return
	}
	if spec.Process != nil {
		c.Env = append(c.Env, spec.Process.Env...)
	}
	if spec.Linux != nil {
		for _, d := range spec.Linux.Devices {
			c.DeviceNodes = append(c.DeviceNodes, deviceNode{d.Path, d.Type, d.Major, d.Minor})
		}
	}
	for _, m := range spec.Mounts {
		c.Mounts = append(c.Mounts, mount{m.Destination, m.Source, append([]string{}, m.Options...)})
	}
	if h := spec.Hooks; h != nil {
		for _, named := range []struct {
			name  string
			hooks []oci.Hook
		}{
			{"prestart", h.Prestart}, // deprecated by OCI, still valid in CDI specs
			{"createRuntime", h.CreateRuntime},
			{"createContainer", h.CreateContainer},
			{"startContainer", h.StartContainer},
			{"poststart", h.Poststart},
			{"poststop", h.Poststop},
		} {
			for _, oh := range named.hooks {
				c.Hooks = append(c.Hooks, hook{named.name, oh.Path, append([]string{}, oh.Args...)})
			}
		}
	}
	maps.Copy(c.Annotations, spec.Annotations)
}

// recorder keeps every container seen and writes them all out, atomically,
// after each change: {"containers": [...]} in the order of CreateContainer.
type recorder struct {
	path string // "" for none

	mu         sync.Mutex
	containers []*container
	byID       map[string]*container // the latest entry of each container ID
	last       []byte                // the JSON last written
}

func newRecorder(path string) (*recorder, error) {
	r := &recorder{path: path, containers: []*container{}, byID: map[string]*container{}}
	return r, r.writeLocked()
}

func (r *recorder) add(c *container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.containers = append(r.containers, c)
	if c.ID != "" {
		r.byID[c.ID] = c
	}
	r.write()
}

func (r *recorder) setState(id, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.byID[id]; c != nil && c.State != stateRemoved {
		c.State = state
	}
	r.write()
}

func (r *recorder) write() {
	if err := r.writeLocked(); err != nil {
		log.Printf("writing the record: %v", err)
	}
}

func (r *recorder) writeLocked() error {
	data, err := json.MarshalIndent(struct {
		Containers []*container `json:"containers"`
	}{r.containers}, "", "  ")
	if err != nil {
		return err
	}
	r.last = append(data, '\n')
	if r.path == "" {
		return nil
	}
	return writeAtomic(r.path, r.last)
}

// writeAtomic replaces path by data so that a reader sees the old file or the
// new one, never a part.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ServeHTTP answers GET /containers with the record.
func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/containers" {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	r.mu.Lock()
	data := r.last
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(data)
}
