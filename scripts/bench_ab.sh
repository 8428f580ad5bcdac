#!/usr/bin/env bash
# Alternated A/B of two bench_scale binaries (bench/README.md, "Session 34"):
# each round runs every cell once with A, then once with B, so that a noisy
# host weighs on both alike; prints per cell the medians, the best runs and
# how many rounds B won.
#   scripts/bench_ab.sh A_BIN B_BIN ROUNDS GPUS[,GPUS] QUEUE[,QUEUE] POLICY
# e.g. scripts/bench_ab.sh /tmp/old_bench_scale build-rel/bench/bench_scale \
#        10 100000 backfill,fifo first-fit
set -euo pipefail
if [ $# -ne 6 ]; then
  echo "usage: $0 A_BIN B_BIN ROUNDS GPUS[,GPUS] QUEUE[,QUEUE] POLICY" >&2
  exit 2
fi
a=$1 b=$2 rounds=$3 gpus=$4 queues=$5 policy=$6
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "$0: $bin: not an executable" >&2; exit 2; }
done
case $rounds in '' | *[!0-9]*) echo "$0: ROUNDS: a number, not '$rounds'" >&2; exit 2 ;; esac
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
  for g in ${gpus//,/ }; do
    for q in ${queues//,/ }; do
      for side in A B; do
        bin=$a
        [ $side = B ] && bin=$b
        "$bin" --only grid --gpus "$g" --load 1.2 --queue "$q" --policy "$policy" |
          awk -v s=$side '/@/ {print s, $1, $3, $7}' >>"$out"
      done
    done
  done
done
# Per cell: median and best of each side, and B's wins over the paired rounds.
sort -k2,2 -k3,3 -k1,1 -s "$out" | awk '
  function med(v, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
      if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  function flush(   ma, mb, i, w, ba, bb) {
    if (na == 0) return
    ma = med(A, na); mb = med(B, nb); ba = A[na]; bb = B[nb]; w = 0
    for (i = 1; i <= na && i <= nb; i++) if (PB[i] > PA[i]) w++
    printf "%-9s %-9s median A %7.0fk B %7.0fk x%.3f | best A %7.0fk B %7.0fk x%.3f | B faster %d/%d\n",
      cell_g, cell_q, ma / 1e3, mb / 1e3, mb / ma, ba / 1e3, bb / 1e3, bb / ba, w, na
    na = nb = 0; delete A; delete B; delete PA; delete PB
  }
  { key = $2 " " $3
    if (key != cur) { flush(); cur = key; cell_g = $2; cell_q = $3 }
    if ($1 == "A") { A[++na] = $4; PA[na] = $4 } else { B[++nb] = $4; PB[nb] = $4 } }
  END { flush() }'
