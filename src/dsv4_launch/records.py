"""``@record``: immutable value classes at a fraction of ``dataclasses``' start-up cost.

``dataclasses`` imports ``inspect`` (with ``ast``, ``dis``, ``tokenize``) and compiles several
methods per class; across this package that was ~20 ms of every dsv4-serve start, against a
50 ms budget for the whole hand-over. A record is a ``collections.namedtuple`` built from the
class's annotated fields and their defaults, keeping the class's methods and properties:
immutable, compared by value, ``_replace(...)`` for copies.
"""

from __future__ import annotations

from collections import namedtuple
from types import MappingProxyType

EMPTY: MappingProxyType = MappingProxyType({})  # an immutable empty mapping, for defaults


def record(cls):
    names = list(cls.__dict__.get("__annotations__", {}))
    defaults = [cls.__dict__[n] for n in names if n in cls.__dict__]
    missing = [n for n in names[len(names) - len(defaults):] if n not in cls.__dict__]
    if missing:
        raise TypeError(f"{cls.__name__}: fields with defaults must come last ({missing})")
    base = namedtuple(cls.__name__, names, defaults=defaults, module=cls.__module__)
    skip = set(names) | {"__dict__", "__weakref__", "__annotations__"}
    body = {k: v for k, v in cls.__dict__.items() if k not in skip}
    body["__slots__"] = ()
    made = type(cls.__name__, (base,), body)
    made.__qualname__ = cls.__qualname__
    made.__doc__ = cls.__doc__
    return made
