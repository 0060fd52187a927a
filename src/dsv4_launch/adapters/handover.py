"""Hand over to vLLM (adapter): its own CLI, in this process, so the process is vLLM's.

``sys.argv`` is set before any vLLM module is imported (vLLM's ``main()`` reads it); no signal
handler is installed here (vLLM installs its own). Not importable here: the ``vllm`` on PATH
replaces this process (``os.execve``: same PID, signals). Nothing runs at import time: vLLM's
spawned workers re-import the console script that started them.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping, Sequence

from .vllm_install import VllmInstall, script_interpreter

EXEC_MARK = "DSV4_LAUNCH_EXECED"  # set on the exec path, to stop a `vllm` → dsv4-serve loop
SHELL = "/bin/sh"  # runs a `vllm` script without a "#!" line (ENOEXEC), as execvp(3) does


class NoVllm(Exception):
    """No vLLM to hand over to; the message says how to get one."""


def install_hint(env=None) -> str:
    """Commands that work as written from here: add vLLM to this very environment, the way its
    installer does it (pip, uv, pipx inject, uv tool --with, conda's pip: adapters/installer.py),
    or point PATH at an environment that has it. ``env``: an ``installer.Installer`` (tests)."""
    from .installer import add_command, this_environment, where  # only on this error path

    env = env or this_environment()
    return (f"install it into {where(env)} ({add_command(env, 'vllm')}; it brings its own torch/CUDA build) or put "
            "the bin/ folder of the environment that has vLLM on PATH (export PATH=/path/to/venv/bin:$PATH)")


def run_vllm_in_process(argv: Sequence[str]) -> int:
    """Run ``vllm serve ARGV`` here; vLLM's own exit status (``None`` → 0). First the heap is frozen,
    as vLLM freezes its own once up (``vllm/utils/gc_utils.py`` ``freeze_gc_heap``, 0.24–0.34): what
    lives until the exit (our modules, the plan) would be traversed by every full collection while
    vLLM starts. Only the young generations are collected before (~0.2 ms): a full collection walks
    the whole heap (~2 ms of a start, benchmarks/bench.py) to free nothing but a dozen objects made
    at import time (the run's own cycles are young); those are frozen with the rest."""
    sys.argv = ["vllm", "serve", *argv]
    gc.collect(1)
    gc.freeze()
    from vllm.entrypoints.cli.main import main  # only now: vLLM import costs seconds

    result = main()
    return 0 if result is None else result


def exec_vllm(executable: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Replace this process with ``vllm serve ARGV``. Returns only by raising OSError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass  # a closed or full stream must not stop vLLM
    new_env = {**env, EXEC_MARK: "1"}
    try:
        os.execve(executable, ["vllm", "serve", *argv], new_env)
    except OSError as exc:
        import errno

        if exc.errno != errno.ENOEXEC:
            raise
        # Not a binary and no "#!" line: what execvp(3), sh, bash and env do — run it with the
        # shell, the script's path as $0 (POSIX execvp: argv = sh, file, args...).
        os.execve(SHELL, [SHELL, executable, "serve", *argv], new_env)


def exec_failure(executable: str, error: OSError, env_path: str | None = None) -> str:
    """Why ``exec`` of the `vllm` script failed, in words that point at the fix."""
    import errno

    if error.errno == errno.ENOENT:
        _, written = script_interpreter(executable, env_path)
        if written:
            return (f"cannot run {executable}: its interpreter {written} does not exist (the environment it "
                    "was installed in moved or was deleted; reinstall vLLM there)")
    if error.errno == errno.EACCES:
        return f"cannot run {executable}: permission denied (chmod +x it)"
    if error.errno == errno.ENOEXEC:
        return f"cannot run {executable}: not an executable or a script with a #! line"
    return f"cannot run {executable}: {error.strerror or error}"


def hand_over(argv: Sequence[str], vllm: VllmInstall, env: Mapping[str, str]) -> int:
    if vllm.importable:
        return run_vllm_in_process(argv)
    if vllm.executable is None:
        prefix = f"{vllm.note}; " if vllm.note and "not executable" in vllm.note else ""
        raise NoVllm(f"{prefix}vLLM is not importable here and there is no usable `vllm` on PATH: {install_hint()}")
    if env.get(EXEC_MARK):
        raise NoVllm(f"`{vllm.executable}` started dsv4-serve again instead of vLLM (it is a wrapper around "
                     "dsv4-serve?); put the bin/ folder of the environment that has vLLM first on PATH")
    exec_vllm(vllm.executable, argv, env)
    return 0  # not reached: exec replaces this process or raises
