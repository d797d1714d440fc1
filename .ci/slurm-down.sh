#!/usr/bin/env bash
# Stop the single-node SLURM cluster started by .ci/slurm-up.sh (daemons only; packages stay).
set -uo pipefail
for daemon in slurmd slurmctld slurmdbd munged; do
    pidfile=""
    case $daemon in
        slurmd) pidfile=/run/slurmd.pid ;;
        slurmctld) pidfile=/run/slurmctld.pid ;;
        munged) pidfile=/run/munge/munged.pid ;;
    esac
    if [[ -n $pidfile && -s $pidfile ]]; then
        kill "$(cat "$pidfile")" 2>/dev/null || true
    fi
done
sleep 1
echo "slurm-down.sh: daemons stopped"
