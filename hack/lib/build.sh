#!/usr/bin/env bash
# Builds pinned binaries from the tools modules under hack/tools, for
# hack/build-test-binaries.sh and hack/build-node-binaries.sh. Source it
# after hack/lib/common.sh.
#
# Each binary is skipped when _output/bin/.<name>.version says it is built
# from the same pinned inputs. go's own output (a cold build prints hundreds
# of "go: downloading" lines) goes to _output/logs/build/<name>.log; the
# terminal gets one line per binary, "[i/n]" with the time so far, and a
# line every 30 s while a long compile runs, so a cold build never looks hung.
# shellcheck disable=SC2034

BUILD_LOG_DIR="${OUTPUT_DIR}/logs/build"
# Set by the caller before the first build_one: how many binaries it builds.
build_total=0
build_index=0
built=0
skipped=0
build_start=${SECONDS}

# stamp_for prints what the version stamp of a binary built from a tools
# module must contain: the pinned version plus a digest of the module files
# (and of any extra files given, such as a main.go), so editing them
# triggers a rebuild.
stamp_for() {
  local version="$1" module_dir="$2" digest
  shift 2
  digest="$(cat "${module_dir}/go.mod" "${module_dir}/go.sum" "$@" | sha256sum | cut -c1-16)"
  printf '%s %s\n' "${version}" "${digest}"
}

