#!/usr/bin/env bash
# Shared by the hack/bench-*.sh scripts: where results go, building the
# benchmark programs, the peers' modules (Kubeflow's training-operator,
# JobSet).
# Source it after hack/lib/common.sh and hack/lib/local.sh.
# shellcheck disable=SC2034

BENCH_DIR="${OUTPUT_DIR}/bench"
BENCH_BIN_DIR="${BENCH_DIR}/bin"

# Kubeflow's training-operator: its TFJob CRD is the CRD next to which our
# API is measured, and its controller the peer of ours.
TRAINING_OPERATOR_MODULE="github.com/kubeflow/training-operator"
TRAINING_OPERATOR_VERSION="v1.9.4"
TRAINING_OPERATOR_BIN="${BIN_DIR}/training-operator.v1"

# JobSet: a second peer of make bench-wide, whose Jobs kube-controller-manager
# turns into pods.
JOBSET_MODULE="sigs.k8s.io/jobset"
JOBSET_VERSION="v0.12.0"
JOBSET_BIN="${BIN_DIR}/jobset"
# The module JobSet is built in, kept as a cache of its go.sum.
JOBSET_BUILD_DIR="${OUTPUT_DIR}/jobset-build"

# bench_build NAME PACKAGE: builds a benchmark program into BENCH_BIN_DIR,
# before the stack starts (the build competes for the same CPUs).
bench_build() {
  local name="$1" pkg="$2"
  mkdir -p "${BENCH_BIN_DIR}"
  log "building ${pkg} into ${BENCH_BIN_DIR#"${REPO_ROOT}/"}/${name}"
  (cd "${REPO_ROOT}" && go build -o "${BENCH_BIN_DIR}/${name}" "${pkg}")
}

# training_operator_dir prints the training-operator module's directory in the
# Go module cache, downloading it from the module proxy when missing. The
# module is not a dependency of ours: go.mod is left alone.
training_operator_dir() {
  local dir
  dir="$(go_mod_cache)/${TRAINING_OPERATOR_MODULE}@${TRAINING_OPERATOR_VERSION}"
  if [[ ! -f "${dir}/go.mod" ]]; then
    dir="$(cd "${REPO_ROOT}" && go mod download -json "${TRAINING_OPERATOR_MODULE}@${TRAINING_OPERATOR_VERSION}" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" || true
  fi
  [[ -n "${dir}" && -f "${dir}/go.mod" ]] ||
    die "${TRAINING_OPERATOR_MODULE}@${TRAINING_OPERATOR_VERSION} could not be downloaded (Go module proxy)"
  printf '%s\n' "${dir}"
}

# kubeflow_crd RESOURCE prints the path of Kubeflow's CRD of RESOURCE
# (tfjobs, pytorchjobs) in the module.
kubeflow_crd() {
  local crd
  crd="$(training_operator_dir)/manifests/base/crds/kubeflow.org_$1.yaml"
  [[ -f "${crd}" ]] || die "${crd} is missing"
  printf '%s\n' "${crd}"
}

# crd_established NAME: the CRD NAME is served.
crd_established() {
  [[ "$(kubectl_local get crd "$1" \
    -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" == "True" ]]
}

# install_crd FILE NAME: a CRD, server-side (the peers' CRDs are too big for
# the last-applied annotation); waits until NAME is served.
install_crd() {
  kubectl_local apply --server-side -f "$1" >/dev/null
  wait_until "" "CRD $2 Established" "${LOCAL_TIMEOUT}" crd_established "$2"
}

# install_kubeflow_crd RESOURCE: Kubeflow's CRD of RESOURCE.
install_kubeflow_crd() {
  local resource="$1"
  log "installing Kubeflow's ${resource} CRD (${TRAINING_OPERATOR_MODULE}@${TRAINING_OPERATOR_VERSION})"
  install_crd "$(kubeflow_crd "${resource}")" "${resource}.kubeflow.org"
}

