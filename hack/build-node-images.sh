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
#   localhost/tensorstack/training-mpi5:v1  Debian trixie (minbase), its Open
#                                       MPI 5 with mpi4py and an SSH server,
#                                       the MPI example script and the Python
#                                       package; only where NODE_IMAGE_MPI5=1
#                                       asks for it (make test-build) or it is
#                                       built already
# Each Debian root file system is cached (training-base.tar,
# training-mpi5-base.tar) under a key of its inputs: the suite, the mirror
# and the package list. The scripts are a layer of their own, so editing
# them rebuilds in seconds. Needs root (debootstrap, chroot).
#
# With --background, it starts building only the Debian layers in the
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

# layer_key SUITE PACKAGES... stubs: STUBS...: the key a Debian layer is
# cached under.
layer_key() { printf '%s\n' "$1" "${DEBIAN_MIRROR}" "${@:2}" "v1" | sha256sum | cut -c1-16; }
base="${IMAGES_DIR}/training-base.tar"
base_key="$(layer_key "${DEBIAN_SUITE}" "${TRAINING_PACKAGES[@]}" stubs: "${TRAINING_STUB_PACKAGES[@]}")"
mpi5_base="${IMAGES_DIR}/training-mpi5-base.tar"
mpi5_base_key="$(layer_key "${MPI5_DEBIAN_SUITE}" "${MPI5_PACKAGES[@]}" stubs: "${MPI5_STUB_PACKAGES[@]}")"
# The Open MPI 5 image is for the tests; a first make run does without its
# download and dpkg (about 2 minutes). Once built it is kept up to date.
want_mpi5=0
[[ "${NODE_IMAGE_MPI5:-0}" != 1 && ! -f "${MPI5_ARCHIVE}" ]] || want_mpi5=1
# Whoever builds a Debian layer holds its lock: the foreground waits for
# a background build instead of racing it.
base_lock="${IMAGES_DIR}/.training-base.lock"
mpi5_base_lock="${IMAGES_DIR}/.training-mpi5-base.lock"
base_log="${OUTPUT_DIR}/logs/build/training-base.log"
mkdir -p "${IMAGES_DIR}" "$(dirname "${base_log}")"

if [[ "${mode}" == background ]]; then
  # Only where the foreground would build them: as root, for a stack with
  # real nodes, and when they are not built already. A fresh machine has no
  # debootstrap: the background build installs it first, so that apt's
  # downloads and dpkg overlap the Go builds too. One process builds both
  # layers, one after the other: two debootstraps at once would share the
  # same mirror and the same two cores.
  if [[ "$(id -u)" == 0 && "${LOCAL_REAL_NODE:-1}" != 0 ]] &&
    { ! stamped "${base}" "${base_key}" || { [[ "${want_mpi5}" == 1 ]] && ! stamped "${mpi5_base}" "${mpi5_base_key}"; }; }; then
    log "the training images' Debian layers: building in the background (log: ${base_log#"${REPO_ROOT}/"})"
    NODE_IMAGE_MPI5="${want_mpi5}" nohup setsid "${BASH_SOURCE[0]}" --debian-layer >"${base_log}" 2>&1 </dev/null &
  fi
  exit 0
fi

[[ "$(id -u)" == 0 ]] || die "building the real node's images needs root (debootstrap, chroot)"
exec 9>"${base_lock}" 8>"${mpi5_base_lock}"
if [[ "${mode}" == debian-layer ]]; then
  # Both locks at once, before either layer: a foreground build waiting for
  # the second layer finds it taken while the first builds.
  have_base=0 have_mpi5=0
  ! flock -n 9 || have_base=1
  [[ "${want_mpi5}" != 1 ]] || ! flock -n 8 || have_mpi5=1
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
steps=3
[[ "${want_mpi5}" != 1 ]] || steps=5

build_image_builder

# build_pause_image builds the pause image unless it is up to date.
build_pause_image() {
  [[ -x "${BIN_DIR}/pause" ]] || die "no ${BIN_DIR}/pause: run hack/build-node-binaries.sh first"
  local key root
  key="$({ sha256sum "${BIN_DIR}/pause"; image_builder_stamp; } | sha256sum | cut -c1-16)"
  if stamped "${PAUSE_ARCHIVE}" "${key}"; then
    log "[1/${steps}] ${PAUSE_IMAGE}: up to date"
  else
    root="$(mktemp -d "${IMAGES_DIR}/.pause-XXXX")"
    install -m 0755 "${BIN_DIR}/pause" "${root}/pause"
    "${IMAGE_BUILDER}" image -name "${PAUSE_IMAGE}" -layer "${root}" -entrypoint /pause -out "${PAUSE_ARCHIVE}"
    rm -rf "${root}"
    stamp "${PAUSE_ARCHIVE}" "${key}"
    log "[1/${steps}] ${PAUSE_IMAGE}: built, $(du -h "${PAUSE_ARCHIVE}" | cut -f1)"
  fi
}

