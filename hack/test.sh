#!/usr/bin/env bash
# make test: runs the phases (make targets) given as arguments one after another, stopping at the first that
# fails, and ends with three things a reader of CI's log wants last: each phase's seconds and outcome, the Go
# tests each phase ran, passed, failed and skipped (counted by hack/gotest from go test -json, whose events it
# keeps in _output/test-events), and what was skipped because something it needs is missing here
# (test/internal/skips).
#
# Usage: hack/test.sh PHASE...
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

mkdir -p "${OUTPUT_DIR}"
export TEST_SKIPS_FILE="${OUTPUT_DIR}/skipped.txt"
export TEST_SUMMARY_FILE="${OUTPUT_DIR}/test-summary.tsv"
export TEST_EVENTS_DIR="${OUTPUT_DIR}/test-events"
phases_file="${OUTPUT_DIR}/test-phases.tsv"
rm -rf "${TEST_SKIPS_FILE}" "${TEST_SUMMARY_FILE}" "${phases_file}" "${TEST_EVENTS_DIR}"

make_cmd="${MAKE:-make}"
started=$(date +%s)
rc=0
for phase in "$@"; do
  phase_started=$(date +%s)
  TEST_PHASE="${phase}" "${make_cmd}" --no-print-directory "${phase}"
  rc=$?
  outcome=passed
  ((rc == 0)) || outcome="failed (exit ${rc})"
  printf '%s\t%s\t%s\n' "${phase}" "$(($(date +%s) - phase_started))" "${outcome}" >>"${phases_file}"
  ((rc == 0)) || break
done
total=$(($(date +%s) - started))

echo
echo "make test: phases (seconds) and the Go tests they ran"
# The phases in order, each with the counts of its go test runs added up (hack/gotest's lines: phase, suite,
# passed, failed, skipped, failed packages, seconds).
awk -F'\t' -v total="${total}" '
  FNR == NR { passed[$1] += $3; failed[$1] += $4; skipped[$1] += $5; runs[$1]++; next }
  FNR == 1 { printf "  %-20s %7s  %-18s %6s %6s %6s %7s\n", "phase", "seconds", "outcome", "run", "passed", "failed", "skipped" }
  {
    tests = "-"
    if ($1 in runs) {
      printf "  %-20s %7d  %-18s %6d %6d %6d %7d\n", $1, $2, $3, passed[$1] + failed[$1] + skipped[$1], passed[$1], failed[$1], skipped[$1]
      allp += passed[$1]; allf += failed[$1]; alls += skipped[$1]
    } else {
      printf "  %-20s %7d  %-18s %6s %6s %6s %7s\n", $1, $2, $3, "-", "-", "-", "-"
    }
  }
  END { printf "  %-20s %7d  %-18s %6d %6d %6d %7d\n", "total", total, "", allp + allf + alls, allp, allf, alls }
' <(cat "${TEST_SUMMARY_FILE}" 2>/dev/null) "${phases_file}"

if ((rc != 0)); then
  echo "make test: FAILED in ${phase}"
elif [[ -s "${TEST_SKIPS_FILE}" ]]; then
  echo "make test: passed, but skipped (CI=true or REQUIRE_REAL_NODES=1 fails instead):"
  sort "${TEST_SKIPS_FILE}" | uniq -c |
    awk '{ n = $1; sub(/^ *[0-9]+ /, ""); print "  " $0 (n > 1 ? " (" n " times)" : "") }'
else
  echo "make test: passed, nothing skipped"
fi
exit "${rc}"
