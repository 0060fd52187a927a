"""dsv4-launch: a drop-in ``vllm serve`` that fixes DeepSeek-V4's known-fatal defaults.

Importing this package (or any module in it) has no side effects: vLLM's spawned worker
processes re-import the console script that started them.
"""

__version__ = "0.1.0"
