#!/usr/bin/env bash
# Stop the single-node SLURM cluster started by .ci/slurm-up.sh (daemons only; packages stay).
set -uo pipefail
for pidfile in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do
    if [[ -s $pidfile ]]; then
        kill "$(cat "$pidfile")" 2>/dev/null || true
    fi
done
for _ in $(seq 20); do
    pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || pgrep -x munged >/dev/null || break
    sleep 0.5
done
echo "slurm-down.sh: daemons stopped"
