#!/usr/bin/env bash
# Start a single-node SLURM cluster on loopback for tests/workflow/test_workflow_slurm.py (run as root).
#
# Installs Debian's slurm-wlm and munge, writes a minimal slurm.conf describing this machine
# (its real CPU count and memory), starts munged, slurmctld and slurmd, waits until `sinfo`
# shows the node idle, and installs snakemake-executor-plugin-slurm.
#
# Job status: with AccountingStorageType=accounting_storage/none there is no slurmdbd, and
# `sacct` answers "accounting storage is disabled". The slurm executor plugin then needs
# `--slurm-status-command squeue`; squeue sees finished jobs for MinJobAge seconds, so
# MinJobAge is set to an hour (the plugin checks it and warns when it is too short).
set -euo pipefail

if [[ $EUID -ne 0 ]]; then
    echo "slurm-up.sh: must run as root" >&2
    exit 2
fi

export DEBIAN_FRONTEND=noninteractive
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

host=$(hostname -s)
cpus=$(nproc)
# RealMemory in MB, a little below the total so slurmd does not drain the node.
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
chown -R slurm:slurm /var/spool/slurmctld /var/log/slurm 2>/dev/null || true

cat > /etc/slurm/slurm.conf <<CONF
ClusterName=gpualign
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=3600
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${memory} State=UNKNOWN
PartitionName=main Nodes=${host} Default=YES MaxTime=INFINITE State=UP
CONF
rm -f /etc/slurm/cgroup.conf

if [[ ! -s /etc/munge/munge.key ]]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd

for _ in $(seq 60); do
    if sinfo -h -N -o "%T" 2>/dev/null | grep -qx idle; then
        break
    fi
    scontrol update nodename="${host}" state=resume >/dev/null 2>&1 || true
    sleep 1
done
if ! sinfo -h -N -o "%T" | grep -qx idle; then
    echo "slurm-up.sh: the node did not become idle:" >&2
    sinfo -N -l >&2 || true
    tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
    exit 1
fi

python3 -m pip install -q snakemake-executor-plugin-slurm
sinfo
