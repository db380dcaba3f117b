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
  local out="${BIN_DIR}/${name}" stamp_file="${BIN_DIR}/.${name}.version" want extra=()
  build_index=$((build_index + 1))
  [[ -f "${module_dir}/main.go" ]] && extra=("${module_dir}/main.go")
  want="$(stamp_for "${version}" "${module_dir}" "${extra[@]}")"
  if [[ -x "${out}" && -f "${stamp_file}" && "$(cat "${stamp_file}")" == "${want}" ]]; then
    log "[${build_index}/${build_total}] ${name} ${version}: already built"
    skipped=$((skipped + 1))
    return 0
  fi
  mkdir -p "${BUILD_LOG_DIR}" "$(dirname "${out}")" "$(dirname "${stamp_file}")"
  local build_log="${BUILD_LOG_DIR}/${name//\//-}.log" start=${SECONDS}
  log "[${build_index}/${build_total}] ${name} ${version}: building ${pkg} (log: ${build_log#"${REPO_ROOT}/"}; $(elapsed) so far)"
  rm -f "${stamp_file}"
  (
    cd "${module_dir}"
    CGO_ENABLED="${cgo}" go build -trimpath ${tags:+-tags "${tags}"} -ldflags "${ldflags}" -o "${out}.tmp" "${pkg}"
  ) >"${build_log}" 2>&1 &
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
  mv -f "${out}.tmp" "${out}"
  printf '%s\n' "${want}" >"${stamp_file}"
  log "[${build_index}/${build_total}] ${name} ${version}: built in $((SECONDS - start))s -> ${out#"${REPO_ROOT}/"}"
  built=$((built + 1))
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
