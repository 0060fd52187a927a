"""Reading ``vllm serve`` arguments exactly as vLLM does, without importing vLLM (pure).

``option_table`` holds vLLM's option strings per release (recorded from the real parser),
``serve_args`` reproduces vLLM's pre-processing and parses on a replica parser, and writes a
planned change back into the user's tokens (``apply_changes``), ``secrets`` names the options whose
values are never printed.
"""
