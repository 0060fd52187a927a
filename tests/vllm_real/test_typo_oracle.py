"""A near miss of plan's own options is a usage error only where the release's real vLLM parser
rejects the name too: for every generated near miss of --json, --vllm-version, --gpus and
--gpu-memory (a letter dropped, doubled or swapped, upper case, `_` for `-`, a prefix) and for
every prefix of a vLLM option that starts like ours, ``own_options.parse`` and vLLM's own parser
(argparse with allow_abbrev, FlexibleArgumentParser's `_` spelling) are compared, with and
without a value after the name."""

from __future__ import annotations

from dsv4_launch.commands.own_options import PLANNING, UsageError, load, parse

from .conftest import real_parse

M = "deepseek-ai/DeepSeek-V4-Flash"


def _near_misses(name: str) -> set[str]:
    body = name[2:]
    found = {name.upper(), "--" + body.replace("-", "_"), name + "s", name + "x"}
    for i in range(len(body)):
        found.add("--" + body[:i] + body[i + 1:])  # a letter dropped
        found.add("--" + body[:i] + body[i] + body[i:])  # a letter doubled
        if i + 1 < len(body):
            found.add("--" + body[:i] + body[i + 1] + body[i] + body[i + 2:])  # two letters swapped
    found |= {"--" + body[:n] for n in range(2, len(body))}  # prefixes
    return {t for t in found if t.startswith("--") and len(t) > 3 and t != name}


def test_a_typo_of_ours_is_never_a_name_vllm_takes(real_vllm):
    top, serve, version = real_vllm
    plan = load("plan")
    ours = {o.name for o in PLANNING}
    tokens = set().union(*(_near_misses(o.name) for o in PLANNING))
    tokens |= {o[:n] for o in serve._option_string_actions if o.startswith(("--gpu", "--js", "--vllm"))
               for n in range(4, len(o) + 1)}
    typos = []
    for token in sorted(tokens - ours - {"--help"}):
        try:
            parse(plan, ["--vllm-version", version, M, token, "1"], env={})
        except UsageError:
            typos.append(token)
            taken = [args for args in ([M, token, "1"], [M, token]) if real_parse(top, args)[0] == "ok"]
            assert not taken, f"{token} is vLLM {version}'s ({taken[0]}) but was taken for a typo of ours"
    assert len(typos) > 20  # the check ran on near misses, not only on names vLLM has
