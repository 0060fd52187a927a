"""Records (``Record`` subclasses) behave like the frozen dataclasses they replace: construction binds
arguments as a function call does, values never change, equality is by type and value."""

import copy
import pickle

import pytest

from dsv4_launch.core.records import Record


class Point(Record):
    """A point."""

    x: int
    y: int = 0
    label: str = ""

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)

    def moved(self, dx: int) -> "Point":
        return self._replace(x=self.x + dx)


class Other(Record):
    x: int
    y: int = 0
    label: str = ""


@pytest.mark.parametrize(
    "args, kwargs, expected",
    [
        ((1, 2, "a"), {}, (1, 2, "a")),
        ((1,), {}, (1, 0, "")),
        ((), {"x": 3}, (3, 0, "")),
        ((1,), {"label": "b"}, (1, 0, "b")),
        ((), {"label": "c", "y": 5, "x": 4}, (4, 5, "c")),
    ],
)
def test_arguments_bind_as_in_a_call(args, kwargs, expected):
    p = Point(*args, **kwargs)
    assert (p.x, p.y, p.label) == expected
    assert tuple(p) == expected


@pytest.mark.parametrize(
    "args, kwargs, words",
    [
        ((), {}, "missing required argument 'x'"),
        ((), {"y": 1}, "missing required argument 'x'"),
        ((1,), {"x": 2}, "multiple values for argument 'x'"),
        ((1,), {"z": 2}, "unexpected keyword argument 'z'"),
        ((1, 2, "a", 4), {}, "takes 3 arguments but 4 were given"),
    ],
)
def test_bad_arguments_are_a_type_error_naming_the_field(args, kwargs, words):
    with pytest.raises(TypeError, match=words):
        Point(*args, **kwargs)


def test_defaults_must_come_last():
    with pytest.raises(TypeError, match="defaults must come last"):
        class Bad(Record):
            a: int = 1
            b: int


def test_field_names_cannot_shadow_the_records_own():
    with pytest.raises(TypeError, match="underscore"):
        class Bad(Record):
            _fields: int


def test_values_cannot_change():
    p = Point(1, 2)
    with pytest.raises(AttributeError):
        p.x = 5
    with pytest.raises(AttributeError):
        p.extra = 1  # no __dict__: nothing can be added either
    assert p == Point(1, 2)


def test_equal_by_type_and_value_and_hashable():
    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(1, 3)
    assert Point(1, 2) != (1, 2, "")
    assert Point(1, 2) != Other(1, 2)
    assert not (Point(1, 2) == Other(1, 2))
    assert len({Point(1, 2), Point(1, 2), Point(2, 1)}) == 2


def test_methods_properties_and_docstring_are_kept():
    p = Point(-3, 4)
    assert p.norm1 == 7
    assert p.moved(2) == Point(-1, 4)
    assert type(p.moved(2)) is Point
    assert Point.__doc__ == "A point."
    assert Point.__qualname__ == "Point"
    assert Point._fields == ("x", "y", "label")


def test_replace_copies_and_rejects_unknown_fields():
    p = Point(1, 2, "a")
    assert p._replace(label="b") == Point(1, 2, "b")
    assert p == Point(1, 2, "a")
    with pytest.raises(TypeError, match="unexpected field"):
        p._replace(z=1)


def test_repr_names_the_fields():
    assert repr(Point(1, label="a")) == "Point(x=1, y=0, label='a')"


def test_copy_and_pickle_round_trip():
    p = Point(1, 2, "a")
    assert copy.copy(p) == p and copy.deepcopy(p) == p
    assert pickle.loads(pickle.dumps(p)) == p


def test_fields_may_be_called_like_the_methods_parameters():
    class Odd(Record):
        cls: str
        self: str = "s"

    odd = Odd(cls="c")
    assert (odd.cls, odd.self) == ("c", "s")
    assert odd._replace(self="t") == Odd("c", "t")


def test_a_record_is_one_class_deriving_from_record_alone():
    assert Point.__mro__ == (Point, Record, tuple, object)
    assert Point.__slots__ == () and not hasattr(Point(1), "__dict__")
    with pytest.raises(TypeError, match="derives from Record alone"):
        class Sub(Point):  # noqa: F841 — fields are never inherited
            z: int = 0


def test_defaults_need_not_all_be_given_last_ones_only():
    class Tail(Record):
        a: int
        b: int = 1
        c: int = 2

    assert Tail(0) == Tail(0, 1, 2) and Tail._fields == ("a", "b", "c")
    with pytest.raises(TypeError, match=r"defaults must come last \(\['c'\]\)"):
        class Gap(Record):  # noqa: F841
            a: int
            b: int = 1
            c: int
