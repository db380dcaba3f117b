#!/usr/bin/env bash
# Builds the real node's images as OCI archives under _output/images, with
# no Docker and no registry (hack/images/builder, go-containerregistry);
# the local stack (internal/localcluster) imports them into its real nodes' containerd.
#   localhost/tensorstack/pause:v1      the pod sandbox: one static binary
#   localhost/tensorstack/training:v1   Debian bookworm (minbase), Python 3,
#                                       Debian's PyTorch (CPU, gloo) and the
#                                       example scripts of artifacts/examples/scripts
#                                       and the Python package of python/ (its in-pod
#                                       progress helper, tensorstack.training.progress),
#                                       installed from its wheel
# The Debian root file system is cached (training-base.tar) under a key of
# its inputs: the suite, the mirror and the package list. The scripts are a
# layer of their own, so editing them rebuilds in seconds. Needs root
# (debootstrap, chroot).
#
# With --background, it starts building only that Debian layer in the
# background and returns at once: the layer waits on the network and dpkg
# more than on the CPU, so make run and make test start it first and it
# overlaps their Go builds. A later run without options waits for it (a
# lock) and finds the layer built; if the background build failed, it
# builds the layer again in the foreground and shows why.
set -euo pipefail

mode=all
case "${1:-}" in
  --background) mode=background ;;
  --debian-layer) mode=debian-layer ;; # what --background runs
  "") ;;
  *) echo "usage: $0 [--background]" >&2; exit 1 ;;
esac

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=hack/lib/packages.sh
source "${REPO_ROOT}/hack/lib/packages.sh"
# shellcheck source=hack/lib/python.sh
source "${REPO_ROOT}/hack/lib/python.sh"
# shellcheck source=hack/lib/build.sh
source "${REPO_ROOT}/hack/lib/build.sh"
# shellcheck source=hack/lib/images.sh
source "${REPO_ROOT}/hack/lib/images.sh"

# stamped FILE KEY: whether FILE was made from inputs whose digest is KEY.
stamped() { [[ -f "$1" && -f "$1.key" && "$(cat "$1.key")" == "$2" ]]; }
stamp() { printf '%s\n' "$2" >"$1.key"; }

base="${IMAGES_DIR}/training-base.tar"
base_key="$(printf '%s\n' "${DEBIAN_SUITE}" "${DEBIAN_MIRROR}" "${TRAINING_PACKAGES[@]}" stubs: "${TRAINING_STUB_PACKAGES[@]}" "v1" | sha256sum | cut -c1-16)"
# Whoever builds the Debian layer holds this lock: the foreground waits for
# a background build instead of racing it.
base_lock="${IMAGES_DIR}/.training-base.lock"
base_log="${OUTPUT_DIR}/logs/build/training-base.log"
mkdir -p "${IMAGES_DIR}" "$(dirname "${base_log}")"

if [[ "${mode}" == background ]]; then
  # Only where the foreground would build it: as root, for a stack with
  # real nodes, and when it is not built already. A fresh machine has no
  # debootstrap: the background build installs it first, so that apt's
  # downloads and dpkg overlap the Go builds too.
  if [[ "$(id -u)" == 0 && "${LOCAL_REAL_NODE:-1}" != 0 ]] && ! stamped "${base}" "${base_key}"; then
    log "training image's Debian layer: building in the background (log: ${base_log#"${REPO_ROOT}/"})"
    nohup setsid "${BASH_SOURCE[0]}" --debian-layer >"${base_log}" 2>&1 </dev/null &
  fi
  exit 0
fi

[[ "$(id -u)" == 0 ]] || die "building the real node's images needs root (debootstrap, chroot)"
exec 9>"${base_lock}"
if [[ "${mode}" == debian-layer ]]; then
  flock -n 9 || exit 0 # another build has it
  require_packages "the training image" debootstrap:debootstrap
