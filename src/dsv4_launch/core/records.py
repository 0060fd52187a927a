"""``@record``: immutable value classes at a fraction of ``dataclasses``' start-up cost.

``dataclasses`` imports ``inspect`` (with ``ast``, ``dis``, ``tokenize``) and compiles several
methods per class; across this package that was ~20 ms of every dsv4-serve start. A record is a
``collections.namedtuple`` built from the class's annotated fields and their defaults, keeping
the class's methods and properties: immutable, ``_replace(...)`` for copies, and compared by
value *and type* — a record never equals a plain tuple or a record of another class.
"""

from __future__ import annotations

from collections import namedtuple
from types import MappingProxyType

EMPTY: MappingProxyType = MappingProxyType({})  # an immutable empty mapping, for defaults


def _eq(self, other):
    return type(self) is type(other) and tuple.__eq__(self, other)


def _ne(self, other):
    return not _eq(self, other)


def record(cls):
    names = list(cls.__dict__.get("__annotations__", {}))
    defaults = [cls.__dict__[n] for n in names if n in cls.__dict__]
    missing = [n for n in names[len(names) - len(defaults):] if n not in cls.__dict__]
    if missing:
        raise TypeError(f"{cls.__name__}: fields with defaults must come last ({missing})")
    base = namedtuple(cls.__name__, names, defaults=defaults, module=cls.__module__)
    skip = set(names) | {"__dict__", "__weakref__", "__annotations__"}
    body = {k: v for k, v in cls.__dict__.items() if k not in skip}
    body.update(__slots__=(), __eq__=_eq, __ne__=_ne, __hash__=tuple.__hash__)
    made = type(cls.__name__, (base,), body)
    made.__qualname__ = cls.__qualname__
    made.__doc__ = cls.__doc__
    return made
