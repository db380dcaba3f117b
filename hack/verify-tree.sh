#!/usr/bin/env bash
# Keeps the tree clean (make lint):
#   - no tracked file is over 1 MiB unless hack/large-files.txt names it, with the reason it belongs in git;
#   - the binary `go build` leaves for each main package (named after its directory, at the root or in the
#     package's directory) is in .gitignore, and .gitignore hides nothing that is tracked;
#   - the README's Layout names every Go package (generated code, test data and the tools modules of
#     hack/tools aside), as `path` or under a `path/...` two levels deep or more, and no README line runs past
#     200 characters.
# Sizes are those of the index, what the next commit holds, not of the working tree.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
LIMIT="${VERIFY_TREE_LIMIT:-1048576}"
ALLOW="hack/large-files.txt"
failed=0

# The allow-list: one path per line, then its reason; blank lines and # comments are skipped.
declare -A allowed=()
while read -r path reason; do
  [[ -z "${path}" || "${path}" == \#* ]] && continue
  if [[ -z "${reason}" ]]; then
    echo "${ALLOW}: ${path} gives no reason" >&2
    failed=1
  fi
  allowed["${path}"]=1
done <"${ALLOW}"

# git ls-files -s: "mode object stage<TAB>path"; cat-file turns each object into its size.
while IFS=' ' read -r size path; do
  if [[ -n "${allowed[${path}]:-}" ]]; then
    ((size > LIMIT)) && allowed["${path}"]=seen
    continue
  fi
  if ((size > LIMIT)); then
    echo "${path}: ${size} bytes ($((size / 1024)) KiB), over the limit of ${LIMIT} bytes; remove it, or add it to ${ALLOW} with a reason" >&2
    failed=1
  fi
done < <(git ls-files -s -z | tr '\0' '\n' | awk -F '\t' '{split($1, f, " "); print f[2] " " $2}' |
  git cat-file --batch-check='%(objectsize) %(rest)')

# An entry for a file that is gone or back under the limit would let a large file of that name in unseen.
for path in "${!allowed[@]}"; do
  if [[ "${allowed[${path}]}" != seen ]]; then
    echo "${ALLOW}: ${path} is not tracked, or no longer over ${LIMIT} bytes; remove the entry" >&2
    failed=1
  fi
done

# Every main package's build output is ignored.
while read -r dir; do
  name="${dir##*/}"
  for out in "${name}" "${dir}/${name}"; do
    if ! git check-ignore -q --no-index "${out}"; then
      echo ".gitignore: /${out} (what go build leaves for ./${dir}) is not ignored" >&2
      failed=1
    fi
  done
done < <(git grep -l '^package main$' -- '*.go' ':!*_test.go' | xargs -r -n1 dirname | sort -u)

hidden="$(git ls-files -ci --exclude-standard)"
if [[ -n "${hidden}" ]]; then
  echo ".gitignore hides tracked files; narrow the pattern, or remove the file if it is a build output:" >&2
  echo "${hidden}" | sed 's/^/  /' >&2
  failed=1
fi

# The README's Layout: from its heading to the next one of the same level.
layout="$(awk '/^## Layout$/ {on = 1; next} /^## / {on = 0} on' README.md)"
if [[ -z "${layout}" ]]; then
  echo "README.md: no \"## Layout\" section" >&2
  failed=1
fi
while read -r dir; do
  named=0
  if grep -qF -e "\`${dir}\`" -e "\`${dir}/\`" <<<"${layout}"; then
    named=1
  fi
  # `a/b/...` names what is under a/b (never under a top-level folder alone).
  path="${dir}"
  while ((!named)) && [[ "${path}" == */*/* ]]; do
    path="${path%/*}"
    grep -qF "\`${path}/...\`" <<<"${layout}" && named=1
  done
  if ((!named)); then
    echo "README.md: the Layout names no package ${dir}; add it, as \`${dir}\`" >&2
    failed=1
  fi
done < <(git ls-files -co --exclude-standard '*.go' | grep -vE '(^|/)testdata/|^pkg/generated/|^hack/tools/' |
  xargs -r -n1 dirname | sort -u)
while IFS=: read -r line length; do
  echo "README.md:${line}: ${length} characters; wrap it within 200 (a table row too long becomes a list)" >&2
  failed=1
done < <(awk 'length > 200 {print NR ":" length}' README.md)

if ((failed)); then
  exit 1
fi
echo "tree: no tracked file over ${LIMIT} bytes outside ${ALLOW}; every main package's binary is ignored; the README names every package"
