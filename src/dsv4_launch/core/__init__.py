"""The pure core: facts in, plan out.

Nothing here touches files, NVML, the terminal or vLLM, and nothing imports click, rich,
pynvml, yaml or vllm (tests/test_layers.py keeps it so). Every decision is read from rule rows
(``kv.py``, ``rules_dsv4.py``, ``doctor_rules.py``) and tested with plain tables.
"""
