"""A mypy plugin for ``core/records.record``: the fields and ``__init__`` come from PEP 681
(``dataclass_transform`` on ``record``); this adds what a record has beyond a frozen dataclass —
``_replace(**changes)`` returning the same type, and ``_fields``. Used by ``[tool.mypy]`` only;
nothing imports it at run time."""

from __future__ import annotations

from mypy.nodes import ARG_STAR2, Argument, Var
from mypy.plugin import ClassDefContext, Plugin
from mypy.plugins.common import add_attribute_to_class, add_method_to_class
from mypy.plugins.dataclasses import dataclass_class_maker_callback
from mypy.types import AnyType, TypeOfAny
from mypy.typevars import fill_typevars

RECORD = "dsv4_launch.core.records.record"


def _add_record_members(ctx: ClassDefContext) -> bool:
    done = dataclass_class_maker_callback(ctx)  # PEP 681 (a hook here replaces mypy's own)
    info = ctx.cls.info
    anything = AnyType(TypeOfAny.explicit)
    changes = Argument(Var("changes", anything), anything, None, ARG_STAR2)
    add_method_to_class(ctx.api, ctx.cls, "_replace", [changes], fill_typevars(info))
    fields = ctx.api.named_type("builtins.tuple", [ctx.api.named_type("builtins.str")])
    add_attribute_to_class(ctx.api, ctx.cls, "_fields", fields, is_classvar=True)
    return done


class RecordsPlugin(Plugin):
    def get_class_decorator_hook_2(self, fullname: str):
        return _add_record_members if fullname == RECORD else None


def plugin(version: str):
    return RecordsPlugin