# write_stub_packages DIR STUB... writes, under DIR, one package directory
# (for dpkg-deb --build) per STUB, NAME or NAME=VERSION: an empty package
# that stands for one a training package depends on but never runs.
write_stub_packages() {
  local dir="$1" stub name version
  shift
  for stub in "$@"; do
    name="${stub%%=*}" version="0~tensorstack.stub"
    [[ "${stub}" != *=* ]] || version="${stub#*=}"
    install -d "${dir}/${name}/DEBIAN"
    cat >"${dir}/${name}/DEBIAN/control" <<EOF_CONTROL
Package: ${name}
Version: ${version}
Architecture: all
Maintainer: TensorStack Training <training@tensorstack.dev>
Description: empty stand-in for ${name} in the training image
 A training package depends on it, but the image never runs it.
EOF_CONTROL
  done
}

# build_debian_layer STEP WHAT SUITE OUT KEY STUBS-VAR PACKAGES... builds the
# Debian layer OUT of an image (WHAT, for the log) unless it is up to date:
# debootstrap SUITE, then the packages, with the stubs (an array's name)
# installed first.
build_debian_layer() {
  local step_name="$1" what="$2" suite="$3" out="$4" key="$5" rootfs step name
  local -n stubs="$6"
  shift 6
  name="$(basename "${out}" .tar)"
  if stamped "${out}" "${key}"; then
    log "[${step_name}] ${what}'s Debian layer: up to date"
  else
    rootfs="${IMAGES_DIR}/${name}-rootfs"
    rm -rf "${rootfs}"
    log "[${step_name}] ${what}'s Debian layer: debootstrap ${suite} (minbase), then $*; about 2 minutes"
    step=${SECONDS}
    debootstrap --variant=minbase "${suite}" "${rootfs}" "${DEBIAN_MIRROR}" >"${IMAGES_DIR}/${name}-debootstrap.log" 2>&1 ||
      { tail -n 20 "${IMAGES_DIR}/${name}-debootstrap.log" >&2; die "debootstrap failed (log: ${IMAGES_DIR}/${name}-debootstrap.log)"; }
    log "[${step_name}] debootstrap: $((SECONDS - step))s"
    step=${SECONDS}
    cp /etc/resolv.conf "${rootfs}/etc/resolv.conf"
    install -d "${rootfs}/tmp/stubs"
    write_stub_packages "${rootfs}/tmp/stubs" "${stubs[@]}"
    # A private mount namespace: /proc for the packages' scripts, gone when
    # the install ends. The stubs go in first, held, so that apt counts
    # their names as installed.
    unshare --mount --propagation private sh -c '
      mount -t proc proc "$1/proc" && shift &&
      chroot "$0" sh -c "for d in /tmp/stubs/*/; do [ -d \$d ] || continue; dpkg-deb --build \$d /tmp/stub.deb >/dev/null && dpkg -i /tmp/stub.deb && apt-mark hold \$(basename \$d) || exit 1; done && rm -rf /tmp/stubs /tmp/stub.deb &&
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $* && apt-get clean"
    ' "${rootfs}" "${rootfs}" "$@" >"${IMAGES_DIR}/${name}-apt.log" 2>&1 ||
      { tail -n 20 "${IMAGES_DIR}/${name}-apt.log" >&2; die "installing the ${what}'s packages failed (log: ${IMAGES_DIR}/${name}-apt.log)"; }
    log "[${step_name}] apt-get install: $((SECONDS - step))s"
    rm -rf "${rootfs}/var/lib/apt/lists/"* "${rootfs}/usr/share/doc" "${rootfs}/usr/share/man" "${rootfs}/usr/share/locale" \
      "${rootfs}/var/cache/"* "${rootfs}/var/log/"*
    : >"${rootfs}/etc/resolv.conf"
    "${IMAGE_BUILDER}" layer -dir "${rootfs}" -out "${out}"
    rm -rf "${rootfs}"
    stamp "${out}" "${key}"
    log "[${step_name}] ${what}'s Debian layer: built, $(du -h "${out}" | cut -f1)"
  fi
}
build_training_layer() {
  build_debian_layer "2/${steps}" "training image" "${DEBIAN_SUITE}" "${base}" "${base_key}" TRAINING_STUB_PACKAGES \
    "${TRAINING_PACKAGES[@]}"
}
build_mpi5_layer() {
  build_debian_layer "4/${steps}" "Open MPI 5 image" "${MPI5_DEBIAN_SUITE}" "${mpi5_base}" "${mpi5_base_key}" MPI5_STUB_PACKAGES \
    "${MPI5_PACKAGES[@]}"
}

