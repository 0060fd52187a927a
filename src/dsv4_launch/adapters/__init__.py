"""Adapters: gather facts from the machine (NVML, files, the installed vLLM) and act (hand over).

Each one degrades to "unknown, with a one-line reason" instead of raising: a fact that cannot
be read never stops a start that plain ``vllm serve`` would make.
"""
