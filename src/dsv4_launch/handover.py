"""Hand over to vLLM (adapter): its own CLI, in this process, so the process is vLLM's.

``sys.argv`` is set before any vLLM module is imported (vLLM's ``main()`` reads it), and no
signal handler is installed here: vLLM installs its own. When vLLM is not importable in this
environment, the ``vllm`` on PATH replaces this process (``os.execvp``: same PID, same
signals). Nothing here runs at import time: vLLM's spawned workers re-import the console
script that started them.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Mapping, Optional, Sequence

from .vllm_install import VllmInstall

EXIT_NO_VLLM = 127
EXEC_MARK = "DSV4_LAUNCH_EXECED"  # set on the exec path, to stop a `vllm` → dsv4-serve loop


class NoVllm(Exception):
    """No vLLM to hand over to; the message says how to install one."""


def run_vllm_in_process(argv: Sequence[str]) -> int:
    """Run ``vllm serve ARGV`` here; vLLM's own exit status (``None`` → 0)."""
    sys.argv = ["vllm", "serve", *argv]
    from vllm.entrypoints.cli.main import main  # only now: vLLM import costs seconds

    result = main()
    return 0 if result is None else result


def exec_vllm(executable: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Replace this process with ``vllm serve ARGV``. Returns only by raising OSError."""
    sys.stdout.flush()
    sys.stderr.flush()
    new_env = dict(env)
    new_env[EXEC_MARK] = "1"
    os.execve(executable, ["vllm", "serve", *argv], new_env)


def hand_over(
    argv: Sequence[str],
    vllm: VllmInstall,
    env: Mapping[str, str],
    *,
    in_process: Callable[[Sequence[str]], int] = run_vllm_in_process,
    execute: Optional[Callable[[str, Sequence[str], Mapping[str, str]], None]] = None,
) -> int:
    if vllm.importable:
        return in_process(argv)
    if vllm.executable is None:
        raise NoVllm(
            "vLLM is not installed in this environment and there is no `vllm` on PATH; "
            "install it next to dsv4-launch (pip install 'dsv4-launch[vllm]', keeping the "
            "torch/CUDA build you need) or put your vLLM environment's bin/ on PATH"
        )
    if env.get(EXEC_MARK):
        raise NoVllm(
            f"`{vllm.executable}` started dsv4-serve again instead of vLLM (it is a wrapper "
            "around dsv4-serve?); point PATH at the real vLLM"
        )
    (execute or exec_vllm)(vllm.executable, argv, env)
    return 0  # only reached with a fake `execute` in tests
