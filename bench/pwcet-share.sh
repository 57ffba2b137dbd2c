#!/usr/bin/env bash
# The share of stored series the worst-case estimate answers, before and
# after: two rtlab binaries side by side, `show RUN --pwcet --json` on the
# same stored runs, one line per series, then the totals.
#
#   bench/pwcet-share.sh OLD_RTLAB NEW_RTLAB CAMPAIGN...
#   RTLAB_DB=/tmp/copy/results.db bench/pwcet-share.sh /work/rtlab-old target/debug/rtlab quick straumann2001
#
# The store is RTLAB_DB (or --db's default); it is only read (`runs` and
# `show` open it read-only). Point RTLAB_DB at a copy when the binaries'
# schema versions differ, so neither migrates the other's store.
set -euo pipefail

usage() {
    echo "usage: $0 OLD_RTLAB NEW_RTLAB CAMPAIGN..." >&2
    exit 2
}
[ $# -ge 3 ] || usage
old=$1 new=$2
shift 2
for bin in "$old" "$new"; do
    [ -x "$bin" ] || { echo "$0: $bin is not an executable rtlab" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "$0: needs jq" >&2; exit 2; }

# One line per series: run, series, status, method, pWCET at 1e-6 per
# sample in µs with its 95 % interval, the reasons for a refusal.
verdicts() {
    "$1" show "$2" --pwcet --json | jq -r --arg run "$2" '
        .series[] | [$run, .series,
            .estimate.verdict.status,
            .estimate.method + (if .estimate.fitted then "/" + .estimate.fitted else "" end),
            ((.estimate.pwcet | map(select(.exceedance_per_sample == 1e-6)) | first)
                | if . == null then "-" else
                    "\(.value_ns / 1000 | floor) [\(.ci_low_ns / 1000 | floor), \(if .ci_high_ns == null then "unbounded" else .ci_high_ns / 1000 | floor end)]"
                  end),
            ((.estimate.verdict.reasons // [])
                | map(select(startswith("block maxima with a GEV fit") | not)
                      | sub(" (failed|cannot be checked):.*"; "")) | join("; "))]
        | @tsv'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for campaign in "$@"; do
    "$new" runs --campaign "$campaign" --json | jq -r '.runs[] | select(.status != "failed") | .id' \
        >>"$tmp/runs"
done
[ -s "$tmp/runs" ] || { echo "$0: no stored runs of campaign(s) $*" >&2; exit 2; }
while read -r run; do
    verdicts "$old" "$run" >>"$tmp/before"
    verdicts "$new" "$run" >>"$tmp/after"
done <"$tmp/runs"

# awk, not read: read would merge the empty reasons of an estimate.
paste "$tmp/before" "$tmp/after" | awk -F'\t' '
    BEGIN { printf "%-24s %-23s %-9s %-9s %-35s %-28s %s\n", "run", "series", "before", "after", "after: method/fitted", "after: pWCET 1e-6 µs [95 %]", "after: refused for" }
    { printf "%-24s %-23s %-9s %-9s %-35s %-28s %s\n", $1, $2, $3, $9, $10, $11, $12 }'
total=$(wc -l <"$tmp/after")
before=$(awk -F'\t' '$3 == "estimated"' "$tmp/before" | wc -l)
after=$(awk -F'\t' '$3 == "estimated"' "$tmp/after" | wc -l)
echo
bounded() { awk -F'\t' '$3 == "estimated" && $5 !~ /unbounded/ && $5 != "-"' "$1" | wc -l; }
echo "answered: before $before of $total, after $after of $total"
echo "answered with a bounded 95 % interval at 1e-6: before $(bounded "$tmp/before"), after $(bounded "$tmp/after")"
