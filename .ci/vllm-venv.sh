#!/usr/bin/env bash
# Create (once) and print the path of a cached virtual environment holding a pinned real vLLM.
# usage: .ci/vllm-venv.sh VLLM_VERSION
# The venv lives outside the checkout, keyed on the vLLM version, the Python version and the
# test requirements, so a warm CI run reuses it and a new machine builds it from scratch.
set -euo pipefail
version="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${PYTHON:-python3}"
pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
# A release whose exact pins the package index lacks has an override file (one requirement a line
# replaces vLLM's own requirement of that name; the file says why): .ci/vllm-overrides/X.txt.
overrides="$here/vllm-overrides/$version.txt"
[ -f "$overrides" ] || overrides=/dev/null
key="$(cat "$here/requirements-test.txt" "$here/vllm-venv.sh" "$overrides" | sha256sum | cut -c1-12)"  # a new recipe builds anew
root="${DSV4_LAUNCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dsv4-launch}"
venv="$root/venvs/vllm-$version-py$pyver-$key"
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  echo "creating $venv (vLLM $version: ~9 GB, a few minutes)" >&2
  "$py" -m venv "$venv"
  log="$root/logs/vllm-$version.log"
  mkdir -p "$(dirname "$log")"
  # The real vLLM gets the CUDA torch it pins from the package index: a machine-local CPU
  # torch wheel (pip find-links, e.g. /opt/wheels) beside PyPI's torchvision breaks vLLM's
  # import ("operator torchvision::nms does not exist"), so pip's configuration is not read.
  export PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS=
  if [ "$overrides" = /dev/null ]; then
    install() { "$venv/bin/python" -m pip install "vllm==$version" -r "$here/requirements-test.txt"; }
  else
    # pip has no override: vLLM goes in without its dependencies, then its own requirements
    # (markers kept, pip evaluates them; the extras' left out) with the overridden names replaced by the file's lines.
    install() {
      "$venv/bin/python" -m pip install --no-deps "vllm==$version" &&
      "$venv/bin/python" - "$overrides" >"$venv/vllm-requirements.txt" <<'PY' &&
import re, sys
from importlib.metadata import requires
name = lambda req: re.split(r"[\s<>=!~;\[(]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")
lines = [l.strip() for l in open(sys.argv[1]) if l.strip() and not l.lstrip().startswith("#")]
replaced = {name(l) for l in lines}
kept = [r for r in requires("vllm") or () if name(r) not in replaced and "extra ==" not in r.replace('"', "")]
print("\n".join(kept + lines))
PY
      "$venv/bin/python" -m pip install -r "$venv/vllm-requirements.txt" -r "$here/requirements-test.txt"
    }
  fi
  if ! { "$venv/bin/python" -m pip install --upgrade pip && install; } >"$log" 2>&1; then
    grep -v "is ignored: it is neither" "$log" | tail -40 >&2
    exit 1
  fi
  touch "$venv/.complete"
fi
echo "$venv"
