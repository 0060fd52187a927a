"""The pure core: facts in, plan out.

Nothing here touches files, NVML, the terminal or vLLM, and nothing imports click, rich,
pynvml, yaml or vllm (tests/project/test_layers.py keeps it so). The decisions about a configuration
are rule rows (``rules/``: the engine, the topic modules, doctor's rows; one is
still prose: ``plan.py``'s warning for a Ray head without GPUs), tested with plain tables;
doctor's machine lines (``doctor.py``) describe the machine and fail only where nothing can run.
"""
