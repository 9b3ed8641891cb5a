"""What to change when the signal does not reach the training (pure): the texts the drill's
`reached` and `exit` steps end with. Each names the change for the script the job really runs:
`B:` or not, a trap that passes the signal on, `exec`, or `rtool submit` (whose template traps
and forwards it)."""

from __future__ import annotations

import signal as _signal

from rtool.drill.model import Plan
from rtool.drill.preempt import preempt_hint

#: What a batch script that passes the signal on looks like (docs/drill.md).
TRAP = "trap 'kill -{sig} $pid' {sig}; python train.py & pid=$!; wait $pid; wait $pid"


def signame(number: int) -> str:
    """`10` -> `SIGUSR1` (`signal 99` for a number this system does not name)."""
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def reach_hint(plan: Plan) -> str:
    """What to change when the signal never reached the training."""
    f, spec = plan.facts, plan.signal
    if plan.preempt is not None:
        return preempt_hint()
    if spec is not None and not spec.batch:
        if f.uses_srun and not f.rtool_template:
            return (
                f"--signal={spec.sbatch()} goes to the srun tasks: start the Guard in the "
                "training srun runs (rtool.shim), with the signal in RTOOL_SIGNALS"
            )
        return (
            f"--signal={spec.sbatch()} goes to the job steps only, never to a training the "
            f"batch shell runs itself: use --signal=B:{spec.name}@{spec.lead} with rtool "
            "submit's template (it forwards it to the training)"
        )
    if not f.rtool_template:
        return batch_hint(plan)
    if f.launcher:
        return (
            f"{f.launcher} stands between the batch shell and the training and eats it: start "
            f"the ranks with srun (one task per rank), or make {f.launcher} forward it"
        )
    return (
        "make the Guard (rtool.shim) in the training's main thread, with the signal in "
        "RTOOL_SIGNALS, before the first step"
    )


def batch_hint(plan: Plan) -> str:
    """A hand-written script whose batch shell gets a `B:` signal it does not pass on."""
    spec = plan.signal
    name = spec.name if spec is not None else "USR1"
    lead = spec.lead if spec is not None else 600
    trap = TRAP.format(sig=name)
    if plan.facts.uses_srun:
        return (
            f"the batch shell gets SIG{name} and does not pass it on (bash dies of an "
            f"untrapped {name}): drop B: so Slurm signals the srun tasks (--signal={name}@"
            f"{lead}), or trap it and pass it on ({trap.replace('python', 'srun python')}), "
            "or submit with rtool submit"
        )
    return (
        f"the batch shell gets SIG{name} and does not pass it on (bash dies of an untrapped "
        f"{name}): exec the training (exec python train.py: it becomes the batch shell and "
        f"gets the signal itself), or trap it and pass it on ({trap}), or submit with rtool "
        "submit"
    )


def wrapper_hint(plan: Plan, number: int) -> str:
    """The training's process (a wrapper script around the training) died of the signal."""
    name = signame(number).removeprefix("SIG")
    return (
        f"the process the batch script started is a wrapper that died of SIG{name} without "
        f"passing it on: exec the training from it (exec python train.py), or trap {name} "
        f"in it and pass it on ({TRAP.format(sig=name)}), or start the training itself with "
        "rtool submit"
    )
