#!/usr/bin/env bash
# Start (or stop) a one-node Slurm on this machine, by hand, for the srun test
# in tests/launchers.rs (`srun_with_pmix_pmi2_and_the_goal_store`) against the
# machine's own network. CI does not use this script: without an answering
# Slurm that test starts one on a one-host emulated cluster, and the
# multi-host test, crates/goal-cli/tests/slurm.rs, starts its own slurmctld,
# one slurmd per emulated host and a munged (goal_netns::Slurm, see
# crates/goal-netns/src/slurm.rs and docs/cluster.md); both run whenever they
# are root with the packages below installed.
#
# Needs root and Debian's slurmd, slurmctld, slurm-client and munge packages
# (scripts/install-deps.sh installs them):
#
#   apt-get install -y --no-install-recommends slurmd slurmctld slurm-client munge
#   crates/goal-boot/tests/slurm-up.sh          # prints the SLURM_CONF to export
#   SLURM_CONF=/tmp/goal-slurm/slurm.conf cargo test -p goal-boot --test launchers srun
#   crates/goal-boot/tests/slurm-up.sh down
#
# Everything lives in /tmp/goal-slurm (config, state, logs, pid files); the
# munge key is made once if /etc/munge/munge.key is missing, and the system's
# munged (socket in /run/munge) is started if none answers. Tested with
# Slurm 22.05 (Debian 12) in a container: slurmctld and slurmd run as root
# with proctrack/linuxproc, no cgroups, in the root network namespace under
# this machine's hostname.
set -euo pipefail

DIR=/tmp/goal-slurm
CONF="$DIR/slurm.conf"
HOST="$(hostname)"

stop() {
    local f
    for f in "$DIR/slurmd.pid" "$DIR/slurmctld.pid" "$DIR/munged.pid"; do
        if [ -s "$f" ]; then
            kill "$(cat "$f")" 2>/dev/null || true
            rm -f "$f"
        fi
    done
}

if [ "${1:-up}" = down ]; then
    stop
    exit 0
fi

for tool in munged slurmctld slurmd srun; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || {
        echo "slurm-up.sh: $tool missing (apt-get install slurmd slurmctld slurm-client munge)" >&2
        exit 1
    }
done
[ "$(id -u)" -eq 0 ] || { echo "slurm-up.sh: needs root" >&2; exit 1; }

mkdir -p "$DIR"/{state,spool,log} /run/munge /var/lib/munge /var/log/munge
if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
chmod 700 /etc/munge
chmod 400 /etc/munge/munge.key

cat >"$CONF" <<EOF
ClusterName=goaltest
SlurmctldHost=$HOST
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$HOST CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF

stop
# munged refuses to run as root; start it only if no munged answers yet, and
# remember its pid so that `down` stops only what this script started.
if ! munge -n >/dev/null 2>&1; then
    su -s /bin/sh munge -c /usr/sbin/munged
    cp /run/munge/munged.pid "$DIR/munged.pid"
fi
export SLURM_CONF="$CONF"
/usr/sbin/slurmctld
/usr/sbin/slurmd
for _ in $(seq 50); do
    if sinfo -h -o %t 2>/dev/null | grep -q idle; then
        echo "export SLURM_CONF=$CONF"
        exit 0
    fi
    sleep 0.2
done
echo "slurm-up.sh: the node did not become idle; see $DIR/log" >&2
exit 1