if [[ "${mode}" == debian-layer ]]; then
  # Each lock goes as soon as its layer is built, so that a foreground build
  # waiting for the first goes on with it while the second builds.
  if [[ "${have_base}" == 1 ]]; then
    build_training_layer
    exec 9>&-
  fi
  [[ "${have_mpi5}" != 1 ]] || build_mpi5_layer
  exit 0
fi
build_pause_image
build_training_layer

# install_python_package ROOT installs the Python package under ROOT as pip
# installs a pure-Python wheel: its files, dist-info included, under
# Debian's dist-packages.
install_python_package() {
  local wheel_dir
  wheel_dir="$(mktemp -d)"
  "${PYTHON}" -m zipfile -e "$(build_python_wheel "${REPO_ROOT}/python" "${wheel_dir}")" "$1${PYTHON_DIST}"
  rm -rf "${wheel_dir}"
}

# The training image: the Debian layer and the scripts.
scripts="${REPO_ROOT}/artifacts/examples/scripts"
# The Python package (python/), for its progress helper: importable from any
# training program in the image.
package_files=("${REPO_ROOT}/python/pyproject.toml")
while IFS= read -r f; do package_files+=("${f}"); done < <(find "${REPO_ROOT}/python/src" -name '*.py' | sort)
key="$({ cat "${base}.key" "${scripts}"/* "${package_files[@]}" "${REPO_ROOT}/hack/images/torchrun" "${BASH_SOURCE[0]}"; image_builder_stamp; } | sha256sum | cut -c1-16)"
if stamped "${TRAINING_ARCHIVE}" "${key}"; then
  log "[3/${steps}] ${TRAINING_IMAGE}: up to date"
else
  root="$(mktemp -d "${IMAGES_DIR}/.scripts-XXXX")"
  install -d -m 0755 "${root}/opt/tensorstack/examples" "${root}/usr/local/bin" "${root}/usr/lib/python3/dist-packages"
  install -m 0644 "${scripts}"/* "${root}/opt/tensorstack/examples/"
  install_python_package "${root}"
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
  log "[3/${steps}] ${TRAINING_IMAGE}: built, $(du -h "${TRAINING_ARCHIVE}" | cut -f1)"
fi

# The Open MPI 5 image: its Debian layer, the MPI example script and the
# Python package (the script reports progress with it).
if [[ "${want_mpi5}" == 1 ]]; then
  if ! flock -n 8; then
    log "waiting for the background build of the Open MPI 5 image's Debian layer (log: ${base_log#"${REPO_ROOT}/"})"
    flock 8
  fi
  build_mpi5_layer
  mpi_script="${scripts}/mpi_allreduce.py"
  key="$({ cat "${mpi5_base}.key" "${mpi_script}" "${package_files[@]}" "${BASH_SOURCE[0]}"; image_builder_stamp; } | sha256sum | cut -c1-16)"
  if stamped "${MPI5_ARCHIVE}" "${key}"; then
    log "[5/${steps}] ${MPI5_IMAGE}: up to date"
  else
    root="$(mktemp -d "${IMAGES_DIR}/.scripts-XXXX")"
    install -d -m 0755 "${root}/opt/tensorstack/examples" "${root}${PYTHON_DIST}"
    install -m 0644 "${mpi_script}" "${root}/opt/tensorstack/examples/"
    install_python_package "${root}"
    "${IMAGE_BUILDER}" image -name "${MPI5_IMAGE}" -layer "${mpi5_base}" -layer "${root}" \
      -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -env PYTHONPATH=/opt/tensorstack/examples \
      -workdir /opt/tensorstack/examples -cmd python3 -out "${MPI5_ARCHIVE}"
    rm -rf "${root}"
    stamp "${MPI5_ARCHIVE}" "${key}"
    log "[5/${steps}] ${MPI5_IMAGE}: built, $(du -h "${MPI5_ARCHIVE}" | cut -f1)"
  fi
fi
log "images ready in $((SECONDS - start))s"
