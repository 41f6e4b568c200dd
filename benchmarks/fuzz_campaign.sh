#!/usr/bin/env bash
# The fuzzing campaign over every target, one at a time (issue 18): each target runs under atheris until it has tried
# RUNS inputs or SECONDS have passed, whichever comes first, at the lowest CPU priority.
#
#   benchmarks/fuzz_campaign.sh [SECONDS_PER_TARGET [RUNS [TARGET...]]]     # defaults: 540, 1000000, every target
#
# Per target, under .run/fuzz/TARGET: log (libFuzzer's output: "Done N runs in S second(s)" at the time limit),
# summary.txt (inputs and findings, rewritten every 10,000 inputs and at the end), finding-NNN.{bin,txt}.
# One line per target goes to .run/fuzz/campaign.txt.
set -u
cd "$(dirname "$0")/.."
secs=${1:-540}
runs=${2:-1000000}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(python -m benchmarks.fuzz --list | awk '{print $1}')
fi
mkdir -p .run/fuzz
for t in "${targets[@]}"; do
  out=.run/fuzz/$t
  rm -rf "$out"
  mkdir -p "$out"
  start=$(date +%s)
  nice -n 19 python -m benchmarks.fuzz "$t" --runs "$runs" --out "$out" -max_total_time="$secs" >"$out/log" 2>&1
  rc=$?
  end=$(date +%s)
  done_line=$(grep -E "^Done [0-9]+ runs" "$out/log" | tail -1)
  summary=$(head -1 "$out/summary.txt" 2>/dev/null)
  findings=$(ls "$out"/finding-*.txt 2>/dev/null | wc -l)
  echo "$t: rc=$rc wall=$((end - start))s findings=$findings | ${done_line:-no libFuzzer Done line} | ${summary:-no summary}" \
    | tee -a .run/fuzz/campaign.txt
done
