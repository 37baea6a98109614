"""The closed loop's Slurm side (launch/restart_loop.py ``--slurm``): the step on the healthy
nodes, the doctor pass before it, the requeue when no healthy nodes are left
(docs/restart-on-failure.md)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence

from primus_runner import log

PREFIX = "restart loop: "


def step_command(cmd: Sequence[str], hosts: Sequence[str]) -> list[str]:
    """The batch script's srun CMD on HOSTS only: its --nodes/-N words replaced by the
    count and --nodelist (pure)."""
    out: list[str] = []
    skip = False
    for word in cmd:
        if skip:
            skip = False
            continue
        if word in ("-N", "--nodes", "-w", "--nodelist", "-n", "--ntasks"):
            skip = True
            continue
        if word.startswith(("--nodes=", "--nodelist=", "--ntasks=")) or (
                word.startswith(("-N", "-w", "-n")) and len(word) > 2):
            continue
        out.append(word)
    tpn = next((int(w.split("=", 1)[1]) for w in out if w.startswith("--ntasks-per-node=")
                and w.split("=", 1)[1].isdigit()), 1)
    at = out.index("srun") + 1 if "srun" in out else 0
    # --ntasks too: the batch script's SLURM_NTASKS is the whole allocation's.
    return [*out[:at], f"--nodes={len(hosts)}", f"--ntasks={tpn * len(hosts)}", f"--nodelist={','.join(hosts)}",
            *out[at:]]


def doctor_excluded(text: str) -> list[str]:
    """The hosts of the doctor's last ``--exclude=HOSTLIST`` line (pure)."""
    from primus_runner.scheduler import hostlist

    found = [line.strip() for line in text.splitlines() if line.strip().startswith("--exclude=")]
    if not found:
        for line in text.splitlines():
            if "--exclude=" in line:
                found.append(line.split("--exclude=", 1)[1].split()[0])
        found = [f"--exclude={f}" for f in found]
    if not found:
        return []
    try:
        return hostlist.expand(found[-1].split("=", 1)[1].strip())
    except hostlist.HostlistError:
        return []



def doctor_pass(hosts: Sequence[str]) -> list[str]:
    """``primus-cli slurm doctor`` on HOSTS; the hosts it fails (said in a line)."""
    cli = os.path.join(os.environ.get("PRIMUS_RUNNER_DIR", ""), "primus-cli")
    began = time.time()
    try:
        # --ntasks too: the batch script's SLURM_NTASKS is the whole allocation's.
        done = subprocess.run([cli, "slurm", "doctor", f"--nodes={len(hosts)}", f"--ntasks={len(hosts)}",
                               f"--nodelist={','.join(hosts)}"], capture_output=True, text=True, timeout=300,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warn(f"{PREFIX}doctor pass on {','.join(hosts)} could not run ({exc}); starting the step anyway")
        return []
    bad = [h for h in doctor_excluded(done.stdout + done.stderr) if h in hosts]
    took = time.time() - began
    if done.returncode == 0 or not bad:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] if done.returncode else []
        log.info(f"{PREFIX}doctor pass on {','.join(hosts)}: exit code {done.returncode} in {took:.1f} s"
                 + ("; every node healthy" if done.returncode == 0 else
                    f"; no node named to exclude ({tail[0] if tail else 'no output'}); starting the step"))
        return []
    rows = [line.strip() for line in (done.stdout + done.stderr).splitlines()
            if any(line.strip().startswith(h + " ") for h in bad)]
    log.warn(f"{PREFIX}doctor pass on {','.join(hosts)}: {','.join(bad)} failed (exit code {done.returncode}, "
             f"{took:.1f} s): left out" + (f"; {' | '.join(rows)}" if rows else ""))
    return bad


def requeue_job(job: str, left_out: Sequence[str]) -> int:
    """Requeue JOB with LEFT_OUT excluded; 0 when done, 3 when scontrol refused."""
    from primus_runner.scheduler import hostlist

    excluded = hostlist.compress(left_out)
    # A running job's ExcNodeList cannot change: requeue it held (its batch script,
    # this process, then gets SIGTERM, and SIGKILL after KillWait), change the
    # pending job, release it.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    log.warn(f"{PREFIX}job {job}: no healthy nodes left for its size in this allocation; requeueing it with "
             f"{excluded} excluded (scontrol requeuehold; scontrol update ExcNodeList={excluded}; "
             "scontrol release)")
    steps = [["scontrol", "requeuehold", job], ["scontrol", "update", f"JobId={job}", f"ExcNodeList={excluded}"],
             ["scontrol", "release", job]]
    for step in steps:
        for _ in range(20):  # the update needs the job pending: a few tries, 0.1 s apart
            done = subprocess.run(step, capture_output=True, text=True, timeout=60, check=False)
            if done.returncode == 0 or step[1] != "update":
                break
            time.sleep(0.1)
        if done.returncode != 0:
            log.error(f"{PREFIX}{' '.join(step)} failed (exit code {done.returncode}): "
                      f"{(done.stderr or done.stdout).strip()}; the job ends here")
            return 3
    log.warn(f"{PREFIX}job {job} requeued with {excluded} excluded")
    return 0
