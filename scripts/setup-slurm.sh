#!/usr/bin/env bash
# Installs the Debian 12 Slurm packages that lsched-slurm-advisor and its
# real-Slurm test (tests/cli_slurm.sh) need: slurmctld, slurmd, slurm-client,
# munge, libslurm-dev (skips apt when all are present; sudo when not root).
# Not part of scripts/setup.sh on purpose: Slurm daemons are heavy to put on
# a machine just to run the tests. .ci/run calls this when CI=true; on a
# machine without them tests/cli_slurm.sh is skipped with a SKIP: message.
# Never install slurm-wlm-emulator: it takes over /usr/sbin/slurmctld and
# slurmd through update-alternatives and cannot run this test bed.
set -euo pipefail
PKGS=(slurmctld slurmd slurm-client munge libslurm-dev)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-slurm: all packages present (${PKGS[*]})"
else
  echo "setup-slurm: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
# munge needs a key; the Debian package creates one, but an image built
# without running maintainer scripts may lack it.
if ! $SUDO test -s /etc/munge/munge.key; then
  echo "setup-slurm: creating /etc/munge/munge.key"
  $SUDO sh -c 'umask 077; dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null'
  $SUDO chown munge:munge /etc/munge/munge.key
  $SUDO chmod 400 /etc/munge/munge.key
fi
