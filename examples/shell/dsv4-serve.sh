# shellcheck shell=bash
# dsv4-serve in your shell. Source it from ~/.bashrc or ~/.zshrc:
#
#     source /path/to/dsv4-launch/examples/shell/dsv4-serve.sh
#
# Then `vllm-serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size 2` runs dsv4-serve.
# Set DSV4_WRAP_VLLM=1 before sourcing and `vllm serve ...` goes through dsv4-serve as well;
# every other vllm subcommand (bench, chat, collect-env, --version, ...) runs vLLM unchanged.

vllm-serve() {
    dsv4-serve "$@"
}

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
