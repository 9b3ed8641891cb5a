"""README.md's examples, run as a newcomer runs them: every command of its ```bash blocks, in
the README's order, in a fresh folder (HOME there too) on the session's local 3-node Slurm
(whose nodes have placeholder GPUs, so `--gpus-per-node 8` schedules); the ```console block's
command is run and its output compared. A changed example that breaks fails here.

Each command takes the first RULE that matches it: what exit codes it may end with (a watch
exits like a monitoring plugin: 0, 1 or 2; 3 would be rtool's own error), what to wait for
first, or why it is not run here. A README command that no rule covers fails the test, and so
does a rule that no command uses: the table follows the README.

Set-up (SETUP_FILES, `sandbox`): the scripts the examples name (train.py calls the shim and
finishes at once; job.slurm, finetune.py), cfg.yaml, bad.toml for the console example, a held
job `pretrain` for `--after-name pretrain`, a running job whose id replaces the README's `4242`,
the site paths /scratch (a real tmpfs) and the node-exporter textfile folder replaced by folders
of the sandbox, and ~/.config/rtool/rtool.toml with what `rtool watch all` watches and the
pre-flight off (the placeholder GPUs have no nvidia-smi to ask).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from tests.docs.readme import Example, examples
from tests.helpers import wait_for

Wait = Callable[[Slurm], None]


def _until_done(name: str) -> Wait:
    """Until the jobs called `name` ended and accounting recorded an attempt that ran."""

    def wait(slurm: Slurm) -> None:
        def done() -> bool:
            if slurm.squeue(names=[name], states="PENDING,RUNNING,COMPLETING"):
                return False
            return any(r.finished and r.start for r in slurm.sacct(names=[name], since=0))

        wait_for(done, 120, 1, f"the jobs named {name} to end")

    return wait


@dataclass
class Rule:
    pattern: str
    codes: tuple[int, ...] = (0,)
    skip: str | None = None
    before: Wait | None = None
    used: list[int] = field(default_factory=list)

    def matches(self, command: str) -> bool:
        return re.match(self.pattern, command) is not None


def rules() -> list[Rule]:
    return [
        Rule(r"scripts/demo\b", skip="the demo's own test runs it (tests/e2e/test_demo.py)"),
        Rule(r"scripts/test\b", skip="the whole suite, which this test is part of"),
        Rule(r"pip install ", skip="installing: tests/install builds and installs the wheel"),
        Rule(r"rtool history llama-7b\b", before=_until_done("llama-7b")),
        Rule(r"rtool --config bad\.toml config check$", codes=(2,)),
        Rule(r"rtool watch ", codes=(0, 1, 2)),
        Rule(r"rtool (submit|save|stop|cron|nodes|silence)\b"),
        Rule(r"(cat|chmod) "),
    ]


SETUP_FILES = {
    "train.py": (
        "from rtool.shim import Guard\n\n"
        "guard = Guard.from_env(save=lambda step: print('saved', step))\n"
        "guard.exit_if_killed()\n"
        "for step in range(5):\n"
        "    guard.step(step)\n"
        "guard.finished()  # cancels the array's other tasks\n"
    ),
    "finetune.py": "print('fine-tuning')\n",
    "job.slurm": "#!/bin/bash\n#SBATCH --time=5\necho 'my own batch script'\n",
    "cfg.yaml": "lr: 0.001\n",
    "ckpt/step_000010/model.bin": "weights\n",  # a checkpoint for `rtool watch checkpoint`
    "bad.toml": (
        '[notify]\nrepeat_interval = "4 hours please"\n\n[cron]\nkeep_logz = 3\n\n'
        '[slurm]\ntimeout = "soon"\n'
    ),
}


def test_every_readme_command_has_a_rule_and_every_rule_a_command() -> None:
    table = rules()
    for ex in examples():
        rule = next((r for r in table if r.matches(ex.command)), None)
        assert rule is not None, f"README.md line {ex.line}: no rule in {__file__}: {ex.command}"
        rule.used.append(ex.line)
    unused = [r.pattern for r in table if not r.used]
    assert not unused, f"rules no README command uses (remove them): {unused}"
    assert len(examples()) > 25  # the extraction found the README's examples


@dataclass
class Sandbox:
    dir: Path
    env: dict[str, str]
    rewrites: dict[str, str]

    def run(self, ex: Example) -> subprocess.CompletedProcess[str]:
        command = ex.command
        for old, new in self.rewrites.items():
            command = re.sub(old, new, command)
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.dir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )


@pytest.fixture
def sandbox(tmp_path: Path, slurm: Slurm, tmpfs: Callable[..., Path]) -> Iterator[Sandbox]:
    home = tmp_path / "home"
    (home / ".config" / "rtool").mkdir(parents=True)
    scratch = tmpfs("scratch", size="20M", inodes=1000)
    (tmp_path / "textfile").mkdir()
    for name, text in SETUP_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (home / ".config" / "rtool" / "rtool.toml").write_text(
        "[nodes.preflight]\nenabled = false\n"  # placeholder GPUs: no nvidia-smi to ask
        f'[[watch.job]]\nname = "train"\n[[watch.disk]]\npath = "{scratch}"\nmax_used = "95%"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RTOOL_", "XDG_"))}
    env |= {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    where = str(tmp_path)
    held = slurm.sbatch(["--hold", "--job-name=pretrain"], script="#!/bin/sh\ntrue\n", cwd=where)
    busy = slurm.sbatch(["--job-name=memory-holder"], script="#!/bin/sh\nsleep 600\n", cwd=where)
    wait_for(lambda: slurm.squeue(job_ids=[busy.job_id], states="RUNNING"), 60, 0.5)
    rewrites = {
        r"/scratch(?=[\s/]|$)": str(scratch),
        r"/var/lib/node-exporter/textfile": str(tmp_path / "textfile"),
        r"--job 4242\b": f"--job {busy.job_id}",
    }
    box = Sandbox(tmp_path, env, rewrites)
    try:
        yield box
    finally:
        subprocess.run(["bash", "-c", "rtool cron uninstall"], cwd=tmp_path, env=env, timeout=60)
        slurm.scancel([held.job_id, busy.job_id])
        for name in ("train", "job", "finetune", "llama-7b"):
            slurm.scancel(name=name)


@pytest.mark.slurm
@pytest.mark.timeout(600)
def test_the_readme_examples_run_on_the_local_cluster(slurm: Slurm, sandbox: Sandbox) -> None:
    table = rules()
    ran = 0
    for ex in examples():
        rule = next(r for r in table if r.matches(ex.command))
        if rule.skip:
            continue
        if rule.before:
            rule.before(slurm)
        res = sandbox.run(ex)
        where = f"README.md line {ex.line}: {ex.command}\nexit {res.returncode}\n"
        assert res.returncode in rule.codes, where + res.stdout + res.stderr
        assert "Traceback" not in res.stderr, where + res.stderr
        if ex.output is not None:
            assert res.stdout + res.stderr == ex.output, where + res.stdout + res.stderr
        ran += 1
    assert ran > 20
