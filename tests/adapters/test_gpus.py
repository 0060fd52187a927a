"""CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER applied to NVML's GPU list (pure)."""

from __future__ import annotations

import pytest

from dsv4_launch.core.gpus import GpuInfo, parse_capability, select_visible

G0 = GpuInfo(0, "NVIDIA H200", "GPU-aaaa1111-0000", (9, 0), mig_uuids=("MIG-aaaa-0001",))
G1 = GpuInfo(1, "NVIDIA RTX PRO 6000", "GPU-bbbb2222-0000", (12, 0))
G2 = GpuInfo(2, "NVIDIA RTX PRO 6000", "GPU-bbbb3333-0000", (12, 0))
MIXED = (G0, G1, G2)
SAME = (G1, G2)


@pytest.mark.parametrize(
    "visible,order,expected",
    [
        (None, None, [0, 1, 2]),  # unset: all
        ("", None, []),  # empty: none
        ("  ", None, []),
        ("0,2", "PCI_BUS_ID", [0, 2]),
        ("2,0", "PCI_BUS_ID", [2, 0]),
        ("0,2,-1,1", "PCI_BUS_ID", [0, 2]),  # stops at the first invalid entry
        ("1,7,0", "PCI_BUS_ID", [1]),  # an index out of range is invalid
        ("1,1,0", "PCI_BUS_ID", [1]),  # a repeated device stops the list
        ("x,0", "PCI_BUS_ID", []),
        (" 1", "PCI_BUS_ID", [1]),
        ("GPU-bbbb2222-0000", None, [1]),  # full UUID
        ("GPU-bbbb3", None, [2]),  # unique prefix
        ("GPU-bbbb,GPU-aaaa", None, []),  # ambiguous prefix is invalid
        ("GPU-aaaa,GPU-bbbb2", None, [0, 1]),
        ("MIG-aaaa-0001", None, [0]),  # MIG instance → its parent GPU
        ("MIG-GPU-bbbb3333-0000/1/0", None, [2]),  # legacy MIG form
        ("MIG-nope", None, []),
    ],
)
def test_visible_devices(visible, order, expected):
    selection = select_visible(MIXED, visible, order)
    assert [g.index for g in selection.gpus] == expected
    assert not selection.ambiguous


def test_fastest_first_order_with_different_gpus_is_ambiguous():
    # CUDA's default FASTEST_FIRST order cannot be matched to NVML's: index 0 may be any GPU.
    selection = select_visible(MIXED, "0", None)
    assert selection.ambiguous
    assert [g.index for g in selection.gpus] == [0, 1, 2]
    assert any("PCI_BUS_ID" in n for n in selection.notes)


def test_fastest_first_does_not_matter_when_all_gpus_are_alike():
    selection = select_visible(SAME, "1", None)
    assert not selection.ambiguous
    assert [g.index for g in selection.gpus] == [2]


def test_uuids_are_exact_in_any_order():
    selection = select_visible(MIXED, "GPU-bbbb2222-0000", None)
    assert not selection.ambiguous and [g.index for g in selection.gpus] == [1]


def test_stop_is_explained():
    selection = select_visible(MIXED, "0,2,-1,1", "PCI_BUS_ID")
    assert any("'-1'" in n for n in selection.notes)


@pytest.mark.parametrize(
    "text,cc",
    [("12.0", (12, 0)), ("9.0", (9, 0)), ("10.3", (10, 3)), ("12", (12, 0)), ("sm_120", (12, 0)),
     ("sm_90", (9, 0)), ("SM121", (12, 1)), (" 12.1 ", (12, 1))],
)
def test_parse_capability(text, cc):
    assert parse_capability(text) == cc


@pytest.mark.parametrize("text", ["", "blackwell", "12.x", "sm_", "-1"])
def test_parse_capability_rejects(text):
    with pytest.raises(ValueError):
        parse_capability(text)


def test_describe_says_unknown_out_loud():
    assert GpuInfo(3).describe() == "GPU 3 (compute capability unknown)"
    assert G1.describe() == "NVIDIA RTX PRO 6000 (SM 12.0)"
