#!/usr/bin/env bash
# Builds the real node of the local stack into _output/bin, each from a
# tools module under hack/tools pinned to the version in hack/lib/common.sh:
#   containerd, ctr, containerd-shim-runc-v2   containerd (tools/containerd)
#   runc                                       runc, with seccomp (tools/runc; cgo, libseccomp)
#   kubelet, kube-proxy                        Kubernetes (tools/kube: one go build with the
#                                              control plane's four, whichever script asks first)
#   coredns                                    CoreDNS with the plugins it needs (tools/coredns)
#   cni/bridge, cni/host-local, cni/loopback, cni/portmap   CNI plugins (tools/cni)
#   registry                                   CNCF Distribution (tools/registry): the stack's image registry
#   local-path-provisioner                     Rancher's (tools/local-path-provisioner): its StorageClass
#   nodeproxy, pause                           this repository (test/localnode/nodeproxy, hack/images/pause)
# and then the node's images (hack/build-node-images.sh). Skips what is already
# built (hack/lib/build.sh); one compile at a time. Where the real node
# cannot run (not root, no cgroup v1, ...) or LOCAL_REAL_NODE=0, it says so in
# one line and builds nothing: the local stack then runs kwok nodes only. Under
# CI=true or REQUIRE_REAL_NODES=1 that is a failure instead.
set -euo pipefail

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=hack/lib/build.sh
source "${REPO_ROOT}/hack/lib/build.sh"
# shellcheck source=hack/lib/packages.sh
source "${REPO_ROOT}/hack/lib/packages.sh"
# shellcheck source=hack/lib/local.sh
source "${REPO_ROOT}/hack/lib/local.sh"

real_nodes_or_skip node
# --check: only the line above, where real nodes do not run (make run says it first).
[[ "${1:-}" != --check ]] || exit 0

command -v go >/dev/null 2>&1 || die "go is not on PATH"
# runc links libseccomp: the kubelet asks for the RuntimeDefault seccomp
# profile for every sandbox, which a runc without seccomp refuses.
require_packages "the real node" libseccomp-dev:/usr/include/seccomp.h iptables:iptables conntrack:conntrack \
  debootstrap:debootstrap
export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-mod=mod"

build_total=14
log "building the real node into ${BIN_DIR#"${REPO_ROOT}/"} (containerd ${CONTAINERD_VERSION}, runc ${RUNC_VERSION}, kubelet ${KUBE_VERSION}, CoreDNS ${COREDNS_VERSION}, CNI plugins ${CNI_PLUGINS_VERSION})"

containerd_tags="no_btrfs no_devmapper no_zfs"
containerd_ldflags="-X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION}"
build_one containerd "${CONTAINERD_VERSION}" "${TOOLS_DIR}/containerd" github.com/containerd/containerd/v2/cmd/containerd \
  "${containerd_ldflags}" "${containerd_tags}"
build_one ctr "${CONTAINERD_VERSION}" "${TOOLS_DIR}/containerd" github.com/containerd/containerd/v2/cmd/ctr \
  "${containerd_ldflags}" "${containerd_tags}"
build_one containerd-shim-runc-v2 "${CONTAINERD_VERSION}" "${TOOLS_DIR}/containerd" \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "${containerd_ldflags}" "${containerd_tags}"
build_one runc "${RUNC_VERSION}" "${TOOLS_DIR}/runc" github.com/opencontainers/runc \
  "-X main.version=${RUNC_VERSION#v}" "seccomp urfave_cli_no_docs" 1
build_one coredns "${COREDNS_VERSION}" "${TOOLS_DIR}/coredns" . \
  "-X github.com/coredns/coredns/coremain.GitCommit=${COREDNS_VERSION}"
for plugin in ipam/host-local main/bridge main/loopback meta/portmap; do
  build_one "cni/${plugin##*/}" "${CNI_PLUGINS_VERSION}" "${TOOLS_DIR}/cni" "github.com/containernetworking/plugins/plugins/${plugin}"
done
build_one registry "${REGISTRY_VERSION}" "${TOOLS_DIR}/registry" .
build_one local-path-provisioner "${LOCAL_PATH_PROVISIONER_VERSION}" "${TOOLS_DIR}/local-path-provisioner" \
  github.com/rancher/local-path-provisioner
# This repository's: the pause image's binary (static), and the bridge
# between the host's loopback and the node's network namespace. Their
# stamps are digests of their sources, so an edit rebuilds them.
build_one pause "$(sha256sum "${REPO_ROOT}/hack/images/pause/main.go" | cut -c1-12)" "${REPO_ROOT}" ./hack/images/pause
nodeproxy_version="$(cat "${REPO_ROOT}"/test/localnode/nodeproxy/*.go "${REPO_ROOT}"/test/internal/netns/*.go | sha256sum | cut -c1-12)"
build_one nodeproxy "${nodeproxy_version}" "${REPO_ROOT}" ./test/localnode/nodeproxy

# Last: make builds the stack's binaries beside these, Kubernetes' six in one
# go build; this waits for that build, or builds them where it runs alone.
build_kubernetes
log "real node built in $(elapsed): ${built} built, ${skipped} already up to date"
"${REPO_ROOT}/hack/build-node-images.sh"
