"""The parser names completion offers (``commands/completion.KNOWN_VALUES``, facts
``tool-parser-names`` and ``reasoning-parser-names``) against the
installed vLLM's own registries: each name offered for this release is one vLLM registers
(``vllm/tool_parsers/__init__.py`` ``_TOOL_PARSERS_TO_REGISTER``, ``vllm/reasoning/__init__.py``
``_REASONING_PARSERS_TO_REGISTER``), and a name offered only from a later release is not
registered here yet."""

from __future__ import annotations

import pytest

from dsv4_launch.commands.completion import KNOWN_VALUES
from tests.vllm_real.conftest import vllm_symbol

REGISTRIES = {"tool_call_parser": ("vllm.tool_parsers", "_TOOL_PARSERS_TO_REGISTER"),
              "reasoning_parser": ("vllm.reasoning", "_REASONING_PARSERS_TO_REGISTER")}


@pytest.mark.parametrize("dest", sorted(KNOWN_VALUES))
def test_offered_parsers_are_the_releases_own(real_vllm, dest):
    version = real_vllm[2]
    registered = vllm_symbol(*REGISTRIES[dest])
    offered = set(KNOWN_VALUES[dest].at(version) or ())
    for name in {n for _, names in KNOWN_VALUES[dest].by_release for n in names}:
        if name in offered:
            assert name in registered, f"{name} is offered for vLLM {version} but not registered there"
        else:
            assert name not in registered, f"{name} is registered in vLLM {version}: its fact's ranges are wrong"