else
  if ! flock -n 9; then
    log "waiting for the background build of the training image's Debian layer (log: ${base_log#"${REPO_ROOT}/"})"
    flock 9
  fi
  require_packages "the training image" debootstrap:debootstrap
  require_python_build
fi
start=${SECONDS}

build_image_builder

# build_pause_image builds the pause image unless it is up to date.
build_pause_image() {
  [[ -x "${BIN_DIR}/pause" ]] || die "no ${BIN_DIR}/pause: run hack/build-node-binaries.sh first"
  local key root
  key="$({ sha256sum "${BIN_DIR}/pause"; image_builder_stamp; } | sha256sum | cut -c1-16)"
  if stamped "${PAUSE_ARCHIVE}" "${key}"; then
    log "[1/3] ${PAUSE_IMAGE}: up to date"
  else
    root="$(mktemp -d "${IMAGES_DIR}/.pause-XXXX")"
    install -m 0755 "${BIN_DIR}/pause" "${root}/pause"
    "${IMAGE_BUILDER}" image -name "${PAUSE_IMAGE}" -layer "${root}" -entrypoint /pause -out "${PAUSE_ARCHIVE}"
    rm -rf "${root}"
    stamp "${PAUSE_ARCHIVE}" "${key}"
    log "[1/3] ${PAUSE_IMAGE}: built, $(du -h "${PAUSE_ARCHIVE}" | cut -f1)"
  fi
}

# write_stub_packages DIR writes, under DIR, one package directory (for
# dpkg-deb --build) per name of TRAINING_STUB_PACKAGES: an empty package
# that stands for one a training package depends on but never runs.
write_stub_packages() {
  local name
  for name in "${TRAINING_STUB_PACKAGES[@]}"; do
    install -d "$1/${name}/DEBIAN"
    cat >"$1/${name}/DEBIAN/control" <<EOF_CONTROL
Package: ${name}
Version: 0~tensorstack.stub
Architecture: all
Maintainer: TensorStack Training <training@tensorstack.dev>
Description: empty stand-in for ${name} in the training image
 A training package depends on it, but the image never runs it.
EOF_CONTROL
  done
}

# build_debian_layer builds the training image's Debian layer unless it is
# up to date.
build_debian_layer() {
  local rootfs step
  if stamped "${base}" "${base_key}"; then
    log "[2/3] training image's Debian layer: up to date"
  else
    rootfs="${IMAGES_DIR}/training-rootfs"
    rm -rf "${rootfs}"
    log "[2/3] training image's Debian layer: debootstrap ${DEBIAN_SUITE} (minbase), then ${TRAINING_PACKAGES[*]}; about 2 minutes"
    step=${SECONDS}
    debootstrap --variant=minbase "${DEBIAN_SUITE}" "${rootfs}" "${DEBIAN_MIRROR}" >"${IMAGES_DIR}/debootstrap.log" 2>&1 ||
      { tail -n 20 "${IMAGES_DIR}/debootstrap.log" >&2; die "debootstrap failed (log: ${IMAGES_DIR}/debootstrap.log)"; }
    log "[2/3] debootstrap: $((SECONDS - step))s"
    step=${SECONDS}
    cp /etc/resolv.conf "${rootfs}/etc/resolv.conf"
    write_stub_packages "${rootfs}/tmp/stubs"
    # A private mount namespace: /proc for the packages' scripts, gone when
    # the install ends. The stubs go in first, held, so that apt counts
    # their names as installed.
    unshare --mount --propagation private sh -c '
      mount -t proc proc "$1/proc" && shift &&
      chroot "$0" sh -c "for d in /tmp/stubs/*/; do dpkg-deb --build \$d /tmp/stub.deb >/dev/null && dpkg -i /tmp/stub.deb && apt-mark hold \$(basename \$d) || exit 1; done && rm -rf /tmp/stubs /tmp/stub.deb &&
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $* && apt-get clean"
    ' "${rootfs}" "${rootfs}" "${TRAINING_PACKAGES[@]}" >"${IMAGES_DIR}/apt.log" 2>&1 ||
      { tail -n 20 "${IMAGES_DIR}/apt.log" >&2; die "installing the training packages failed (log: ${IMAGES_DIR}/apt.log)"; }
    log "[2/3] apt-get install: $((SECONDS - step))s"
    rm -rf "${rootfs}/var/lib/apt/lists/"* "${rootfs}/usr/share/doc" "${rootfs}/usr/share/man" "${rootfs}/usr/share/locale" \
      "${rootfs}/var/cache/"* "${rootfs}/var/log/"*
    : >"${rootfs}/etc/resolv.conf"
    "${IMAGE_BUILDER}" layer -dir "${rootfs}" -out "${base}"
    rm -rf "${rootfs}"
    stamp "${base}" "${base_key}"
    log "[2/3] training image's Debian layer: built, $(du -h "${base}" | cut -f1)"
  fi
}

