"""Build vLLM's real ``vllm serve`` argument parser on a machine without a GPU.

Used by the oracle tests (tests/vllm_real/) and by tools/gen_vllm_options.py. Works for vLLM
0.24 and 0.33: vLLM needs a platform to build its parser, and a machine without a GPU has none,
so the CPU platform is installed first (facts §4 of the reference notes).
"""

from __future__ import annotations

import os


def install_cpu_platform() -> None:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    platforms._current_platform = CpuPlatform()


def make_serve_parser():
    """The ``serve`` subparser exactly as ``vllm`` builds it, plus the top-level parser."""
    install_cpu_platform()
    import vllm.entrypoints.cli.serve as serve
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    top = FlexibleArgumentParser(description="vLLM CLI")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve_parser = None
    for cmd in serve.cmd_init():
        sub = cmd.subparser_init(subparsers)
        if cmd.name == "serve":
            serve_parser = sub
    assert serve_parser is not None, "vLLM has no serve subcommand"
    return top, serve_parser
