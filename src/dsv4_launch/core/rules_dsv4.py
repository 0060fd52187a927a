"""Moved: the rows are in the topic modules (``rules_kv.py``, ``rules_parallel.py``,
``rules_speculative.py``, ``rules_recipe.py``, ``rules_releases.py``, ``rules_memory.py``) and
``plan.RULES`` is their order. This name stays only until commands/explain.py imports ``plan.RULES``."""

from .plan import RULES

__all__ = ["RULES"]