# elapsed prints the time since the first build started, as 3m05s.
elapsed() {
  local s=$((SECONDS - build_start))
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# build_one NAME VERSION MODULE_DIR PACKAGE [LDFLAGS [TAGS [CGO]]]
# Links without the symbol table and DWARF, as the Makefile does (half the
# link time); DBG=1 keeps them.
build_one() {
  local name="$1" version="$2" module_dir="$3" pkg="$4" ldflags="${5:-}" tags="${6:-}" cgo="${7:-${CGO_ENABLED:-0}}"
  [[ "${DBG:-0}" == 1 ]] || ldflags="-s -w${ldflags:+ ${ldflags}}"
  local out="${BIN_DIR}/${name}" want extra=()
  build_index=$((build_index + 1))
  [[ -f "${module_dir}/main.go" ]] && extra=("${module_dir}/main.go")
  want="$(stamp_for "${version}" "${module_dir}" "${extra[@]}")"
  if stamped_binary "${name}" "${want}"; then
    log "[${build_index}/${build_total}] ${name} ${version}: already built"
    skipped=$((skipped + 1))
    return 0
  fi
  mkdir -p "$(dirname "${out}")" "$(dirname "${BIN_DIR}/.${name}.version")"
  rm -f "${BIN_DIR}/.${name}.version"
  run_go_build "${name}" "${version}" "${pkg}" "${module_dir}" \
    env CGO_ENABLED="${cgo}" go build -trimpath ${tags:+-tags "${tags}"} -ldflags "${ldflags}" -o "${out}.tmp" "${pkg}"
  mv -f "${out}.tmp" "${out}"
  printf '%s\n' "${want}" >"${BIN_DIR}/.${name}.version"
  log "[${build_index}/${build_total}] ${name} ${version}: built in ${run_seconds}s -> ${out#"${REPO_ROOT}/"}"
  built=$((built + 1))
}

# build_group GROUP VERSION MODULE_DIR LDFLAGS PACKAGE...
# Builds the commands PACKAGE... of one tools module in one go build, each
# into BIN_DIR under its package's last element (kubelet, kube-proxy, ...):
# go compiles the packages they share once and links them side by side, where
# builds of one command each, run beside each other (make's stack-binaries and
# node), compiled what they share twice before either had cached it. One step
# of the progress count. Under a lock: the script that comes second waits for
# the first, then finds the group built.
build_group() {
  local group="$1" version="$2" module_dir="$3" ldflags="$4"
  shift 4
  [[ "${DBG:-0}" == 1 ]] || ldflags="-s -w${ldflags:+ ${ldflags}}"
  local pkgs=("$@") names=() pkg name want tmp lock
  for pkg in "${pkgs[@]}"; do names+=("${pkg##*/}"); done
  build_index=$((build_index + 1))
  want="$(stamp_for "${version}" "${module_dir}")"
  mkdir -p "${BIN_DIR}"
  exec {lock}>"${BIN_DIR}/.${group}.lock"
  if ! flock -n "${lock}"; then
    log "[${build_index}/${build_total}] ${group}: waiting for the build of ${names[*]} beside this one"
    flock "${lock}"
  fi
  if group_built "${want}" "${names[@]}"; then
    log "[${build_index}/${build_total}] ${group} ${version} (${names[*]}): already built"
    skipped=$((skipped + 1))
    exec {lock}>&-
    return 0
  fi
  for name in "${names[@]}"; do rm -f "${BIN_DIR}/.${name}.version"; done
  tmp="$(mktemp -d "${BIN_DIR}/.${group}-XXXX")"
  run_go_build "${group}" "${version}" "${names[*]}" "${module_dir}" \
    go build -trimpath -ldflags "${ldflags}" -o "${tmp}/" "${pkgs[@]}"
  for name in "${names[@]}"; do
    mv -f "${tmp}/${name}" "${BIN_DIR}/${name}"
    printf '%s\n' "${want}" >"${BIN_DIR}/.${name}.version"
  done
  rmdir "${tmp}"
  exec {lock}>&-
  log "[${build_index}/${build_total}] ${group} ${version}: built ${names[*]} in ${run_seconds}s -> ${BIN_DIR#"${REPO_ROOT}/"}"
  built=$((built + 1))
}

# stamped_binary NAME STAMP: whether BIN_DIR/NAME is built from the inputs STAMP names.
stamped_binary() {
  [[ -x "${BIN_DIR}/$1" && -f "${BIN_DIR}/.$1.version" && "$(cat "${BIN_DIR}/.$1.version")" == "$2" ]]
}

# group_built STAMP NAME...: whether every NAME is built from the inputs STAMP names.
group_built() {
  local want="$1" name
  shift
  for name in "$@"; do stamped_binary "${name}" "${want}" || return 1; done
}

# run_go_build NAME VERSION WHAT MODULE_DIR COMMAND...: runs a go build in
# MODULE_DIR with its output in BUILD_LOG_DIR/NAME.log, a line every 30 s
# while it runs, and its log's tail on failure; sets run_seconds.
run_go_build() {
  local name="$1" version="$2" what="$3" module_dir="$4"
  shift 4
  mkdir -p "${BUILD_LOG_DIR}"
  local build_log="${BUILD_LOG_DIR}/${name//\//-}.log" start=${SECONDS}
  log "[${build_index}/${build_total}] ${name} ${version}: building ${what} (log: ${build_log#"${REPO_ROOT}/"}; $(elapsed) so far)"
  (cd "${module_dir}" && "$@") >"${build_log}" 2>&1 &
  local pid=$! rc=0 next=$((SECONDS + 30))
  while kill -0 "${pid}" 2>/dev/null; do
    sleep 1
    if ((SECONDS >= next)); then
      log "[${build_index}/${build_total}] ${name}: still building, $((SECONDS - start))s ($(grep -c '^go: downloading' "${build_log}" 2>/dev/null || true) modules downloaded; $(elapsed) so far)"
      next=$((SECONDS + 30))
    fi
  done
  wait "${pid}" || rc=$?
  if ((rc != 0)); then
    tail -n 30 "${build_log}" >&2
    die "building ${name} failed (whole log: ${build_log})"
  fi
  run_seconds=$((SECONDS - start))
}

# Kubernetes' commands the local stack runs, its real nodes' included: all
# built by build_kubernetes, whichever script asks first.
KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)

# build_kubernetes builds KUBE_COMMANDS from hack/tools/kube in one go build.
build_kubernetes() {
  build_group kubernetes "${KUBE_VERSION}" "${TOOLS_DIR}/kube" "$(kube_ldflags)" "${KUBE_COMMANDS[@]/#/k8s.io/kubernetes/cmd/}"
}

# kube_ldflags prints the version stamps Kubernetes' own builds set.
kube_ldflags() {
  local flags="" pkg major minor
  major="${KUBE_VERSION#v}"
  major="${major%%.*}"
  minor="${KUBE_VERSION#v*.}"
  minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
    flags+=" -X ${pkg}.gitMajor=${major}"
    flags+=" -X ${pkg}.gitMinor=${minor}"
    flags+=" -X ${pkg}.gitTreeState=clean"
    flags+=" -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
  done
  printf '%s' "${flags# }"
}