if [[ "${mode}" == debian-layer ]]; then
  build_debian_layer
  exit 0
fi
build_pause_image
build_debian_layer

# The training image: the Debian layer and the scripts.
scripts="${REPO_ROOT}/artifacts/examples/scripts"
# The Python package (python/), for its progress helper: importable from any
# training program in the image.
package_files=("${REPO_ROOT}/python/pyproject.toml")
while IFS= read -r f; do package_files+=("${f}"); done < <(find "${REPO_ROOT}/python/src" -name '*.py' | sort)
key="$({ cat "${base}.key" "${scripts}"/* "${package_files[@]}" "${REPO_ROOT}/hack/images/torchrun" "${BASH_SOURCE[0]}"; image_builder_stamp; } | sha256sum | cut -c1-16)"
if stamped "${TRAINING_ARCHIVE}" "${key}"; then
  log "[3/3] ${TRAINING_IMAGE}: up to date"
else
  root="$(mktemp -d "${IMAGES_DIR}/.scripts-XXXX")"
  install -d -m 0755 "${root}/opt/tensorstack/examples" "${root}/usr/local/bin" "${root}/usr/lib/python3/dist-packages"
  install -m 0644 "${scripts}"/* "${root}/opt/tensorstack/examples/"
  # Installed as pip installs a pure-Python wheel: its files, dist-info
  # included, under Debian's dist-packages.
  wheel_dir="$(mktemp -d)"
  "${PYTHON}" -m zipfile -e "$(build_python_wheel "${REPO_ROOT}/python" "${wheel_dir}")" "${root}${PYTHON_DIST}"
  rm -rf "${wheel_dir}"
  install -m 0755 "${REPO_ROOT}/hack/images/torchrun" "${root}/usr/local/bin/torchrun"
  # Debian's torch 1.13 on Debian's Python 3.11: iterating an IntFlag skips
  # its zero member there, so Std.from_str("0") (torchrun's default
  # --redirects and --tee) returns None and torchrun fails after the
  # rendezvous. torch 2.0 fixed it the same way; this layer carries the
  # patched file.
  std="usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/api.py"
  tar -C "${root}" -xf "${base}" "${std}"
  sed -i 's/^            for s in Std:$/            for s in Std.__members__.values():/' "${root}/${std}"
  grep -q 'for s in Std.__members__.values():' "${root}/${std}" || die "patching ${std} failed: its text changed"
  "${IMAGE_BUILDER}" image -name "${TRAINING_IMAGE}" -layer "${base}" -layer "${root}" \
    -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -env PYTHONPATH=/opt/tensorstack/examples \
    -workdir /opt/tensorstack/examples -cmd python3 -out "${TRAINING_ARCHIVE}"
  rm -rf "${root}"
  stamp "${TRAINING_ARCHIVE}" "${key}"
  log "[3/3] ${TRAINING_IMAGE}: built, $(du -h "${TRAINING_ARCHIVE}" | cut -f1)"
fi
log "images ready in $((SECONDS - start))s"
