#!/usr/bin/env bash
# `make test`'s first step: is there room for what it is about to install and write? A disk that
# fills half-way ends the run minutes later with pip's or go's "No space left on device" (a CI run did
# exactly that); this says so at once, with the figures. Sizes measured on a cold run (2026-11-27):
# .venv with every framework extra 9.4 GiB; the Go build and module caches for the test control plane,
# Kueue and Helm 7.1 + 2.4 GiB; the tests' temporary files up to 2.5 GiB.
# TRAINOP_SKIP_DISK_CHECK=1 skips it; TRAINOP_TMP_GIB overrides the temporary files' share.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ "${TRAINOP_SKIP_DISK_CHECK:-}" == 1 ]] && exit 0

declare -A need=() where=()
add() {  # path GiB what
  local dir="$1"
  while [[ ! -d "$dir" ]]; do dir="$(dirname "$dir")"; done
  local dev; dev="$(df -P "$dir" | awk 'NR == 2 {print $6}')"
  need[$dev]=$(( ${need[$dev]:-0} + $2 ))
  where[$dev]="${where[$dev]:+${where[$dev]}, }$3 ${2} GiB"
}

[[ -f .venv/.stamp-extra-finetune ]] || add "$PWD" 10 ".venv (every framework extra)"
if ! hack/testenv/build.sh --check 2>/dev/null; then
  gocache="${GOCACHE:-$(go env GOCACHE 2>/dev/null || echo "$HOME/.cache/go-build")}"
  add "$gocache" 10 "the Go builds (GOCACHE, GOMODCACHE)"
fi
add "${TMPDIR:-/tmp}" "${TRAINOP_TMP_GIB:-3}" "the tests' temporary files"

short=0
for dev in "${!need[@]}"; do
  free=$(df -Pk "$dev" | awk 'NR == 2 {print int($4 / 1048576)}')
  if (( free < need[$dev] )); then
    echo "make test: $dev has ${free} GiB free but needs about ${need[$dev]} GiB (${where[$dev]});" \
      "free some space there, or point TMPDIR, GOCACHE/GOMODCACHE or XDG_CACHE_HOME at a larger disk" \
      "(TRAINOP_SKIP_DISK_CHECK=1 to try anyway)" >&2
    short=1
  fi
done
exit "$short"
