#!/usr/bin/env bash
# Debian packages the scripts need beyond Go. Source it after
# hack/lib/common.sh.

# require_packages PURPOSE PACKAGE:PATH ...
# Makes sure each PATH exists (a command name, or an absolute file path): run
# as root, it installs the missing packages with apt-get; otherwise it stops
# with one line naming what to install.
require_packages() {
  local purpose="$1" spec pkg path missing=()
  shift
  for spec in "$@"; do
    pkg="${spec%%:*}"
    path="${spec#*:}"
    if [[ "${path}" == /* ]]; then
      [[ -e "${path}" ]] && continue
    else
      command -v "${path}" >/dev/null 2>&1 && continue
    fi
    missing+=("${pkg}")
  done
  ((${#missing[@]})) || return 0
  if [[ "$(id -u)" != 0 ]]; then
    die "${purpose} needs the Debian packages ${missing[*]}: sudo apt-get install -y ${missing[*]}"
  fi
  log "installing ${missing[*]} from Debian for ${purpose}"
  local apt_log="${OUTPUT_DIR}/logs/apt-${missing[0]}.log"
  mkdir -p "${OUTPUT_DIR}/logs"
  # Builds side by side (the training image's Debian layer in the
  # background, the nodes' binaries) may install at once: apt takes one at a
  # time, and the others wait here rather than fail on dpkg's lock.
  if ! {
    flock 8
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" ||
      { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; }
  } 8>"${OUTPUT_DIR}/.apt.lock" >"${apt_log}" 2>&1; then
    tail -n 20 "${apt_log}" >&2
    die "apt-get install ${missing[*]} failed (log: ${apt_log})"
  fi
}

# require_stack_packages: what the local stack needs from Debian, for the
# scripts that start one (hack/local-up.sh, localcluster run): curl, and
# where its real nodes run, iptables and conntrack (kube-proxy programs
# iptables and clears conntrack entries). Needs hack/lib/local.sh too.
require_stack_packages() {
  require_packages "the local stack" curl:curl
  if real_node_enabled && [[ -z "$(localcluster why-no-real-node)" ]]; then
    require_packages "the real nodes" iptables:iptables conntrack:conntrack
  fi
}
