#!/usr/bin/env bash
# Sharing vs MIG with the speed model (issue #13 item 7c): scenario (a) of
# scripts/mig_scenarios.sh (20 A100-SXM4-80GB, sim/examples/mig/a100-20-*.json,
# $2.50 per GPU-hour; 3,000 jobs of sim/examples/mig/inference-dev-mix.json:
# 70% inference at 5-12.5% of a GPU, 30% development at 30-50%, generated
# with `schedsim generate --mix --seed 1`), each mode and policy run twice:
#   none     `--speed none`: every job runs for its trace duration (the
#            figures of scripts/mig_scenarios.sh (a));
#            its work_gpu_hours are trace GPU-hours (the documented
#            `--speed none` rule: speed = num_gpu), the catalog rows' are
#            V100-hours (2.835 x as many on the A100), so compare cost per
#            work hour down a column within one speed setting;
#   catalog  `--speed catalog --measured-on A100-SXM4-80GB`: the durations
#            are run times on a whole A100 (a generated pod list would
#            otherwise be read as measured on G2), so a job alone on a GPU
#            or on an instance big enough for its share runs for its
#            duration; on a shared GPU each co-runner multiplies its speed
#            by the interference factor (0.973 in the built-in table) and
#            co-runners are re-timed as jobs come and go; on a MIG instance
#            of k slices a job needing more than k/7 of the GPU runs at
#            (k/7)/need.
# Queue skip. Writes OUT/table.csv (and prints it): mode, policy, speed,
# jobs done / never started, mean and p95 queue time (s), mean and p95 JCT
# (s), makespan (h), cost per job-hour ($, cluster cost / hours run by
# jobs; it falls when jobs run longer), cost per work hour ($ per unit of
# work, above), GPU kWh. Each run's
# outputs are in OUT/SPEED/MODE_POLICY/.
#   scripts/sharing_vs_mig.sh [OUT] [DATA_DIR]     (SCHEDSIM= binary;
#   JOBS=N in the environment generates N jobs instead of 3,000)
# DATA_DIR is not read (the workload is generated); it is accepted so every
# cost experiment takes the same arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/sharing-mig}
BIN=${SCHEDSIM:-build/schedsim}
JOBS=${JOBS:-3000}
if [ ! -x "$BIN" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target schedsim >/dev/null
fi
case "$JOBS" in ""|*[!0-9]*) echo "sharing_vs_mig.sh: JOBS must be a number" >&2; exit 2 ;; esac
EX=sim/examples/mig
mkdir -p "$OUT"
. scripts/lib/summary_json.sh # json KEY [SUBKEY] FILE

"$BIN" generate --mix "$EX/inference-dev-mix.json" --jobs "$JOBS" --seed 1 \
  --out "$OUT/trace.csv" >/dev/null

TABLE=$OUT/table.csv
echo "mode,policy,speed,done,never,queue_mean_s,queue_p95_s,jct_mean_s,jct_p95_s,makespan_h,usd_per_job_h,usd_per_work_h,gpu_kwh" >"$TABLE"
rows="exclusive:best-fit shared:best-fit shared:fgd
  mig-static:mig-first-fit mig-static:mig-best-fit mig-static:mig-aware
  mig-balanced:mig-aware
  mig-dynamic:mig-first-fit mig-dynamic:mig-best-fit mig-dynamic:mig-aware
  mig-dynamic-k8s:mig-first-fit mig-dynamic-k8s:mig-aware"
for r in $rows; do
  mode=${r%%:*} pol=${r#*:}
  for speed in none catalog; do
    d=$OUT/$speed/${mode}_$pol
    mkdir -p "$d"
    args=(--speed none)
    [ "$speed" = catalog ] && args=(--speed catalog --measured-on A100-SXM4-80GB)
    if ! "$BIN" run --quiet --cluster "$EX/a100-20-$mode.json" --trace "$OUT/trace.csv" \
      --policy "$pol" --queue skip --seed 1 "${args[@]}" --out "$d" >"$d.log" 2>&1; then
      echo "sharing_vs_mig.sh: run failed: $mode $pol $speed (see $d.log)" >&2
      exit 1
    fi
    s=$d/summary.json
    awk -v m="$mode" -v p="$pol" -v sp="$speed" -v done="$(json jobs_completed "$s")" \
      -v nev="$(json jobs_never_started "$s")" -v qm="$(json queue_time_s mean "$s")" \
      -v qp="$(json queue_time_s p95 "$s")" -v jm="$(json jct_s mean "$s")" \
      -v jp="$(json jct_s p95 "$s")" -v ms="$(json makespan_s "$s")" \
      -v cjh="$(json cost_usd per_job_hour "$s")" -v cwh="$(json cost_usd per_work_hour "$s")" \
      -v eg="$(json energy_kwh gpu "$s")" \
      'BEGIN { printf "%s,%s,%s,%d,%d,%.0f,%.0f,%.0f,%.0f,%.1f,%.3f,%.3f,%.0f\n", m, p, sp,
                 done, nev, qm, qp, jm, jp, ms / 3600, cjh, cwh, eg }' >>"$TABLE"
  done
done
column -s, -t <"$TABLE"
echo "table: $TABLE; runs: $OUT/{none,catalog}/"