# build_training_operator: go install of the peer controller into BIN_DIR,
# skipped when the stamp says it is built at the pinned version.
build_training_operator() {
  local stamp="${BIN_DIR}/.training-operator.v1.version"
  if [[ -x "${TRAINING_OPERATOR_BIN}" && "$(cat "${stamp}" 2>/dev/null)" == "${TRAINING_OPERATOR_VERSION}" ]]; then
    return 0
  fi
  log "building training-operator ${TRAINING_OPERATOR_VERSION} (go install; a few minutes cold)"
  mkdir -p "${BIN_DIR}"
  GOBIN="${BIN_DIR}" go install "${TRAINING_OPERATOR_MODULE}/cmd/training-operator.v1@${TRAINING_OPERATOR_VERSION}"
  echo "${TRAINING_OPERATOR_VERSION}" >"${stamp}"
}

# jobset_module: the throwaway module JobSet is built in. go install
# MODULE@VERSION asks the proxy for the module's version list (for its
# deprecation notice), which the proxy refuses for this module; go get of a
# pinned version into a module of our own does not.
jobset_module() {
  mkdir -p "${JOBSET_BUILD_DIR}"
  if [[ ! -f "${JOBSET_BUILD_DIR}/go.mod" ]]; then
    printf 'module jobsetbuild\n\ngo 1.26\n' >"${JOBSET_BUILD_DIR}/go.mod"
  fi
  printf '//go:build tools\n\n// Package tools pins JobSet for go build.\npackage tools\n\nimport _ "%s"\n' \
    "${JOBSET_MODULE}" >"${JOBSET_BUILD_DIR}/tools.go"
  if ! (cd "${JOBSET_BUILD_DIR}" && GOWORK=off go list -m "${JOBSET_MODULE}" 2>/dev/null) | grep -qx "${JOBSET_MODULE} ${JOBSET_VERSION}"; then
    (cd "${JOBSET_BUILD_DIR}" && GOWORK=off go get "${JOBSET_MODULE}@${JOBSET_VERSION}") ||
      die "go get ${JOBSET_MODULE}@${JOBSET_VERSION} failed (Go module proxy)"
  fi
}

# jobset_dir prints JobSet's module directory in the Go module cache.
jobset_dir() {
  local dir
  jobset_module
  dir="$(cd "${JOBSET_BUILD_DIR}" && GOWORK=off go list -m -f '{{.Dir}}' "${JOBSET_MODULE}")"
  [[ -n "${dir}" && -f "${dir}/go.mod" ]] || die "${JOBSET_MODULE}@${JOBSET_VERSION} is not in the module cache"
  printf '%s\n' "${dir}"
}

# jobset_crd prints the path of JobSet's CRD in its module.
jobset_crd() {
  local crd
  crd="$(jobset_dir)/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
  [[ -f "${crd}" ]] || die "${crd} is missing"
  printf '%s\n' "${crd}"
}

# build_jobset: JobSet's manager into BIN_DIR, skipped when the stamp says it
# is built at the pinned version (about 5 minutes cold on 2 cores).
build_jobset() {
  local stamp="${BIN_DIR}/.jobset.version"
  if [[ -x "${JOBSET_BIN}" && "$(cat "${stamp}" 2>/dev/null)" == "${JOBSET_VERSION}" ]]; then
    return 0
  fi
  log "building JobSet ${JOBSET_VERSION} (in ${JOBSET_BUILD_DIR#"${REPO_ROOT}/"}; about 5 minutes cold)"
  jobset_module
  mkdir -p "${BIN_DIR}"
  (cd "${JOBSET_BUILD_DIR}" && GOWORK=off go build -o "${JOBSET_BIN}" "${JOBSET_MODULE}")
  echo "${JOBSET_VERSION}" >"${stamp}"
}

# free_port FROM: prints the first TCP port from FROM on that nothing listens on.
free_port() {
  local port="$1"
  while port_in_use "${port}"; do
    port=$((port + 1))
  done
  echo "${port}"
}
