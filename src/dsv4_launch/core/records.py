"""``@record``: immutable value classes at a fraction of ``dataclasses``' start-up cost.

``dataclasses`` compiles several methods per class (its import, with ``inspect``, vLLM's CLI
makes anyway; the per-class code generation is ours alone): across this package that was most
of ~20 ms of a dsv4-serve start, and of every ``plan``. Type checkers see a record as a frozen
dataclass (PEP 681 ``dataclass_transform``, read only under ``TYPE_CHECKING``) plus
``_replace``/``_fields`` (tools/mypy_records.py).
``collections.namedtuple`` compiles a ``__new__`` with ``eval`` and builds a second class: ~130 µs
a record, ~3.5 ms for the thirty on the hand-over path. A record is one tuple subclass made
with ``type()`` from the class's annotated fields and their defaults, keeping the class's
methods and properties: immutable, ``_replace(...)`` for copies, ``_fields``, and compared by
value *and type* — a record never equals a plain tuple or a record of another class.
"""

from __future__ import annotations

from operator import itemgetter
from types import MappingProxyType

TYPE_CHECKING = False  # typing is not imported at run time (start-up); type checkers read it as True
if TYPE_CHECKING:
    import sys

    if sys.version_info >= (3, 11):
        from typing import dataclass_transform
    else:
        from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_):  # run time: records need nothing of it
        return lambda decorated: decorated

EMPTY: MappingProxyType = MappingProxyType({})  # an immutable empty mapping, for defaults

_MISSING = object()
_SKIPPED = frozenset({"__dict__", "__weakref__", "__annotations__"})


def _eq(self, other):
    return type(self) is type(other) and tuple.__eq__(self, other)


def _ne(self, other):
    return not _eq(self, other)


def _repr(self):
    fields = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"{type(self).__name__}({fields})"


def _replace(self, /, **changes):
    values = [changes.pop(name, value) for name, value in zip(self._fields, self)]
    if changes:
        raise TypeError(f"{type(self).__name__}._replace() got unexpected field(s): {sorted(changes)}")
    return tuple.__new__(type(self), values)


def _getnewargs(self):  # copy and pickle rebuild a record through __new__
    return tuple(self)


def _bind(cls, args: tuple, kwargs: dict) -> list:
    """The field values for ``cls(*args, **kwargs)``, as a call of a function would bind them."""
    names = cls._fields
    if len(args) > len(names):
        raise TypeError(f"{cls.__name__}() takes {len(names)} arguments but {len(args)} were given")
    values = [*args, *cls._defaults[len(args):]]  # each field's default, or _MISSING
    for name, value in kwargs.items():
        at = cls._index.get(name)
        if at is None:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {name!r}")
        if at < len(args):
            raise TypeError(f"{cls.__name__}() got multiple values for argument {name!r}")
        values[at] = value
    for at, value in enumerate(values):
        if value is _MISSING:
            raise TypeError(f"{cls.__name__}() missing required argument {names[at]!r}")
    return values


def _new(cls, /, *args, **kwargs):  # positional-only: a field may be called "cls"
    if kwargs or len(args) != len(cls._fields):
        args = _bind(cls, args, kwargs)
    return tuple.__new__(cls, args)


@dataclass_transform(frozen_default=True)
def record(cls):
    names = tuple(cls.__dict__.get("__annotations__", {}))
    defaults = tuple(cls.__dict__[n] for n in names if n in cls.__dict__)
    missing = [n for n in names[len(names) - len(defaults):] if n not in cls.__dict__]
    if missing:
        raise TypeError(f"{cls.__name__}: fields with defaults must come last ({missing})")
    private = [n for n in names if n.startswith("_")]
    if private:  # _fields, _replace, … belong to the record
        raise TypeError(f"{cls.__name__}: field names cannot start with an underscore ({private})")
    body = {name: property(itemgetter(at)) for at, name in enumerate(names)}
    body.update(__new__=_new, __repr__=_repr, __getnewargs__=_getnewargs, _replace=_replace)
    body.update((k, v) for k, v in cls.__dict__.items() if k not in _SKIPPED and k not in names)
    body.update(__slots__=(), __eq__=_eq, __ne__=_ne, __hash__=tuple.__hash__, _fields=names,
                _defaults=(_MISSING,) * (len(names) - len(defaults)) + defaults,
                _index={n: at for at, n in enumerate(names)})
    made = type(cls.__name__, (tuple,), body)
    made.__qualname__ = cls.__qualname__
    return made
