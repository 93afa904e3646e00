#!/usr/bin/env bash
# A real one-node Slurm cluster on this (Debian) machine, for the Slurm tests and CI.
#
#   sudo .ci/start-slurm.sh               install slurm-wlm + munge if missing, configure, start, wait
#   sudo .ci/start-slurm.sh --no-install  the same, but fail instead of running apt-get
#   sudo .ci/start-slurm.sh --stop        stop the daemons this script started
#
# No systemd needed: munged, slurmctld and slurmd are started directly (the Debian packages'
# own start at install time is refused in containers anyway). The configuration is the one
# verified on Debian 12 (slurm-wlm 22.05.8, munge 0.5.15; slurm.conf(5) and gres.conf(5) of 22.05):
# one node named after `hostname -s` with the CPUs and memory `slurmd -C` reports, no
# accounting database (so Snakemake must query job status with squeue: profiles/ci-slurm),
# proctrack/linuxproc (no cgroups). A GPU, when /dev/nvidia0 exists, is declared as gres gpu.
#
# Idempotent: if the node is already up and idle it only prints the cluster state. An existing
# slurm.conf that this script did not write is never replaced (the script then just starts the
# daemons of the installed configuration). On failure the reason is the last line on stderr
# and is also written to $FEDBENCH_SLURM_STATUS (default /tmp/fedbench-slurm-status), where
# tests/workflow/test_slurm.py reads it to explain why it skips.
set -euo pipefail

STATUS_FILE=${FEDBENCH_SLURM_STATUS:-/tmp/fedbench-slurm-status}
MARKER="# written by fedbench .ci/start-slurm.sh"
CONF=/etc/slurm/slurm.conf
INSTALL=1

fail() {
    echo "start-slurm: $*" >&2
    echo "$*" >"$STATUS_FILE" 2>/dev/null || true
    exit 1
}
log() { echo "start-slurm: $*" >&2; }

# A daemon is running if the process in its pid file is alive (daemons are only ever stopped
# through their pid files: by process id, never by name).
running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
stop_daemon() {
    running "$1" || return 0
    kill "$(cat "$1")" 2>/dev/null || true
    for _ in $(seq 20); do running "$1" || return 0; sleep 0.5; done
}

stop() {
    stop_daemon /run/slurmd.pid
    stop_daemon /run/slurmctld.pid
    stop_daemon /run/munge/munged.pid
    log "stopped"
}

case "${1:-}" in
    --stop) stop; exit 0 ;;
    --no-install) INSTALL=0 ;;
    "") ;;
    *) echo "usage: $0 [--no-install | --stop]" >&2; exit 2 ;;
esac

node_state() { timeout 10 sinfo -h -N -o %T 2>/dev/null | head -1 | tr -d '*~#!%$@^' || true; }
node_up() { case "$(node_state)" in idle|mixed|allocated) return 0 ;; *) return 1 ;; esac; }

[ "$(id -u)" = 0 ] || fail "not root: starting Slurm daemons needs root (run: sudo $0)"

# Already running and usable: nothing to do.
if command -v sinfo >/dev/null && node_up; then
    log "Slurm is already up: $(sinfo -h -N -o '%N %T %c CPUs %m MB' | head -1)"
    rm -f "$STATUS_FILE"
    exit 0
fi

# 1. Packages.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
    || ! command -v sbatch >/dev/null; then
    [ "$INSTALL" = 1 ] || fail "slurm-wlm/munge are not installed (and --no-install was given)"
    command -v apt-get >/dev/null || fail "slurm-wlm is not installed and there is no apt-get to install it"
    log "installing slurm-wlm and munge with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || fail "apt-get update failed"
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null \
        || fail "apt-get install slurm-wlm munge failed"
fi

