#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
# etcd, kwok) from the Go module proxy into a cache outside the repository, keyed by versions.
# Only missing binaries are built. See hack/testenv/README.md.
#
#   hack/testenv/build.sh                 build what is missing, in the foreground, with progress
#   hack/testenv/build.sh --background    same, detached; prints the log path and returns
#   hack/testenv/build.sh --check         exit 0 if every binary is there, 1 otherwise
#   hack/testenv/build.sh --print-bin-dir print the bin directory (whether or not it is built)
#   hack/testenv/build.sh --print-sp-bin-dir  the same for scheduler-plugins (gang-scheduling tests)
set -euo pipefail

# Everything is in main() so bash has parsed the whole file before running it: editing or
# updating this script while a background build runs must not change what that build executes.
main() {

  HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  # shellcheck source=versions.env
  source "$HERE/versions.env"

  KEY="k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
  CACHE_ROOT="${TRAINOP_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainop/testenv}"
  KEY_DIR="$CACHE_ROOT/$KEY"
  BIN_DIR="$KEY_DIR/bin"
  LOG="$KEY_DIR/build.log"

  K8S_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
  # scheduler-plugins (the gang-scheduling tests' Coscheduling scheduler and PodGroup controller) has
  # its own key, so pinning it never invalidates the Kubernetes binaries above (5 min to rebuild).
  SP_KEY="scheduler-plugins-${SCHEDULER_PLUGINS_VERSION}"
  SP_BIN_DIR="$CACHE_ROOT/$SP_KEY/bin"
  SP_BINS=(sp-scheduler sp-controller)
  SP_CRDS="$CACHE_ROOT/$SP_KEY/crds"  # its config/crd/bases (PodGroup, ElasticQuota), copied from the module
  ALL_BINS=("${K8S_BINS[@]}" etcd kwok "${SP_BINS[@]}" sp-crds)

  ts() { date -u +%H:%M:%S; }
  say() { echo "[$(ts)] testenv: $*"; }

  missing() {  # prints the names of the binaries in "$@" that are not built yet
    local b
    for b in "$@"; do
      case "$b" in
        sp-crds) [[ -d "$SP_CRDS" ]] || echo "$b" ;;
        sp-*) [[ -x "$SP_BIN_DIR/$b" ]] || echo "$b" ;;
        *) [[ -x "$BIN_DIR/$b" ]] || echo "$b" ;;
      esac
    done
  }

  case "${1:-}" in
    --print-bin-dir) echo "$BIN_DIR"; exit 0 ;;
    --print-sp-bin-dir) echo "$SP_BIN_DIR"; exit 0 ;;
    --check) [[ -z "$(missing "${ALL_BINS[@]}")" ]]; exit $? ;;
    --background)
      mkdir -p "$KEY_DIR"
      if [[ -z "$(missing "${ALL_BINS[@]}")" ]]; then say "all binaries present in $BIN_DIR"; exit 0; fi
      exec 9>"$KEY_DIR/.lock"
      if ! flock -n 9; then say "a build is already running; follow with: tail -f $LOG"; exit 0; fi
      exec 9>&-
      nohup "$SELF" >"$LOG" 2>&1 </dev/null &
      say "building in the background (pid $!); follow with: tail -f $LOG"
      exit 0 ;;
    "") ;;
    *) echo "usage: $0 [--background|--check|--print-bin-dir]" >&2; exit 2 ;;
  esac

  command -v go >/dev/null || { echo "testenv: Go (>= 1.24) is needed to build the test control plane" >&2; exit 1; }
  mkdir -p "$BIN_DIR"

  # One build at a time per key: a foreground `make testenv` started while a background build runs
  # waits for it, then finds the binaries there and returns.
  exec 9>"$KEY_DIR/.lock"
  if ! flock -n 9; then
    say "another build holds $KEY_DIR/.lock (log: $LOG); waiting for it"
    flock 9
  fi
  # Leftovers of an interrupted build (this one or an earlier one) are never moved into bin/.
  rm -rf "$KEY_DIR"/.tmp-*
  trap 'rm -rf "$KEY_DIR"/.tmp-*' EXIT

  if [[ -z "$(missing "${ALL_BINS[@]}")" ]]; then say "all binaries present in $BIN_DIR"; exit 0; fi

  # The pins in versions.env and in each tools module must agree, or the cache key would lie.
  check_pin() {  # module-dir module-path version
    local got
    got="$(cd "$HERE/tools/$1" && go list -m -f '{{.Version}}' "$2")"
    if [[ "$got" != "$3" ]]; then
      echo "testenv: tools/$1/go.mod pins $2 $got but versions.env says $3" >&2; exit 1
    fi
  }

  # go build -v names each package it compiles (cached ones are silent); turn that into a
  # timestamped progress line every 100 packages so a foreground build visibly moves.
  progress() {  # label total
    local n=0 line
    while IFS= read -r line; do
      case "$line" in
        *" "* | *:*) echo "$line" ;;   # compiler errors and warnings pass through
        *) n=$((n + 1)); if (( n % 100 == 0 )); then say "$1: compiled $n/~$2 packages ($line)"; fi ;;
      esac
    done
  }

  # -trimpath and a fixed build date keep the binaries reproducible; SOURCE_DATE_EPOCH overrides.
  BUILD_DATE="$(date -u -d "@${SOURCE_DATE_EPOCH:-0}" +%Y-%m-%dT%H:%M:%SZ)"

  build() {  # label module-dir ldflags out(-o) packages...   (DEST: where the binaries go)
    local label="$1" dir="$2" ldflags="$3" out="$4"; shift 4
    local dest="${DEST:-$BIN_DIR}"
    local tmp t0 total
    t0=$(date +%s)
    tmp="$(mktemp -d "$KEY_DIR/.tmp-$label.XXXXXX")"
    total="$(cd "$HERE/tools/$dir" && go list -deps "$@" | wc -l)"
    say "$label: building $* (~$total packages)"
    # GOFLAGS=-mod=readonly: the committed go.mod/go.sum are the pin; never let a build rewrite them.
    if ! (cd "$HERE/tools/$dir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly" \
        go build -v -trimpath -ldflags "$ldflags" -o "$tmp/$out" "$@" 2>&1) | progress "$label" "$total"; then
      say "$label: build FAILED"; exit 1
    fi
    # Move into place only after the whole build succeeded, so a half build never looks complete.
    mkdir -p "$dest" && mv -f "$tmp"/* "$dest/" && rmdir "$tmp"
    say "$label: done in $(( $(date +%s) - t0 ))s"
  }

  T0=$(date +%s)
  say "cache: $BIN_DIR"

  if [[ -n "$(missing "${K8S_BINS[@]}")" ]]; then
    check_pin kubernetes k8s.io/kubernetes "$KUBERNETES_VERSION"
    minor="${KUBERNETES_VERSION#v1.}"; minor="${minor%%.*}"
    # Same stamps as upstream hack/lib/version.sh, so --version and /version are right and the
    # emulation-version checks see the real minor.
    ld="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
      ld+=" -X $p.gitTreeState=clean -X $p.buildDate=$BUILD_DATE"
    done
    say "kubernetes: a cold build (empty Go build cache) takes about 5 min on 2 fast cores, more on slow ones"
    build kubernetes kubernetes "$ld" "" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  fi

  if [[ -n "$(missing etcd)" ]]; then
    check_pin etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
    # etcd's version is a constant in go.etcd.io/etcd/api/v3/version: no stamps needed.
    build etcd etcd "-s -w" etcd go.etcd.io/etcd/server/v3
  fi

  if [[ -n "$(missing kwok)" ]]; then
    check_pin kwok sigs.k8s.io/kwok "$KWOK_VERSION"
    build kwok kwok "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" kwok sigs.k8s.io/kwok/cmd/kwok
  fi

  if [[ -n "$(missing "${SP_BINS[@]}")" ]]; then
    check_pin scheduler-plugins sigs.k8s.io/scheduler-plugins "$SCHEDULER_PLUGINS_VERSION"
    # Two binaries from one module: -o needs a directory for more than one package, so one at a time.
    # Same version stamps as upstream's Makefile (LDFLAGS: k8s.io/component-base/version.gitVersion).
    ld="-s -w -X k8s.io/component-base/version.gitVersion=$SCHEDULER_PLUGINS_VERSION"
    DEST="$SP_BIN_DIR" build sp-scheduler scheduler-plugins "$ld" sp-scheduler sigs.k8s.io/scheduler-plugins/cmd/scheduler
    DEST="$SP_BIN_DIR" build sp-controller scheduler-plugins "$ld" sp-controller sigs.k8s.io/scheduler-plugins/cmd/controller
  fi

  if [[ -n "$(missing sp-crds)" ]]; then
    # Its manifests/crds are symlinks into config/crd/bases, which the module zip does not keep.
    sp_src="$(cd "$HERE/tools/scheduler-plugins" && GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins)"
    rm -rf "$SP_CRDS.tmp" && mkdir -p "$SP_CRDS.tmp"
    cp "$sp_src"/config/crd/bases/*.yaml "$SP_CRDS.tmp/" && chmod u+w "$SP_CRDS.tmp"/* && mv "$SP_CRDS.tmp" "$SP_CRDS"
    say "scheduler-plugins CRDs: $SP_CRDS"
  fi

  say "all built in $(( $(date +%s) - T0 ))s: $BIN_DIR $SP_BIN_DIR"
}

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
main "$@"; exit $?  # on one line: bash never reads past it, even if the file changed meanwhile
