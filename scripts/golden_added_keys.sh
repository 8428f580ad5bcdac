#!/usr/bin/env bash
# Checks that two builds' golden outputs differ only by added summary keys
# (and the compare.csv / sweep.csv columns they bring), before a golden
# `--update`:
#
#   GOLDEN_KEEP=/tmp/old bash tests/cli_golden.sh OLD/schedsim ../shared/data
#   GOLDEN_KEEP=/tmp/new bash tests/cli_golden.sh NEW/schedsim ../shared/data
#   scripts/golden_added_keys.sh /tmp/old /tmp/new KEY...
#
# KEY is a top-level summary.json key (an object key removes the object and
# every CSV column named KEY or KEY.*). Every file present in one tree must
# be in the other; summary.json files must be equal, in key order, once the
# keys are removed from the new one; CSV files must be equal once their
# columns are; every other file byte-identical. Exit 0 when so, 1 (listing
# the files) otherwise.
set -euo pipefail
OLD=$1
NEW=$2
shift 2
python3 - "$OLD" "$NEW" "$@" <<'EOF'
import csv, io, json, os, sys

old, new, keys = sys.argv[1], sys.argv[2], set(sys.argv[3:])

def files(root):
    out = set()
    for d, _, fs in os.walk(root):
        for f in fs:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return out

def drop_col(name):
    return name in keys or name.split('.')[0] in keys

a, b = files(old), files(new)
bad = []
for f in sorted(a ^ b):
    bad.append(f + ': only in ' + ('old' if f in a else 'new'))
same = changed = 0
for f in sorted(a & b):
    x = open(os.path.join(old, f), 'rb').read()
    y = open(os.path.join(new, f), 'rb').read()
    if x == y:
        same += 1
        continue
    changed += 1
    if f.endswith('.png') or f.endswith('.svg'):
        changed -= 1  # plots are not goldens (gnuplot-version dependent)
        continue
    if f.endswith('summary.json'):
        jo = json.loads(x, object_pairs_hook=list)
        jn = json.loads(y, object_pairs_hook=list)
        jn = [kv for kv in jn if kv[0] not in keys]
        if jo != jn:
            bad.append(f + ': differs beyond the added keys')
    elif f.endswith('.csv'):
        ro = list(csv.reader(io.StringIO(x.decode())))
        rn = list(csv.reader(io.StringIO(y.decode())))
        if not rn:
            bad.append(f + ': empty')
            continue
        keep = [i for i, c in enumerate(rn[0]) if not drop_col(c)]
        rn = [[r[i] for i in keep] for r in rn]
        if ro != rn:
            bad.append(f + ': differs beyond the added columns')
    else:
        bad.append(f + ': differs')
print('golden_added_keys: %d files identical, %d differ only by %s'
      % (same, changed - len([m for m in bad if 'beyond' in m or m.endswith(': differs')]),
         ', '.join(sorted(keys))))
for m in bad:
    print('golden_added_keys: ' + m, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
