"""A fake vLLM package for dsv4-launch's tests: only the CLI entry point, see entrypoints/cli/main.py."""
