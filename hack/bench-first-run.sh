#!/usr/bin/env bash
# Measures a newcomer's first `make run` the way docs/benchmarks.md says a
# fresh machine is (make bench-first-run):
#   1. the Debian packages the project installs by itself are purged, with
#      what only they pulled in, and apt's cache is emptied (apt-get clean);
#   2. a clean clone of this checkout's HEAD, run with a new empty HOME (so
#      empty Go module, build and npm caches);
#   3. `make run` in the clone, timed until it prints that the stack is ready;
#   4. artifacts/examples/pytorch-ddp.yaml applied, timed until Succeeded;
#   5. make run stopped with SIGINT, as Ctrl-C stops it, and the real nodes'
#      network namespaces checked gone.
# It prints make run's lines stamped with the seconds since it started, the
# phases read from them, and the CPU the machine spent. Nothing else should run
# on the machine meanwhile. Run as root (it purges packages; the real nodes
# need root anyway).
#
# With --ci, steps 3 to 5 are CI's instead: .ci/run in the clone (what a fresh
# machine lacks, then make test), timed to its end, with make test's table.
#
#   BENCH_DIR    where the clone and the HOME go (default /tmp/first-run);
#                removed first; afterwards only its logs stay (the clone and
#                the HOME hold tens of GB)
#   BENCH_KEEP   1 keeps the clone and the HOME too
#   BENCH_PURGE  0 keeps the Debian packages and apt's cache (not from zero)
set -euo pipefail

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

mode=run
case "${1:-}" in
  --ci) mode=ci ;;
  "") ;;
  *) die "usage: $0 [--ci]" ;;
esac
[[ "$(id -u)" == 0 ]] || die "the first run is measured as root: it purges Debian packages, and the real nodes need root"
dir="${BENCH_DIR:-/tmp/first-run}"
clone="${dir}/training"
home="${dir}/home"
# What the project's scripts install from Debian by themselves (hack/lib/packages.sh's callers on make run's path).
packages=(libseccomp-dev iptables conntrack debootstrap python3-build python3-hatchling)
# And on make test's (.ci/run's Python test packages, protoc, the browser tests' Chromium).
[[ "${mode}" != ci ]] || packages+=(python3-kubernetes python3-pytest python3-ipython protobuf-compiler chromium)

if [[ "${BENCH_PURGE:-1}" != 0 ]]; then
  log "purging ${packages[*]} (and what only they pulled in), then apt-get clean"
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -q --autoremove "${packages[@]}" >/dev/null
  apt-get clean
fi
rm -rf "${dir}"
mkdir -p "${home}"
# remove_clone frees the disk the measured run filled (caches, images, the
# nodes' root filesystems), leaving the logs in ${dir}.
remove_clone() {
  [[ "${BENCH_KEEP:-0}" == 1 ]] || rm -rf "${clone}" "${home}"
}
git clone -q "${REPO_ROOT}" "${clone}"
log "measuring make run in ${clone} at $(git -C "${clone}" rev-parse --short HEAD), HOME=${home}"

cd "${clone}"
export HOME="${home}" PATH="/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
unset GOPATH GOMODCACHE GOCACHE GOFLAGS

if [[ "${mode}" == ci ]]; then
  ci_log="${dir}/ci-run.log"
  start=${SECONDS}
  rc=0
  CI=true .ci/run >"${ci_log}" 2>&1 </dev/null || rc=$?
  seconds=$((SECONDS - start))
  cd "${dir}"
  remove_clone
  sed -n '/^make test: phases/,$p' "${ci_log}"
  echo "# .ci/run from zero, $(date -u +%Y-%m-%d) at $(git rev-parse --short HEAD): exit ${rc} after ${seconds} s ($((seconds / 60)) min $((seconds % 60)) s); log: ${ci_log}"
  exit "${rc}"
fi
run_log="${dir}/make-run.log"
read -r _ user0 nice0 system0 idle0 _ </proc/stat
start=${SECONDS}
# Its own process group, so that the SIGINT reaches make and what it runs, as Ctrl-C would.
setsid make run >"${run_log}" 2>&1 </dev/null &
run_pid=$!
stop_run() {
  kill -INT -- "-${run_pid}" 2>/dev/null || true
  wait "${run_pid}" 2>/dev/null || true
}
trap 'stop_run; cd "${dir}"; remove_clone' EXIT

# stamped prints make run's lines so far with the seconds at which each was written (their [HH:MM:SS] stamps).
stamped() {
  local t0
  t0="$(date -d "@${epoch0}" +%s)"
  awk -v t0="${t0}" '
    /^\[[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\]/ {
      split(substr($1, 2, 8), h, ":"); t = h[1] * 3600 + h[2] * 60 + h[3]; s = t - (t0 % 86400); if (s < 0) s += 86400
      printf "%5d  %s\n", s, $0; next
    }
    { printf "       %s\n", $0 }' "${run_log}"
}
epoch0="$(date +%s)"
while ! grep -q 'local stack ready in' "${run_log}"; do
  kill -0 "${run_pid}" 2>/dev/null || { tail -n 40 "${run_log}" >&2; die "make run ended before the stack was ready (log: ${run_log})"; }
  sleep 1
done
ready=$((SECONDS - start))
read -r _ user1 nice1 system1 idle1 _ </proc/stat
log "ready after ${ready}s"

export KUBECONFIG="${clone}/_output/local/kubeconfig"
kubectl="${clone}/_output/bin/kubectl"
"${kubectl}" apply -f artifacts/examples/pytorch-ddp.yaml >/dev/null
"${kubectl}" wait --for=jsonpath='{.status.phase}'=Succeeded pj/pytorch-ddp --timeout=10m >/dev/null
trained=$((SECONDS - start - ready))
log "the DDP example Succeeded ${trained}s after ready"

stop_run
trap 'cd "${dir}"; remove_clone' EXIT
# make run's Ctrl-C removes the real nodes' network namespaces (tsnet-*, tsnode-*); say so if any stayed.
left="$(ip netns list 2>/dev/null | grep -E '^ts(net|node)-' || true)"
[[ -z "${left}" ]] || log "WARNING: network namespaces left after make run stopped: ${left//$'\n'/ }"
hz="$(getconf CLK_TCK)"
stamped | grep -v 'still building' | grep -v '^       go: downloading' >"${dir}/make-run.stamped"
cat <<EOF
# make run from zero, $(date -u +%Y-%m-%d) at $(git rev-parse --short HEAD)
ready:              ${ready} s
DDP Succeeded:      ${trained} s after ready
CPU until ready:    user $(((user1 + nice1 - user0 - nice0) / hz)) s, system $(((system1 - system0) / hz)) s, idle $(((idle1 - idle0) / hz)) s ($(nproc) CPUs)
stamped log:        ${dir}/make-run.stamped
EOF
