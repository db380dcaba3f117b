#!/usr/bin/env bash
# Builds the pinned control-plane binaries used by hack/local-up.sh and the
# end-to-end tests into _output/bin:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
#   kubelet, kube-proxy                                                (k8s.io/kubernetes)
#   etcd, etcdctl                                                      (go.etcd.io/etcd)
#   kwok                                                               (sigs.k8s.io/kwok)
#   kube-scheduler-plugins  a second scheduler with the coscheduling plugin
#                           (sigs.k8s.io/scheduler-plugins cmd/scheduler; not built
#                           with LOCAL_SCHEDULER_PLUGINS=0)
#   kueue                   Kueue's manager (sigs.k8s.io/kueue cmd/kueue; not built
#                           with LOCAL_KUEUE=0). Cold: about 2.5 min on 2 idle cores,
#                           6 on busy ones, 1.9 GB of build cache (its k8s.io/* are
#                           v0.34: little is shared with the other binaries)
#   helm                    helm.sh/helm/v3 (hack/tools/helm): lints and renders the
#                           chart in test/deploy, packs nothing (hack/release.sh does),
#                           installs it in the install test
#   prometheus, promtool    github.com/prometheus/prometheus (hack/tools/prometheus): a real
#                           Prometheus for the e2e test TestMonitoring, promtool for the alert
#                           rules' unit tests. Only the kubernetes, file, http and static service
#                           discovery (tags remove_all_sd,enable_kubernetes_sd) and no web UI (no
#                           builtinassets: the module ships no UI assets; the HTTP API works).
#                           Measured on 2 cores: 3m32s with empty module and build caches
#                           (prometheus 3m26s, of which about 20 s download its 179 modules,
#                           1.1 GB; then promtool 6s), 3m00s with the cache the other binaries
#                           leave (its x/net, grpc, otel are newer than the main module's, so
#                           little is shared); 1.5 GB of memory at most, 1.2 GB of build cache;
#                           109 MB and 77 MB
# Kubernetes' six are one go build (hack/lib/build.sh's build_group): the
# real nodes' kubelet and kube-proxy come from here too, and
# hack/build-node-binaries.sh, run beside this script, waits for them.
#
# With --stack, only what the local stack runs (make run, make local-up):
# etcd, kwok and Kubernetes' six; kube-scheduler-plugins and kueue only
# when LOCAL_SCHEDULER_PLUGINS=1 or LOCAL_KUEUE=1 ask for them, or when they
# are built already (a stack without them built starts without them, and
# says how to add them). make test builds everything.
#
# With names (hack/build-test-binaries.sh etcd, ... kubectl helm), only those:
# what one suite or the release needs.
#
# Each binary is built from a small tools module under hack/tools/ and skipped
# when _output/bin/.<name>.version says it is already built from the same
# pinned inputs (hack/lib/build.sh, which also keeps go's output in
# _output/logs/build and reports progress). One compile at a time here: a
# kube binary needs about 3 GB of memory. make runs this script beside
# hack/build-node-binaries.sh, after our own binaries (the Makefile's
# stack-build and test-build): two compiles at most.
set -euo pipefail

stack_only=0
only=()
case "${1:-}" in
  --stack) stack_only=1 ;;
  "") ;;
  -*) echo "usage: $0 [--stack | NAME...]" >&2; exit 1 ;;
  *) only=("$@") ;;
esac
# Asked for by name (the settings below fill in defaults).
asked_kueue="${LOCAL_KUEUE:-}"
asked_scheduler_plugins="${LOCAL_SCHEDULER_PLUGINS:-}"

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=hack/lib/build.sh
source "${REPO_ROOT}/hack/lib/build.sh"
# shellcheck source=hack/lib/local.sh
source "${REPO_ROOT}/hack/lib/local.sh"

command -v go >/dev/null 2>&1 || die "go is not on PATH"
mkdir -p "${BIN_DIR}"

# The tools modules carry a complete go.sum; -mod=mod lets go fill in anything
# missing instead of failing. Build caches stay in the default Go locations.
export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-mod=mod"
export CGO_ENABLED="${CGO_ENABLED:-0}"

# wanted NAME ASKED ENABLED: whether an optional binary is built.
wanted() {
  local name="$1" asked="$2" enabled="$3"
  [[ "${enabled}" == 1 ]] || return 1
  ((stack_only == 0)) || [[ "${asked}" == 1 ]] || [[ -x "${BIN_DIR}/${name}" ]]
}
want_scheduler_plugins=0
wanted kube-scheduler-plugins "${asked_scheduler_plugins}" "${LOCAL_SCHEDULER_PLUGINS}" && want_scheduler_plugins=1
want_kueue=0
wanted kueue "${asked_kueue}" "${LOCAL_KUEUE}" && want_kueue=1

