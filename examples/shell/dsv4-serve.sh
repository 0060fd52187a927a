# shellcheck shell=sh
# dsv4-serve in your shell: POSIX sh, so it works in bash, zsh and dash alike. Source it from
# ~/.bashrc or ~/.zshrc (or from the file $ENV names, for an interactive POSIX sh/dash):
#
#     . /path/to/dsv4-launch/examples/shell/dsv4-serve.sh
#
# Shell alias: `vllm-serve ARGS` runs `dsv4-serve ARGS`, e.g. on two 96 GB GPUs:
#
#     vllm-serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size 2 --max-model-len 65536 --max-num-batched-tokens 2048 \
#         --tokenizer-mode deepseek_v4 --enable-auto-tool-choice --tool-call-parser deepseek_v4 --reasoning-parser deepseek_v4 \
#         --host 127.0.0.1
#
# (why this context on two 96 GB GPUs: docs/deployment.md ("Memory"); the tokenizer mode and
# parsers are the vLLM recipes' for DeepSeek-V4; --host 127.0.0.1: this machine only — without
# it vLLM listens on every interface, and then it needs an API key: export VLLM_API_KEY first)
#
# It is an alias, not a function, because a name with a '-' in it is not a valid
# POSIX function name (dash: "Bad function name") but is a valid alias name. If you only want
# the alias, this one line in your shell's rc file is all it takes:
#
#     alias vllm-serve=dsv4-serve
#
# (Shells expand aliases only where you type commands — interactive shells; a script should
# call dsv4-serve itself.)
#
# Set DSV4_WRAP_VLLM=1 before sourcing and `vllm serve ...` goes through dsv4-serve as well: a
# shell function named `vllm` sends `vllm serve ARGS` to `dsv4-serve ARGS`, and every other vllm
# subcommand (bench, chat, collect-env, --version, ...) to the real vllm unchanged
# (`command vllm`, which skips the function).

alias vllm-serve=dsv4-serve

if [ "${DSV4_WRAP_VLLM:-0}" = 1 ]; then
    vllm() {
        if [ "$#" -gt 0 ] && [ "$1" = serve ]; then
            shift
            dsv4-serve "$@"
        else
            command vllm "$@"
        fi
    }
fi
