#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
# etcd, kwok), scheduler-plugins, the Kueue manager and Helm from the Go module proxy into a cache
# outside the repository, each keyed by its version. Only missing binaries are built; every run ends
# with a table of each binary and its build time (or "cached"). See hack/testenv/README.md.
#
#   hack/testenv/build.sh                 build what is missing, in the foreground, with progress
#   hack/testenv/build.sh --background    same, detached; prints the log path and returns
#   hack/testenv/build.sh --wait          wait for a background build, then print its table (exit 1
#                                         with the log's tail if it failed or anything is missing)
#   hack/testenv/build.sh --wait-control-plane  wait until the control plane's binaries are built (not
#                                         Kueue and Helm, which the build makes last)
#   hack/testenv/build.sh --check         exit 0 if every binary is there, 1 otherwise
#   hack/testenv/build.sh --print-bin-dir print the bin directory (whether or not it is built)
#   hack/testenv/build.sh --print-sp-bin-dir  the same for scheduler-plugins (gang-scheduling tests)
#   hack/testenv/build.sh --print-kueue-dir   Kueue's directory: bin/kueue and config/ (its CRDs and
#                                             webhook manifests, copied from the module)
#   hack/testenv/build.sh --print-helm    the path of the helm binary (whether or not it is built)
#   hack/testenv/build.sh --print-trainer-dir  kubeflow/trainer's manifests (its CRDs, runtimes and
#                                         example TrainJobs, copied from the Go module; nothing built)
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
  # Kueue (tests/integration/k8s/test_kueue.py) and Helm (the chart's tests) each have their own key
  # too: `go install <module>/cmd/<x>@<version>` needs no tools module (neither has replace lines).
  KUEUE_DIR="$CACHE_ROOT/kueue-${KUEUE_VERSION}"
  KUEUE_CONFIG="$KUEUE_DIR/config"  # config/components/{crd/bases,webhook} of the module
  HELM_BIN_DIR="$CACHE_ROOT/helm-${HELM_VERSION}/bin"
  # Kubeflow Trainer's own CRDs, runtimes and examples (the drop-in tests of TrainJob): files only,
  # copied from the module the Go module proxy serves; a download, not a build (seconds).
  TRAINER_DIR="$CACHE_ROOT/kubeflow-trainer-${KUBEFLOW_TRAINER_VERSION}"
  ALL_BINS=(trainer-manifests "${K8S_BINS[@]}" etcd kwok "${SP_BINS[@]}" sp-crds kueue kueue-config helm)
  # Build-time records: <label> <seconds> <epoch when done>, one file per cache key; the table
  # reports a label as built by this run when its record is newer than the run's start.
  RUN_START_FILE="$CACHE_ROOT/.last-run-start"

  ts() { date -u +%H:%M:%S; }
  say() { echo "[$(ts)] testenv: $*"; }

  missing() {  # prints the names of the binaries in "$@" that are not built yet
    local b
    for b in "$@"; do
      case "$b" in
        sp-crds) [[ -d "$SP_CRDS" ]] || echo "$b" ;;
        sp-*) [[ -x "$SP_BIN_DIR/$b" ]] || echo "$b" ;;
        kueue) [[ -x "$KUEUE_DIR/bin/kueue" ]] || echo "$b" ;;
        kueue-config) [[ -d "$KUEUE_CONFIG" ]] || echo "$b" ;;
        helm) [[ -x "$HELM_BIN_DIR/helm" ]] || echo "$b" ;;
        trainer-manifests) [[ -d "$TRAINER_DIR/crds" ]] || echo "$b" ;;
        *) [[ -x "$BIN_DIR/$b" ]] || echo "$b" ;;
      esac
    done
  }

  record() {  # label seconds dir: a build-time record for the table
    mkdir -p "$3" && echo "$1 $2 $(date +%s)" >>"$3/.build-times"
  }

  # One row per build step: label, version, what it makes, and where its record lives.
  ROWS=(
    "kubernetes|$KUBERNETES_VERSION|kube-apiserver kube-controller-manager kube-scheduler kubectl|$KEY_DIR"
    "etcd|$ETCD_VERSION|etcd|$KEY_DIR"
    "kwok|$KWOK_VERSION|kwok|$KEY_DIR"
    "sp-scheduler|$SCHEDULER_PLUGINS_VERSION|sp-scheduler (Coscheduling)|$CACHE_ROOT/$SP_KEY"
    "sp-controller|$SCHEDULER_PLUGINS_VERSION|sp-controller (PodGroup status)|$CACHE_ROOT/$SP_KEY"
    "kueue|$KUEUE_VERSION|kueue (manager)|$KUEUE_DIR"
    "helm|$HELM_VERSION|helm|$CACHE_ROOT/helm-${HELM_VERSION}"
  )

  table() {  # run-start-epoch: print each binary with its build time in this run, or "cached"
    local since="$1" row label version what dir rec secs total=0
    printf '%s\n' "testenv build times (cold = built by this run; cached = already in $CACHE_ROOT):"
    printf '  %-14s %-9s %-62s %s\n' "step" "version" "binaries" "seconds"
    for row in "${ROWS[@]}"; do
      IFS='|' read -r label version what dir <<<"$row"
      rec="$(awk -v l="$label" -v s="$since" '$1 == l && $3 >= s {t = $2} END {print t}' "$dir/.build-times" 2>/dev/null || true)"
      if [[ -n "$rec" ]]; then secs="$rec"; total=$((total + rec)); else secs="cached"; fi
      printf '  %-14s %-9s %-62s %s\n' "$label" "$version" "$what" "$secs"
    done
    printf '  %-14s %-9s %-62s %s\n' "total" "" "" "$total"
  }

  case "${1:-}" in
    --print-bin-dir) echo "$BIN_DIR"; exit 0 ;;
    --print-sp-bin-dir) echo "$SP_BIN_DIR"; exit 0 ;;
    --print-kueue-dir) echo "$KUEUE_DIR"; exit 0 ;;
    --print-helm) echo "$HELM_BIN_DIR/helm"; exit 0 ;;
    --print-trainer-dir) echo "$TRAINER_DIR"; exit 0 ;;
    --check) [[ -z "$(missing "${ALL_BINS[@]}")" ]]; exit $? ;;
    --background)
      mkdir -p "$KEY_DIR"
      date +%s >"$RUN_START_FILE"
      if [[ -z "$(missing "${ALL_BINS[@]}")" ]]; then say "all binaries present"; exit 0; fi
      exec 9>"$KEY_DIR/.lock"
      if ! flock -n 9; then say "a build is already running; follow with: tail -f $LOG"; exit 0; fi
      exec 9>&-
      TRAINOP_TESTENV_BACKGROUND=1 nohup "$SELF" >"$LOG" 2>&1 </dev/null &
      say "building in the background (pid $!); follow with: tail -f $LOG"
      exit 0 ;;
    --wait-control-plane)
      # Until the control plane's binaries are there (the build goes on with Kueue and Helm): make
      # test runs the k8s tests that need only these meanwhile. Fails if no build is running and one
      # is still missing.
      mkdir -p "$KEY_DIR"
      CP_BINS=(trainer-manifests "${K8S_BINS[@]}" etcd kwok "${SP_BINS[@]}" sp-crds)
      while [[ -n "$(missing "${CP_BINS[@]}")" ]]; do
        if flock -n "$KEY_DIR/.lock" true && [[ -n "$(missing "${CP_BINS[@]}")" ]]; then
          say "no build is running and the control plane lacks: $(missing "${CP_BINS[@]}" | tr '\n' ' ')"
          [[ -f "$LOG" ]] && { echo "--- last lines of $LOG:"; tail -n 30 "$LOG"; }
          exit 1
        fi
        sleep 5
      done
      say "control plane binaries present"
      exit 0 ;;
    --wait)
      mkdir -p "$KEY_DIR"
      exec 9>"$KEY_DIR/.lock"
      if ! flock -n 9; then
        say "waiting for the background build (log: $LOG)"
        flock 9
      fi
      exec 9>&-
      if [[ -n "$(missing "${ALL_BINS[@]}")" ]]; then
        say "the build left binaries missing: $(missing "${ALL_BINS[@]}" | tr '\n' ' ')"
        [[ -f "$LOG" ]] && { echo "--- last lines of $LOG:"; tail -n 30 "$LOG"; }
        exit 1
      fi
      table "$(cat "$RUN_START_FILE" 2>/dev/null || echo 0)"
      exit 0 ;;
    "") ;;
    *) echo "usage: $0 [--background|--wait|--wait-control-plane|--check|--print-bin-dir|--print-sp-bin-dir|--print-kueue-dir|--print-helm|--print-trainer-dir]" >&2; exit 2 ;;
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

  RUN_START="$(date +%s)"
  # A foreground run measures itself; a background one keeps the start `--background` wrote.
  [[ -n "${TRAINOP_TESTENV_BACKGROUND:-}" && -f "$RUN_START_FILE" ]] || echo "$RUN_START" >"$RUN_START_FILE"
  RUN_START="$(cat "$RUN_START_FILE")"
  if [[ -z "$(missing "${ALL_BINS[@]}")" ]]; then say "all binaries present"; table "$RUN_START"; exit 0; fi

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
    record "$label" "$(( $(date +%s) - t0 ))" "$(dirname "$dest")"
    say "$label: done in $(( $(date +%s) - t0 ))s"
  }

  # `go install <pkg>@<version>`: the module's own go.mod and go.sum (checked against the checksum
  # database) are the pin, so no tools module is needed when the module has no replace directives.
  goinstall() {  # label ldflags dest-dir package@version total-packages
    local label="$1" ldflags="$2" dest="$3" pkg="$4"
    local tmp t0
    t0=$(date +%s)
    tmp="$(mktemp -d "$KEY_DIR/.tmp-$label.XXXXXX")"
    say "$label: go install $pkg"
    if ! (cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS="${GOFLAGS:-}" \
        go install -v -trimpath -ldflags "$ldflags" "$pkg" 2>&1) | progress "$label" "$5"; then
      say "$label: build FAILED"; exit 1
    fi
    mkdir -p "$dest" && mv -f "$tmp"/* "$dest/" && rmdir "$tmp"
    record "$label" "$(( $(date +%s) - t0 ))" "$(dirname "$dest")"
    say "$label: done in $(( $(date +%s) - t0 ))s"
  }

  T0=$(date +%s)
  say "cache: $BIN_DIR"

  if [[ -n "$(missing trainer-manifests)" ]]; then
    # First, as it takes seconds: the k8s tier's TrainJob tests install upstream's own CRDs. The module
    # zip is checked against the checksum database by `go mod download`; only the YAML is kept.
    trainer_src="$(cd "$KEY_DIR" && go mod download -json "github.com/kubeflow/trainer/v2@$KUBEFLOW_TRAINER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -d "$trainer_src/manifests/base/crds" ]] || { say "trainer: no manifests/base/crds in $trainer_src"; exit 1; }
    rm -rf "$TRAINER_DIR.tmp" && mkdir -p "$TRAINER_DIR.tmp/crds" "$TRAINER_DIR.tmp/examples"
    cp "$trainer_src"/manifests/base/crds/trainer.kubeflow.org_*.yaml "$TRAINER_DIR.tmp/crds/"
    cp -r "$trainer_src/manifests/base/runtimes" "$TRAINER_DIR.tmp/runtimes"
    cp "$trainer_src"/examples/yaml/*.yaml "$TRAINER_DIR.tmp/examples/"
    chmod -R u+w "$TRAINER_DIR.tmp" && mv "$TRAINER_DIR.tmp" "$TRAINER_DIR"
    say "kubeflow trainer manifests: $TRAINER_DIR"
  fi

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

  if [[ -n "$(missing kueue)" ]]; then
    # Same stamp as Kueue's Makefile (LD_FLAGS: pkg/version.GitVersion); the manager logs it at start
    # ("Initializing ... gitVersion") and the Kueue tests print it in their header.
    goinstall kueue "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" "$KUEUE_DIR/bin" \
      "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION" 1630
  fi

  if [[ -n "$(missing kueue-config)" ]]; then
    # Its CRDs (conversion strategy None: no conversion webhook needed) and its webhook manifests,
    # which the tests register with a URL clientConfig on 127.0.0.1 (trainop.testing.kueue).
    kueue_src="$(cd "$KEY_DIR" && go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    rm -rf "$KUEUE_CONFIG.tmp" && mkdir -p "$KUEUE_CONFIG.tmp/crd" "$KUEUE_CONFIG.tmp/webhook"
    cp "$kueue_src"/config/components/crd/bases/*.yaml "$KUEUE_CONFIG.tmp/crd/"
    cp "$kueue_src"/config/components/webhook/manifests.yaml "$KUEUE_CONFIG.tmp/webhook/"
    chmod -R u+w "$KUEUE_CONFIG.tmp" && mv "$KUEUE_CONFIG.tmp" "$KUEUE_CONFIG"
    say "kueue config: $KUEUE_CONFIG"
  fi

  if [[ -n "$(missing helm)" ]]; then
    # Upstream's Makefile stamps the version, and the Kubernetes minor its client-go is (client-go
    # v0.X -> 1.X: what `.Capabilities.KubeVersion` defaults to for `helm template`).
    helm_gomod="$(cd "$KEY_DIR" && go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
    cg_minor="$(awk '$1 == "k8s.io/client-go" {split($2, v, "."); print v[2]}' "$helm_gomod")"
    ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
    for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
      ld+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$cg_minor"
    done
    goinstall helm "$ld" "$HELM_BIN_DIR" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" 970
  fi

  say "all built in $(( $(date +%s) - T0 ))s"
  table "$RUN_START"
}

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
main "$@"; exit $?  # on one line: bash never reads past it, even if the file changed meanwhile
