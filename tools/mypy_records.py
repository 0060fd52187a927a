"""A mypy plugin for ``core/records.Record``: the fields and ``__init__`` come from PEP 681
(``dataclass_transform`` on the base class, which mypy applies itself); this adds what a record
has beyond a frozen dataclass — ``_replace(**changes)`` returning the same type. Used by
``[tool.mypy]`` only; nothing imports it at run time."""

from __future__ import annotations

from mypy.nodes import ARG_STAR2, Argument, Var
from mypy.plugin import ClassDefContext, Plugin
from mypy.plugins.common import add_method_to_class
from mypy.types import AnyType, TypeOfAny
from mypy.typevars import fill_typevars

RECORD = "dsv4_launch.core.records.Record"


def _add_replace(ctx: ClassDefContext) -> None:
    info = ctx.cls.info
    anything = AnyType(TypeOfAny.explicit)
    changes = Argument(Var("changes", anything), anything, None, ARG_STAR2)
    add_method_to_class(ctx.api, ctx.cls, "_replace", [changes], fill_typevars(info))


class RecordsPlugin(Plugin):
    def get_base_class_hook(self, fullname: str):
        return _add_replace if fullname == RECORD else None


def plugin(version: str):
    return RecordsPlugin
