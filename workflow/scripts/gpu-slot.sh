#!/usr/bin/env bash
# Run a command on a free local GPU: gpu-slot.sh N LOCKDIR COMMAND...
#
# With N > 1 GPUs on this machine, take the first device whose lock file LOCKDIR/gpuI.lock
# is free (flock), hold it while COMMAND runs, and give COMMAND CUDA_VISIBLE_DEVICES=I (or
# the I-th entry of an existing CUDA_VISIBLE_DEVICES list), so `--device 0` is that GPU.
# Snakemake's `--resources gpu=N` keeps at most N GPU jobs running, so a device is free
# within a moment. With N <= 1, or inside a SLURM job (SLURM sets CUDA_VISIBLE_DEVICES to
# the GPU it granted), COMMAND runs unchanged.
set -euo pipefail
count=$1
lockdir=$2
shift 2
if [[ $count -le 1 || -n ${SLURM_JOB_ID:-} ]]; then
    exec "$@"
fi
IFS=, read -r -a visible <<< "${CUDA_VISIBLE_DEVICES:-}"
mkdir -p "$lockdir"
while true; do
    for ((device = 0; device < count; device++)); do
        exec {lock}>"$lockdir/gpu$device.lock"
        if flock -n "$lock"; then
            export CUDA_VISIBLE_DEVICES=${visible[$device]:-$device}
            "$@"
            exit
        fi
        exec {lock}>&-
    done
    sleep 1
done
