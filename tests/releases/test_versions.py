"""versions.py orders every version against every final release (the only bounds rules and
option tables name) exactly as packaging.version (PEP 440) does, and says "same release" as
packaging would."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version as Reference

from dsv4_launch.core.versions import is_older, parse_version, same_release

parts = st.lists(st.integers(0, 40), min_size=1, max_size=4).map(lambda xs: ".".join(map(str, xs)))
pre = st.sampled_from(["", "a1", "b2", "rc1", "rc0", ".alpha3", "-beta1", "c1", "pre2", "preview1", "a"])
post = st.sampled_from(["", ".post1", "-2", "post0", ".rev3", "r1"])
dev = st.sampled_from(["", ".dev0", ".dev12", "dev3"])
local = st.sampled_from(["", "+cu130", "+cpu", "+g1234abc", "+cu124.torch2", "+1.2", "+abc.5"])
versions = st.builds(lambda e, r, a, b, c, d: e + r + a + b + c + d,
                     st.sampled_from(["", "1!"]), parts, pre, post, dev, local)


finals = st.builds(lambda e, r: e + r, st.sampled_from(["", "1!"]), parts)


@settings(max_examples=1500, deadline=None)
@given(versions, finals)
def test_ordering_against_a_final_release_matches_packaging(a, b):
    # A local label (+cu130) is a build of its release, not another release: compared without it.
    ours, theirs = (parse_version(a), parse_version(b)), (Reference(Reference(a).public), Reference(b))
    assert (ours[0] < ours[1]) == (theirs[0] < theirs[1]), (a, b)
    assert (ours[1] < ours[0]) == (theirs[1] < theirs[0]), (a, b)
    assert (ours[0] == ours[1]) == (theirs[0] == theirs[1]), (a, b)
    assert (ours[0] < ours[1]) == (Reference(a) < Reference(b)), (a, b)  # the direction rules use


@settings(max_examples=500, deadline=None)
@given(finals, finals)
def test_final_releases_order_as_packaging_orders_them(a, b):
    assert (parse_version(a) < parse_version(b)) == (Reference(a) < Reference(b)), (a, b)
    assert (parse_version(a) == parse_version(b)) == (Reference(a) == Reference(b)), (a, b)


@settings(max_examples=500, deadline=None)
@given(versions)
def test_same_release_is_packagings_same_public_final(a):
    base = Reference(a).base_version  # the release alone, with its epoch
    expected = Reference(Reference(a).public) == Reference(base)
    assert same_release(a, base) is expected, a


@settings(max_examples=300, deadline=None)
@given(parts)
def test_plain_release_shortcut_is_the_pep440_reading(text):
    """Plain "N.N.N" skips the regular expression; the same version read through it (the
    leading "v" forces that path) must be the same version."""
    assert parse_version(text) == parse_version("v" + text)


@pytest.mark.parametrize("text", ["１.0", "0.24.0.", "", ".", "0..1", "٣.1"])
def test_not_quite_plain_text_is_judged_by_the_full_reading(text):
    with pytest.raises(ValueError):
        parse_version(text)


@pytest.mark.parametrize(
    "version,older",
    [("0.24.0", True), ("0.29.1", True), ("0.30.0rc1", True), ("0.30.0.dev5+g12ab", True),
     ("0.30.0", False), ("0.30.0+cu130", False), ("0.30", False), ("0.33.0", False), ("1.0.0", False),
     (None, None), ("not-a-version", None)],
)
def test_is_older_than_0_30(version, older):
    assert is_older(version, "0.30.0") is older


def test_same_release():
    assert same_release("0.24.0+cu130", "0.24.0")
    assert same_release("0.24", "0.24.0")
    assert not same_release("0.24.0rc1", "0.24.0")
    assert not same_release("0.24.0.post1", "0.24.0")
    assert not same_release("0.24.1", "0.24.0")


@pytest.mark.parametrize("text", ["", "abc", "1.0-", "1..0", "0.24.0 beta"])
def test_rejects_non_versions(text):
    with pytest.raises(ValueError):
        parse_version(text)


def test_version_ranges():
    from dsv4_launch.core.versions import ANY_VERSION, VersionRange

    crash = VersionRange(before="0.30.0")
    assert crash.contains("0.29.0") and crash.contains("0.30.0rc1") and not crash.contains("0.30.0")
    assert crash.contains(None) is None and crash.contains("not a version") is None
    assert ANY_VERSION.contains(None) is True
    window = VersionRange(since="0.27.0", before="0.28.0")
    assert [window.contains(v) for v in ("0.26.0", "0.27.0", "0.27.1+cu130", "0.28.0")] == [False, True, True, False]
    assert (window.short(), crash.short(), VersionRange(since="0.30.0").short(), ANY_VERSION.short()) == (
        "≥ 0.27.0, < 0.28.0", "< 0.30.0", "≥ 0.30.0", "all")


@pytest.mark.parametrize(("version", "inside"), [
    ("0.30.0rc1", None), ("0.30.0.dev5+g12ab", None), ("0.30.0a1", None), ("0.30.0b2", None), ("0.30rc1", None),
    ("0.30.0rc1+cu129", None),  # a pre-release of `since`'s release: its change is likely, not certain
    ("0.29.9", False), ("0.29.0rc1", False), ("0.30.0", True), ("0.30.0+cu130", True), ("0.30.0.post1", True),
    ("0.30.1rc1", True), ("0.31.0", True),
])
def test_a_pre_release_of_since_is_unknown_and_every_other_version_certain(version, inside):
    from dsv4_launch.core.versions import VersionRange

    assert VersionRange(since="0.30.0").contains(version) is inside
    assert VersionRange(since="0.30.0").early(version) is (inside is None)


@settings(max_examples=800, deadline=None)
@given(versions, finals, finals)
def test_contains_matches_packaging_and_is_unknown_only_for_a_pre_release_of_since(v, since, before):
    from dsv4_launch.core.versions import VersionRange

    public, low, high = Reference(Reference(v).public), Reference(since), Reference(before)
    early = public < low and Reference(public.base_version) == low and public < high  # under since, its release
    expected = None if early else low <= public < high
    assert VersionRange(since=since, before=before).contains(v) is expected


def test_the_before_side_keeps_its_pre_releases_inside():
    from dsv4_launch.core.versions import VersionRange

    window = VersionRange(since="0.31.0", before="0.34.0")  # a fix first shipped in 0.34.0: not assumed in its rcs
    assert ([window.contains(v) for v in ("0.34.0rc1", "0.34.0.dev3", "0.34.0", "0.31.0rc2")]
            == [True, True, False, None])
