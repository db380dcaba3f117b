#!/usr/bin/env bash
# Builds the pinned control-plane binaries used by hack/local-up.sh and the
# end-to-end tests into _output/bin:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (k8s.io/kubernetes)
#   etcd, etcdctl                                                      (go.etcd.io/etcd)
#   kwok                                                               (sigs.k8s.io/kwok)
#   kube-scheduler-plugins  a second scheduler with the coscheduling plugin
#                           (sigs.k8s.io/scheduler-plugins cmd/scheduler; not built
#                           with LOCAL_SCHEDULER_PLUGINS=0)
#   kueue                   Kueue's manager (sigs.k8s.io/kueue cmd/kueue; not built
#                           with LOCAL_KUEUE=0). Cold: about 2.5 min on 2 idle cores,
#                           6 on busy ones, 1.9 GB of build cache (its k8s.io/* are
#                           v0.34: little is shared with the other binaries)
# Each binary is built from a small tools module under hack/tools/ and skipped
# when _output/bin/.<name>.version says it is already built from the same
# pinned inputs. One compile at a time: a kube binary needs about 3 GB of memory.
set -euo pipefail

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

command -v go >/dev/null 2>&1 || die "go is not on PATH"
mkdir -p "${BIN_DIR}"

# The tools modules carry a complete go.sum; -mod=mod lets go fill in anything
# missing instead of failing. Build caches stay in the default Go locations.
export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-mod=mod"
export CGO_ENABLED="${CGO_ENABLED:-0}"

kube_major="${KUBE_VERSION#v}"
kube_major="${kube_major%%.*}"
kube_minor="${KUBE_VERSION#v*.}"
kube_minor="${kube_minor%%.*}"

kube_ldflags() {
  local flags="" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
    flags+=" -X ${pkg}.gitMajor=${kube_major}"
    flags+=" -X ${pkg}.gitMinor=${kube_minor}"
    flags+=" -X ${pkg}.gitTreeState=clean"
    flags+=" -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
  done
  printf '%s' "${flags# }"
}

# stamp_for prints what the version stamp of a binary built from a tools
# module must contain: the pinned version plus a digest of the module files, so
# editing hack/tools/<module>/go.mod or go.sum triggers a rebuild.
stamp_for() {
  local version="$1" module_dir="$2" digest
  digest="$(cat "${module_dir}/go.mod" "${module_dir}/go.sum" | sha256sum | cut -c1-16)"
  printf '%s %s\n' "${version}" "${digest}"
}

built=0
skipped=0

# build_one NAME VERSION MODULE_DIR PACKAGE [LDFLAGS]
build_one() {
  local name="$1" version="$2" module_dir="$3" pkg="$4" ldflags="${5:-}"
  local out="${BIN_DIR}/${name}" stamp_file="${BIN_DIR}/.${name}.version" want
  want="$(stamp_for "${version}" "${module_dir}")"
  if [[ -x "${out}" && -f "${stamp_file}" && "$(cat "${stamp_file}")" == "${want}" ]]; then
    log "${name} ${version}: already built, skipping"
    skipped=$((skipped + 1))
    return 0
  fi
  log "${name} ${version}: building ${pkg} ..."
  local start=${SECONDS}
  rm -f "${stamp_file}"
  (
    cd "${module_dir}"
    go build -ldflags "${ldflags}" -o "${out}.tmp" "${pkg}"
  ) || die "building ${name} failed"
  mv -f "${out}.tmp" "${out}"
  printf '%s\n' "${want}" >"${stamp_file}"
  log "${name} ${version}: built in $((SECONDS - start))s -> ${out#"${REPO_ROOT}/"}"
  built=$((built + 1))
}

total_start=${SECONDS}
log "building test binaries into ${BIN_DIR#"${REPO_ROOT}/"} (kubernetes ${KUBE_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION}, scheduler-plugins ${SCHEDULER_PLUGINS_VERSION}, kueue ${KUEUE_VERSION})"

build_one etcd "${ETCD_VERSION}" "${TOOLS_DIR}/etcd" go.etcd.io/etcd/server/v3
build_one etcdctl "${ETCD_VERSION}" "${TOOLS_DIR}/etcd" go.etcd.io/etcd/etcdctl/v3
build_one kwok "${KWOK_VERSION}" "${TOOLS_DIR}/kwok" sigs.k8s.io/kwok/cmd/kwok
ldflags="$(kube_ldflags)"
for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  build_one "${cmd}" "${KUBE_VERSION}" "${TOOLS_DIR}/kube" "k8s.io/kubernetes/cmd/${cmd}" "${ldflags}"
done
# scheduler-plugins' own release builds set only this version variable.
if [[ "${LOCAL_SCHEDULER_PLUGINS:-1}" == "0" ]]; then
  log "kube-scheduler-plugins: not built (LOCAL_SCHEDULER_PLUGINS=0)"
else
  build_one kube-scheduler-plugins "${SCHEDULER_PLUGINS_VERSION}" "${TOOLS_DIR}/scheduler-plugins" \
    sigs.k8s.io/scheduler-plugins/cmd/scheduler "-X k8s.io/component-base/version.gitVersion=${SCHEDULER_PLUGINS_VERSION}"
fi
# Kueue's release builds set GitVersion, GitCommit and BuildDate; the commit is
# not known from the module, so it keeps its placeholder.
if [[ "${LOCAL_KUEUE:-1}" == "0" ]]; then
  log "kueue: not built (LOCAL_KUEUE=0)"
else
  build_one kueue "${KUEUE_VERSION}" "${TOOLS_DIR}/kueue" sigs.k8s.io/kueue/cmd/kueue \
    "-X sigs.k8s.io/kueue/pkg/version.GitVersion=${KUEUE_VERSION} -X sigs.k8s.io/kueue/pkg/version.BuildDate=1970-01-01T00:00:00Z"
fi

log "done in $((SECONDS - total_start))s: ${built} built, ${skipped} already up to date"