build_total=7
((stack_only)) && build_total=3
asks_kubernetes=0
((want_scheduler_plugins)) && build_total=$((build_total + 1))
((want_kueue)) && build_total=$((build_total + 1))

# The names asked for, each built whatever the settings say; nothing else.
if ((${#only[@]})); then
  all=" etcd etcdctl kwok ${KUBE_COMMANDS[*]} helm prometheus promtool kube-scheduler-plugins kueue "
  for name in "${only[@]}"; do
    [[ "${all}" == *" ${name} "* ]] || die "no test binary named ${name}; these are:${all% }"
  done
  build_total=0 want_scheduler_plugins=1 want_kueue=1
  for name in "${only[@]}"; do
    if [[ " ${KUBE_COMMANDS[*]} " == *" ${name} "* ]]; then asks_kubernetes=1; else build_total=$((build_total + 1)); fi
  done
  build_total=$((build_total + asks_kubernetes))
fi
# build NAME ...: build_one (hack/lib/build.sh), for a name asked for.
build() {
  ((${#only[@]} == 0)) || [[ " ${only[*]} " == *" $1 "* ]] || return 0
  build_one "$@"
}
what="test binaries"
((${#only[@]} == 0)) || what="${only[*]}"
log "building ${what} into ${BIN_DIR#"${REPO_ROOT}/"} (kubernetes ${KUBE_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION}, scheduler-plugins ${SCHEDULER_PLUGINS_VERSION}, kueue ${KUEUE_VERSION}, helm ${HELM_VERSION}, prometheus ${PROMETHEUS_VERSION})"

build etcd "${ETCD_VERSION}" "${TOOLS_DIR}/etcd" go.etcd.io/etcd/server/v3
((stack_only)) || build etcdctl "${ETCD_VERSION}" "${TOOLS_DIR}/etcd" go.etcd.io/etcd/etcdctl/v3
build kwok "${KWOK_VERSION}" "${TOOLS_DIR}/kwok" sigs.k8s.io/kwok/cmd/kwok
# Any of Kubernetes' six asked for builds them all: one go build.
if ((${#only[@]} == 0 || asks_kubernetes)); then
  build_kubernetes
fi
if ((stack_only == 0)); then
  build helm "${HELM_VERSION}" "${TOOLS_DIR}/helm" helm.sh/helm/v3/cmd/helm \
    "-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  # Prometheus' module v0.X.Y is its release (X/100).(X%100).Y (v0.316.0 is 3.16.0),
  # the version its release builds stamp. The tags drop every service discovery
  # but kubernetes (file, http and static stay); they are part of the version
  # stamp, so changing them rebuilds.
  prom_minor="${PROMETHEUS_VERSION#v0.}"
  prom_minor="${prom_minor%%.*}"
  prom_release="$((prom_minor / 100)).$((prom_minor % 100)).${PROMETHEUS_VERSION##*.}"
  prom_tags="remove_all_sd,enable_kubernetes_sd"
  for cmd in prometheus promtool; do
    build "${cmd}" "${PROMETHEUS_VERSION}+${prom_tags}" "${TOOLS_DIR}/prometheus" "github.com/prometheus/prometheus/cmd/${cmd}" \
      "-X github.com/prometheus/common/version.Version=${prom_release} -X github.com/prometheus/common/version.BuildDate=1970-01-01T00:00:00Z" \
      "${prom_tags}"
  done
fi
# scheduler-plugins' own release builds set only this version variable.
if ((want_scheduler_plugins == 0)); then
  log "kube-scheduler-plugins: not built (LOCAL_SCHEDULER_PLUGINS=${LOCAL_SCHEDULER_PLUGINS}$(((stack_only)) && echo "; LOCAL_SCHEDULER_PLUGINS=1 builds it"))"
else
  build kube-scheduler-plugins "${SCHEDULER_PLUGINS_VERSION}" "${TOOLS_DIR}/scheduler-plugins" \
    sigs.k8s.io/scheduler-plugins/cmd/scheduler "-X k8s.io/component-base/version.gitVersion=${SCHEDULER_PLUGINS_VERSION}"
fi
# Kueue's release builds set GitVersion, GitCommit and BuildDate; the commit is
# not known from the module, so it keeps its placeholder.
if ((want_kueue == 0)); then
  log "kueue: not built (LOCAL_KUEUE=${LOCAL_KUEUE}$(((stack_only)) && echo "; LOCAL_KUEUE=1 builds it"))"
else
  build kueue "${KUEUE_VERSION}" "${TOOLS_DIR}/kueue" sigs.k8s.io/kueue/cmd/kueue \
    "-X sigs.k8s.io/kueue/pkg/version.GitVersion=${KUEUE_VERSION} -X sigs.k8s.io/kueue/pkg/version.BuildDate=1970-01-01T00:00:00Z"
fi

log "${what} done in $(elapsed): ${built} built, ${skipped} already up to date"
