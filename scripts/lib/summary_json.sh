# Sourced by the experiment scripts (scripts/*_experiments.sh,
# scripts/estimates_experiment.sh): reading numbers from a run's
# summary.json without a JSON tool (cJSON prints one key per line).
#
# json KEY FILE          the number at top-level KEY ("-" when absent)
# json KEY SUBKEY FILE   the number at KEY.SUBKEY
json() {
  if [ $# = 3 ]; then
    awk -v k="\"$1\":" -v s="\"$2\":" '$1 == k {inside = 1} inside && $1 == s {gsub(/,/, "", $2); print $2; exit}' "$3"
  else
    awk -v k="\"$1\":" '$1 == k {gsub(/,/, "", $2); print $2; found = 1; exit} END {if (!found) print "-"}' "$2"
  fi
}
