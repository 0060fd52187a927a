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
key="$(cat "$here/requirements-test.txt" "$here/vllm-venv.sh" | sha256sum | cut -c1-12)"  # a new recipe builds anew
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
  if ! { "$venv/bin/python" -m pip install --upgrade pip &&
         "$venv/bin/python" -m pip install "vllm==$version" -r "$here/requirements-test.txt"; } >"$log" 2>&1; then
    grep -v "is ignored: it is neither" "$log" | tail -40 >&2
    exit 1
  fi
  touch "$venv/.complete"
fi
echo "$venv"
