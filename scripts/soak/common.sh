# shellcheck shell=bash
# Helpers for scripts/soak.sh: durations, RSS samples, and the sections it
# writes into docs/RELIABILITY.md. Ports, and processes started and stopped
# by PID, come from scripts/lib.sh, sourced here. Sourced, not executed.
# Everything listens on 127.0.0.1.

# shellcheck source=../lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

soak_log() { printf 'soak: %s\n' "$*" >&2; }
soak_die() {
  soak_log "error: $*"
  exit 1
}

# to_seconds DURATION: "90s", "10m", "1h" as seconds.
to_seconds() {
  local n=${1%[smh]} unit=${1##*[0-9]}
  [[ $n =~ ^[0-9]+$ ]] || soak_die "bad duration $1 (use a number then s, m or h)"
  case "$unit" in
    s) echo "$n" ;;
    m) echo $((n * 60)) ;;
    h) echo $((n * 3600)) ;;
    *) soak_die "bad duration $1 (use a number then s, m or h)" ;;
  esac
}

# rss_kb PID: resident set size in kB.
rss_kb() {
  awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0
}

# rss_verdict SAMPLES WARMUP_S: "WARM END ok|grew" from "SECONDS KB" lines:
# WARM is the first sample at or after the warm-up, END the last one.
rss_verdict() {
  awk -v w="$2" '
    $1 >= w && warm == "" { warm = $2 }
    { end = $2 }
    END {
      if (warm == "") warm = end
      print warm, end, (end * 100 <= warm * 110 ? "ok" : "grew")
    }' "$1"
}

# write_section NAME TEXT: replaces what is between "<!-- NAME:begin -->"
# and "<!-- NAME:end -->" in docs/RELIABILITY.md.
write_section() {
  local doc=docs/RELIABILITY.md
  grep -q "<!-- $1:begin -->" "$doc" || soak_die "$doc has no $1 markers"
  SECTION=$2 python3 - "$doc" "$1" <<'PY'
import os, re, sys
path, name = sys.argv[1], sys.argv[2]
text = open(path).read()
begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
text = pattern.sub(lambda _: f"{begin}\n{os.environ['SECTION'].strip()}\n{end}", text)
open(path, "w").write(text)
PY
  soak_log "wrote the $1 results into $doc"
}

# The commit the run started at (the sections are written at its end).
SOAK_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || SOAK_COMMIT="$SOAK_COMMIT with local changes"

# The run's circumstances, for the written sections.
run_header() {
  # shellcheck disable=SC2016 # the backquotes are Markdown
  printf 'Run %s UTC, commit %s, %s cores, concurrency %s, through `tensorgate --backend` to `tensorgate demo-backend` (release builds).\n' \
    "$(date -u +%Y-%m-%dT%H:%MZ)" "$SOAK_COMMIT" \
    "$(nproc)" "$CONCURRENCY"
}

# kinds_table JSON: the per-kind table of a load client summary.
kinds_table() {
  python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("| kind | requests | errors | p50 ms | p99 ms | max ms |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for name, k in s["kinds"].items():
    print(f"| {name} | {k['sent']} | {k['errors']} | {k['p50_ms']:.2f} | {k['p99_ms']:.2f} | {k['max_ms']:.2f} |")
print(f"| **all** | {s['requests']} | {s['errors']} | | | |")
print()
print(f"{s['requests']} requests in {s['seconds']} s ({s['rps']:.0f}/s), {s['errors']} errors.")
PY
}

# mix_section JSON
mix_section() {
  run_header
  echo
  kinds_table "$1"
}

# soak_section JSON RSS_SAMPLES WARMUP_S DURATION
soak_section() {
  local warm end _verdict
  read -r warm end _verdict < <(rss_verdict "$2" "$3")
  run_header
  echo
  kinds_table "$1"
  echo
  printf 'Soak of %s: gateway RSS %s kB after the %s s warm-up, %s kB at the end (%s; the limit is +10%%); lowest %s kB, highest %s kB over %s samples.\n' \
    "$4" "$warm" "$3" "$end" \
    "$(awk -v a="$warm" -v b="$end" 'BEGIN { printf "%+.1f%%", (b - a) * 100 / a }')" \
    "$(sort -n -k2 "$2" | head -1 | cut -d' ' -f2)" "$(sort -n -k2 "$2" | tail -1 | cut -d' ' -f2)" \
    "$(wc -l <"$2")"
}
