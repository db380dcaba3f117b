#!/usr/bin/env bash
# make help: every target of the Makefile with one line of what it does, taken
# from the "## target: ..." comment above it (the first clause of it; the
# Makefile has the rest). With --verify (make lint), fails when a target has
# no such comment or a comment names no target.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
makefile=Makefile

# "names<TAB>first clause" for each comment block; a block is the run of
# "## " lines, its first line "## name[, name...]: text".
help_lines() {
  awk '
    function flush() {
      if (names != "") {
        text = desc
        sub(/;.*/, "", text)
        sub(/\. .*/, "", text)
        sub(/\.$/, "", text)
        if (length(text) > 90) text = substr(text, 1, 89) "…"
        printf "%s\t%s\n", names, text
      }
      names = ""; desc = ""
    }
    /^## [a-z0-9-]+(, [a-z0-9-]+)*: / && !inblock {
      flush()
      inblock = 1
      line = substr($0, 4)
      i = index(line, ": ")
      names = substr(line, 1, i - 1)
      desc = substr(line, i + 2)
      next
    }
    /^## / { inblock = 1; if (names != "") desc = desc " " substr($0, 4); next }
    { inblock = 0; flush() }
    END { flush() }
  ' "${makefile}"
}

if [[ "${1:-}" == --verify ]]; then
  targets="$(grep -oE '^[a-z][a-z0-9-]*:' "${makefile}" | tr -d : | sort -u)"
  named="$(help_lines | cut -f1 | tr ',' '\n' | tr -d ' ' | sort -u)"
  failed=0
  for t in $(comm -23 <(echo "${targets}") <(echo "${named}")); do
    echo "${makefile}: target ${t} has no \"## ${t}: ...\" comment above it for make help" >&2
    failed=1
  done
  for t in $(comm -13 <(echo "${targets}") <(echo "${named}")); do
    echo "${makefile}: a \"## ${t}: ...\" comment names no target" >&2
    failed=1
  done
  ((failed == 0)) || exit 1
  echo "make help: every target of ${makefile} has its line"
  exit 0
fi

echo "make TARGET, where TARGET is one of these (the Makefile says more above each):"
help_lines | while IFS=$'\t' read -r names text; do
  printf '  %-28s %s\n' "${names}" "${text}"
done
