# Sourced by the scripts: where the Go toolchain for the test harnesses is.
# The e2e modules (tests/e2e/*/go.mod, bench/gosdk) ask for Go 1.26, which
# Debian 12 does not have (it ships 1.19), so scripts/install-deps.sh fetches
# it from the Go module proxy, as `go` itself does for GOTOOLCHAIN, into
# DRA_GO_ROOT, unless a Go 1.26 or newer is on PATH or in /usr/local/go.
# shellcheck shell=bash

DRA_GO_VERSION=1.26.8
DRA_GO_ROOT="${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}/go$DRA_GO_VERSION"

# The Go toolchains that build-k8s.sh takes from the module proxy (GOTOOLCHAIN)
# for a Kubernetes release that needs a newer Go than DRA_GO_VERSION.
# dra_go_toolchain_for 1.N prints the pinned toolchain for Go 1.N.
dra_go_toolchain_for() {
  case "$1" in
    1.27) echo go1.27.3 ;;
    *) return 1 ;;
  esac
}

# dra_go_ok GO: whether GO runs and is Go 1.26 or newer.
dra_go_ok() {
  local minor
  minor="$("$1" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
  [ -n "$minor" ] && [ "$minor" -ge 26 ]
}

# Prints the first good go of PATH, /usr/local/go and DRA_GO_ROOT.
dra_find_go() {
  local go
  for go in "$(command -v go || true)" /usr/local/go/bin/go "$DRA_GO_ROOT/bin/go"; do
    if [ -n "$go" ] && [ -x "$go" ] && dra_go_ok "$go"; then
      echo "$go"
      return 0
    fi
  done
  return 1
}

# Puts the good go first on PATH; fails with a message when there is none.
dra_use_go() {
  local go
  if ! go="$(dra_find_go)"; then
    echo "no Go >= 1.26 on PATH, in /usr/local/go or in $DRA_GO_ROOT: run scripts/install-deps.sh" >&2
    return 1
  fi
  PATH="$(dirname "$go"):$PATH"
  export PATH
}
