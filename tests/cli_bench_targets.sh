#!/usr/bin/env bash
# scripts/bench_targets.sh's summary, against a stand-in for bench_scale
# whose figures are set by hand (speed itself is never checked by tests):
# per cell the issue's target (2 M first-fit, 1 M a named scoring policy on
# 10k, 500 k on 100k, none for others), the lowest, median and highest
# figure over the rounds and the rounds that met the target; its arguments
# passed through; bad arguments refused.
set -u
. "$(dirname "$0")/lib/cli_harness.sh"

S=$(cd "$(dirname "$0")/.." && pwd)/scripts/bench_targets.sh
# The stand-in: round r (counted in $T/round) gives first-fit on 10k
# 1.9 M, 2.1 M, 2.3 M; worst-fit 990 k + 20 k r; random 700 k; on 100k
# first-fit 1.95 M and fgd 400 k + 100 k r. It logs its arguments.
cat >"$T/bench" <<'EOF'
#!/usr/bin/env bash
echo "$*" >>"$STUB_DIR/args"
g=; p=
while [ $# -gt 0 ]; do
  case $1 in --gpus) g=$2; shift ;; --policy) p=$2; shift ;; esac
  shift
done
f=$STUB_DIR/round
if [ "$g" = 10000 ]; then
  r=$(($(cat "$f" 2>/dev/null || echo 0) + 1))
  echo $r >"$f"
else
  r=$(cat "$f")
fi
echo "case policy queue jobs events cpu_s events/s instr/ev B/job eng_B/j mean_qt_s runs slowest/s fastest/s"
for pol in ${p//,/ }; do
  case $g:$pol in
    10000:first-fit) v=$((1700000 + 200000 * r)) ;;
    10000:worst-fit) v=$((970000 + 20000 * r)) ;;
    10000:random) v=700000 ;;
    100000:first-fit) v=1950000 ;;
    100000:fgd) v=$((300000 + 100000 * r)) ;;
    *) continue ;;
  esac
  c=10k@1.2; [ "$g" = 100000 ] && c=100k@1.2
  echo "$c $pol backfill 100 200 0.001 $v - 1 1 0.0 5 $((v - 10000)) $((v + 50000))"
done
EOF
chmod +x "$T/bench"
export STUB_DIR=$T

expect 0 "round 3 of 3 done" -- "$S" -b "$T/bench" -g 10000,100000 \
  -p first-fit,worst-fit,random,fgd -l 1.2 -q backfill 3
row() { grep -E "^$1 +$2 +backfill " "$T/out" | tr -s ' '; }
[ "$(head -1 "$T/out" | tr -s ' ')" = "case policy queue target min median max met fastest" ] &&
  ok || bad "header: $(head -1 "$T/out")"
[ "$(row 10k@1.2 first-fit)" = "10k@1.2 first-fit backfill 2.00M 1.90M 2.10M 2.30M 2/3 2.35M" ] &&
  ok || bad "first-fit 10k: $(row 10k@1.2 first-fit)"
[ "$(row 10k@1.2 worst-fit)" = "10k@1.2 worst-fit backfill 1.00M 990k 1.01M 1.03M 2/3 1.08M" ] &&
  ok || bad "worst-fit 10k: $(row 10k@1.2 worst-fit)"
[ "$(row 10k@1.2 random)" = "10k@1.2 random backfill - 700k 700k 700k - 750k" ] &&
  ok || bad "random (no target): $(row 10k@1.2 random)"
[ "$(row 100k@1.2 first-fit)" = "100k@1.2 first-fit backfill 2.00M 1.95M 1.95M 1.95M 0/3 2.00M" ] &&
  ok || bad "first-fit 100k: $(row 100k@1.2 first-fit)"
[ "$(row 100k@1.2 fgd)" = "100k@1.2 fgd backfill 500k 400k 500k 600k 2/3 650k" ] &&
  ok || bad "fgd 100k: $(row 100k@1.2 fgd)"
[ "$(wc -l <"$T/out")" -eq 6 ] && ok || bad "5 cells: $(cat "$T/out")"
# One bench_scale call per size per round, with the grid's arguments.
[ "$(wc -l <"$T/args")" -eq 6 ] && ok || bad "6 calls: $(cat "$T/args")"
grep -qx -- "--only grid --gpus 100000 --policy first-fit,worst-fit,random,fgd --load 1.2 --queue backfill" \
  "$T/args" && ok || bad "arguments: $(cat "$T/args")"

expect 2 "ROUNDS" -- "$S" -b "$T/bench" 0
expect 2 "usage" -- "$S" -b "$T/bench"
expect 2 "usage" -- "$S" -x 1
expect 2 "not an executable" -- "$S" -b "$T/none" 1
cli_summary
