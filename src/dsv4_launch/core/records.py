"""``Record``: immutable value classes at a fraction of ``dataclasses``' start-up cost.

    class Layout(Record):
        tp: int
        pp: int = 1

``dataclasses`` compiles several methods per class (its import, with ``inspect``, vLLM's CLI
makes anyway; the per-class code generation is ours alone): across this package that was most
of ~20 ms of a dsv4-serve start, and of every ``plan``. ``collections.namedtuple`` compiles a
``__new__`` with ``eval`` and builds a second class (~130 µs a record); a class decorator would
build a second class too (~25 µs). A record is one tuple subclass, made once by the metaclass
from the class body's annotated fields and their defaults, keeping its methods and properties:
immutable, ``_replace(...)`` for copies, ``_fields``, and compared by value *and type* — a
record never equals a plain tuple or a record of another class. Type checkers see a record as a
frozen dataclass (PEP 681 ``dataclass_transform`` on the base, read only under
``TYPE_CHECKING``) plus ``_replace``/``_fields`` (tools/mypy_records.py).
"""

from __future__ import annotations

from operator import itemgetter
from types import MappingProxyType

TYPE_CHECKING = False  # typing is not imported at run time (start-up); type checkers read it as True
if TYPE_CHECKING:
    import sys
    from typing import ClassVar

    if sys.version_info >= (3, 11):
        from typing import dataclass_transform
    else:
        from typing_extensions import dataclass_transform

EMPTY: MappingProxyType = MappingProxyType({})  # an immutable empty mapping, for defaults

_MISSING = object()


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


class _RecordType(type):
    """Makes each ``Record`` subclass, once: its annotated names become the tuple's fields."""

    def __new__(mcs, name, bases, body):
        if bases == (tuple,):  # Record itself
            return super().__new__(mcs, name, bases, body)
        if bases != (Record,):
            raise TypeError(f"{name}: a record derives from Record alone (records do not inherit fields)")
        names = tuple(body.get("__annotations__", {}))
        first_default = next((at for at, n in enumerate(names) if n in body), len(names))
        missing = [n for n in names[first_default:] if n not in body]
        if missing:
            raise TypeError(f"{name}: fields with defaults must come last ({missing})")
        private = [n for n in names if n.startswith("_")]
        if private:  # _fields, _replace, … belong to the record
            raise TypeError(f"{name}: field names cannot start with an underscore ({private})")
        defaults = tuple(body.pop(n) for n in names[first_default:])
        for at, field in enumerate(names):
            body[field] = property(itemgetter(at))
        body.update(__slots__=(), _fields=names, _index={n: at for at, n in enumerate(names)},
                    _defaults=(_MISSING,) * (len(names) - len(defaults)) + defaults)
        return super().__new__(mcs, name, bases, body)


if TYPE_CHECKING:
    @dataclass_transform(frozen_default=True)
    class Record:
        """A frozen value class (see the module's docstring)."""

        _fields: ClassVar[tuple[str, ...]]
else:
    class Record(tuple, metaclass=_RecordType):
        """A frozen value class (see the module's docstring)."""

        __slots__ = ()
        __new__ = _new
        __repr__ = _repr
        __eq__ = _eq
        __ne__ = _ne
        __hash__ = tuple.__hash__
        __getnewargs__ = _getnewargs
        _replace = _replace
