"""README.md and docs/ name no path of one machine: vLLM's files by their path in the vLLM
package (``vllm/models/...``), ours by their path in the repository, a user's by ``~/...``.

Allowed: ``/root/.cache/huggingface`` — the Hugging Face cache inside the official vLLM image
(its user is root), which the Docker examples mount — and paths elided with ``…``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# An absolute path under a directory that only one machine has the same, or an installed
# Python package's directory (site-packages / dist-packages) spelt out absolutely.
MACHINE_PATH = re.compile(
    r"(?<![\w.~…/-])(?:/(?:work|tmp|root|home|Users|mnt|scratch|var/folders)/[^\s`'\")\]]*"
    r"|/[^\s`'\")\]…]*/(?:site|dist)-packages\b[^\s`'\")\]]*)"
)
ALLOWED = re.compile(r"/root/\.cache/huggingface(?:/|\b)")


def machine_paths(text: str) -> list[str]:
    return [m.group(0) for m in MACHINE_PATH.finditer(text) if not ALLOWED.match(m.group(0))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_machine_paths(path):
    found = [(n, hit) for n, line in enumerate(path.read_text().splitlines(), 1) for hit in machine_paths(line)]
    assert found == [], "\n".join(f"{path.name}:{n}: {hit}" for n, hit in found)


def test_the_check_finds_what_it_should():
    assert machine_paths("Python source in `/work/vllm-src/<v>/vllm/`.") == ["/work/vllm-src/<v>/vllm/"]
    assert machine_paths("OK python 3.11.7 (/root/.cache/dsv4-launch/venvs/x/bin/python)") == [
        "/root/.cache/dsv4-launch/venvs/x/bin/python"]
    assert machine_paths("see /home/alice/.cache/huggingface/hub") == ["/home/alice/.cache/huggingface/hub"]
    assert machine_paths("at /usr/lib/python3/dist-packages/vllm/x.py") == ["/usr/lib/python3/dist-packages/vllm/x.py"]
    assert machine_paths("in /opt/venv/lib/python3.12/site-packages/vllm") == [
        "/opt/venv/lib/python3.12/site-packages/vllm"]
    assert machine_paths("written to /tmp/x.log") == ["/tmp/x.log"]
    # what may stay
    assert machine_paths("vllm/models/deepseek_v4/nvidia/model.py and src/dsv4_launch/core/rules/engine.py") == []
    assert machine_paths("vLLM 0.33.0 (…/site-packages/vllm, runs in this process)") == []
    assert machine_paths("-v ~/.cache/huggingface:/root/.cache/huggingface") == []
    assert machine_paths("'/root/.cache/huggingface/hub/models--x/blobs/9f2c.incomplete'") == []
    assert machine_paths("~/.cache/dsv4-launch/venvs/vllm-0.24.0/bin/python and .venv/bin/python") == []
    assert machine_paths("https://example.com/home/page and /etc/dsv4-serve/dsv4-serve.env") == []