# 2. munge: key, runtime dir, daemon.
install -d -o munge -g munge -m 0700 /etc/munge
install -d -o munge -g munge -m 0755 /run/munge /var/log/munge /var/lib/munge
if [ ! -s /etc/munge/munge.key ]; then
    if command -v mungekey >/dev/null; then
        runuser -u munge -- mungekey -c -f -k /etc/munge/munge.key || fail "mungekey could not create the key"
    else
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
        chown munge:munge /etc/munge/munge.key
    fi
    chmod 0400 /etc/munge/munge.key
fi
if ! (munge -n </dev/null | unmunge >/dev/null) 2>/dev/null; then
    runuser -u munge -- /usr/sbin/munged --force || fail "munged did not start (see /var/log/munge/munged.log)"
    for _ in $(seq 20); do (munge -n </dev/null | unmunge >/dev/null) 2>/dev/null && break; sleep 0.5; done
    (munge -n </dev/null | unmunge >/dev/null) 2>/dev/null || fail "munge does not authenticate"
fi

# 3. slurm.conf for this machine (never overwrite a configuration we did not write).
HOST=$(hostname -s)
NODE_LINE=$(slurmd -C 2>/dev/null | head -1) || true
[ -n "$NODE_LINE" ] || fail "slurmd -C printed nothing"
CPUS=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")
MEM=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")
MEM=$(( MEM * 9 / 10 ))  # leave headroom: slurmd drains a node that reports less than configured
GRES_TYPES="" NODE_GRES=""
if [ -e /dev/nvidia0 ]; then
    NGPU=$(ls /dev/nvidia[0-9]* 2>/dev/null | wc -l)
    GRES_TYPES="GresTypes=gpu"
    NODE_GRES="Gres=gpu:${NGPU}"
fi
OURS=0
if [ ! -e "$CONF" ] || grep -qF "$MARKER" "$CONF"; then
    OURS=1
    mkdir -p /etc/slurm
    cat >"$CONF" <<EOF
$MARKER ($(date -u +%FT%TZ)); one node, no accounting, no cgroups
ClusterName=fedbench-ci
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
# squeue shows finished jobs for MinJobAge seconds: Snakemake's squeue status queries need
# MinJobAge >= 3 x slurm-init-seconds-before-status-checks.
MinJobAge=300
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
$GRES_TYPES
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM $NODE_GRES State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
    if [ -n "$NODE_GRES" ]; then
        : >/etc/slurm/gres.conf
        for dev in /dev/nvidia[0-9]*; do echo "Name=gpu File=$dev" >>/etc/slurm/gres.conf; done
    fi
    log "wrote $CONF for node $HOST ($CPUS CPUs, $MEM MB${NODE_GRES:+, $NODE_GRES})"
else
    log "keeping the existing $CONF (not written by this script)"
fi

# 4. Daemons (slurmctld -i: ignore stale state from an earlier configuration). Daemons that run
# with our configuration but did not bring the node up are restarted.
install -d /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
if [ "$OURS" = 1 ] && { running /run/slurmctld.pid || running /run/slurmd.pid; }; then
    log "restarting the Slurm daemons"
    stop_daemon /run/slurmd.pid
    stop_daemon /run/slurmctld.pid
fi
running /run/slurmctld.pid || slurmctld -i || fail "slurmctld did not start (see /var/log/slurm/slurmctld.log)"
running /run/slurmd.pid || slurmd || fail "slurmd did not start (see /var/log/slurm/slurmd.log)"

# 5. Wait until the node is idle.
state=""
for i in $(seq 60); do
    state=$(node_state)
    case "$state" in
        idle|mixed) break ;;
        down|drained|draining|drain|fail) scontrol update nodename="$HOST" state=resume 2>/dev/null || true ;;
    esac
    sleep 1
done
[ "$state" = idle ] || [ "$state" = mixed ] || fail "the node did not become idle within 60 s (state: ${state:-unknown}; see /var/log/slurm/)"
timeout 60 srun -N1 -t 1 true || fail "srun could not run a test job"
rm -f "$STATUS_FILE"
log "Slurm is up: $(sinfo -h -N -o '%N %T %c CPUs %m MB' | head -1)"
