"""DeepSeek-V4's KV cache as the installed vLLM plans it (pure).

vLLM starts only if *one* request of ``max_model_len`` fits in the KV memory left on every
worker. What that request needs is not a per-token constant: it is what vLLM's own planner
charges, and this module reproduces the planner for the caches DeepSeek-V4 declares, per release
family (``TUPLES`` 0.24–0.26, ``TUPLES_SLAB`` 0.27–0.28, ``PACKED`` 0.29–0.33). The caches, the
grouping and the charge of each family: docs/memory.md "KV cache: what one request needs".
tests/vllm_real/test_kv_oracle.py compares all of this with the installed vLLM's own planner,
called on the CPU with the caches its DeepSeek-V4 classes build.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate

from ..records import Record

TUPLES, PACKED = "tuples", "packed"
# 0.27–0.28: the tuple groups, laid out densely in one shared block slab (_get_packed_kv_cache_layout,
# kv_cache_utils.py:1283@0.27.0) and counted per group's blocks (get_max_concurrency_for_kv_cache_config, :937)
TUPLES_SLAB = "tuples-slab"
TUPLE_FAMILIES = (TUPLES, TUPLES_SLAB)
KV_BLOCK = 256  # --block-size: DeepSeek-V4's kernels need multiples of 256 (rules: block-size)
ALIGNMENT = 576  # fp8_ds_mla pages are padded to a multiple of this (_apply_alignment_padding)
STATE_BYTES = 584  # a compressed state: 448 FP8 NoPE + 128 bf16 RoPE + 8 scale bytes
INDEXER_STATE_BYTES = {"fp8": 132, "mxfp4": 68}  # 128 FP8 + 4 fp32 scale; 64 packed FP4 + 4
SWA_BLOCK, SWA_WINDOW = 64, 128  # DeepseekV4SWACache: block 64, config.sliding_window
HEAD_DIM, INDEXER_HEAD_DIM = 512, 128
CSA, HCA = 4, 128
MAX_LAYERS = 1024  # a config.json listing more layers than this is not a model vLLM builds


def _pad(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def round_up(n: int, to: int) -> int:
    return cdiv(n, to) * to


class Cache(Record):
    """One cache of one layer, as the planner sees it."""

    layer: int  # the backbone layer it belongs to
    page: int  # bytes of one page (one block)
    block: int  # tokens per block
    window: int = 0  # sliding window in tokens; 0: a full-attention cache


def layer_caches(ratios: Sequence[int], indexer: str = "fp8", window: int = SWA_WINDOW) -> list[Cache]:
    """The caches DeepSeek-V4's layers declare, in registration order (fp8_ds_mla layout)."""
    csa_main = Cache(0, _pad(KV_BLOCK // CSA * STATE_BYTES), KV_BLOCK)
    hca_main = Cache(0, _pad(KV_BLOCK // HCA * STATE_BYTES), KV_BLOCK)
    indexer_k = Cache(0, _pad(KV_BLOCK // CSA * INDEXER_STATE_BYTES[indexer]), KV_BLOCK)
    # Compressor states: fp32 [kv_state + score_state] = 2 × coff × head_dim floats per row,
    # coff 2 on CSA, 1 on HCA; blocks of 4 (CSA) or 8 (HCA) rows; window coff × ratio.
    indexer_state = Cache(0, _pad(4 * 2 * 2 * INDEXER_HEAD_DIM * 4), 4, 2 * CSA)
    csa_state = Cache(0, _pad(4 * 2 * 2 * HEAD_DIM * 4), 4, 2 * CSA)
    hca_state = Cache(0, _pad(8 * 2 * 1 * HEAD_DIM * 4), 8, HCA)
    swa = Cache(0, _pad(SWA_BLOCK * STATE_BYTES), SWA_BLOCK, window)
    out: list[Cache] = []
    for i, ratio in enumerate(ratios[:MAX_LAYERS]):
        kinds: tuple[Cache, ...]
        if ratio == CSA:
            kinds = (indexer_k, indexer_state, swa, csa_main, csa_state)
        elif ratio == HCA:
            kinds = (swa, hca_main, hca_state)
        else:
            kinds = (swa,)
        out.extend(Cache(i, c.page, c.block, c.window) for c in kinds)  # positional: the fast way to build a record
    return out


def pp_partition(text: str | None, layers: int, pp: int) -> list[int] | None:
    """``VLLM_PP_LAYER_PARTITION`` as ``get_pp_indices`` reads it: comma-separated layer counts,
    one per stage, adding up to the layers; None when unset or not that (vLLM then raises itself)."""
    if not text:
        return None
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        return None
    return parts if len(parts) == pp and sum(parts) == layers and all(p >= 0 for p in parts) else None


def pp_stages(layers: int, pp: int, partition: Sequence[int] | None = None) -> list[range]:
    """The layers of each pipeline stage, as ``vllm/distributed/utils.py get_pp_indices`` splits
    them (the same in 0.24–0.33): ``VLLM_PP_LAYER_PARTITION`` where given, else even parts, the
    remainder to the stages before the last."""
    pp = max(1, min(pp, max(layers, 1)))
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    if partition is not None and len(partition) == pp and sum(partition) == layers:
        parts = list(partition)
    return [range(end - n, end) for n, end in zip(parts, accumulate(parts))]


class Group(Record):
    caches: tuple[Cache, ...]

    @property
    def window(self) -> int:
        return self.caches[0].window

    @property
    def block(self) -> int:
        return self.caches[0].block


def approximate_gcd(values: Sequence[int], lower_bound: int) -> int:
    """vLLM's ``_approximate_gcd`` (identical 0.24–0.33): the chunk size in [lower_bound,
    max(values)] that pads ``values`` up least; ties go to the larger."""
    low, high = max(1, lower_bound), max(values, default=0)
    if low > high:  # (also no values at all)
        return low
    best, best_pad = low, None
    for d in range(low, high + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


def _most_common_count(caches: Sequence[Cache]) -> int:
    return max(Counter(c.page for c in caches).values(), default=0)


def _by_page(caches: Sequence[Cache]) -> dict[int, list[Cache]]:
    out: dict[int, list[Cache]] = {}
    for c in caches:
        out.setdefault(c.page, []).append(c)
    return out


def _split(caches: Sequence[Cache], n: int) -> list[Group]:
    """Split a bucket into ``n`` groups by repeats of its page-size pattern (``[i::n]``)."""
    repeats = list(zip(*_by_page(caches).values()))
    return [Group(tuple(c for repeat in repeats[i::n] for c in repeat)) for i in range(n)]


def _buckets(caches: Sequence[Cache]) -> list[list[Cache]]:
    """Caches of one type together, in order of first appearance: full caches by block size,
    window caches by (block size, window)."""
    out: dict[tuple[int, int], list[Cache]] = {}
    for c in caches:
        out.setdefault((c.block, c.window), []).append(c)
    return list(out.values())


class Grouping(Record):
    family: str
    groups: tuple[Group, ...]


def group(caches: Sequence[Cache], family: str) -> Grouping:
    """The model's KV cache groups, as the release's planner forms them."""
    if family in TUPLE_FAMILIES:
        full = [c for c in caches if not c.window]
        windows = [b for b in _buckets(caches) if b[0].window]
        counts = [_most_common_count(full)] + [_most_common_count(b) for b in windows]
        tuples = approximate_gcd(counts, lower_bound=counts[0]) if any(counts) else 1
        tuple_groups = [Group(tuple(full))] if full else []
        for bucket in windows:
            per_size = len(next(iter(_by_page(bucket).values())))
            tuple_groups.extend(_split(bucket, cdiv(per_size, tuples)))
        return Grouping(family, tuple(tuple_groups))
    buckets = [(b, _by_page(b)) for b in _buckets(caches)]
    balanced = [(b, pages) for b, pages in buckets if len({len(v) for v in pages.values()}) == 1]
    floor = max((_most_common_count(b) for b, pages in balanced if len(pages) > 1), default=0)
    repeats = approximate_gcd([_most_common_count(b) for b, _ in balanced], floor) if floor else None

    def n_groups(bucket, pages) -> int:
        is_balanced = len({len(v) for v in pages.values()}) == 1
        return cdiv(_most_common_count(bucket), repeats) if is_balanced and repeats else 1

    def widest(pages, n) -> int:
        return sum(cdiv(len(v), n) * page for page, v in pages.items())

    def is_state(bucket) -> bool:  # unsplit sliding-window buckets (no repeat pattern)
        return repeats is None and bool(bucket[0].window)

    anchor = max((widest(pages, len(b) if is_state(b) else n_groups(b, pages)) for b, pages in buckets), default=0)
    groups: list[Group] = []
    for bucket, pages in buckets:
        n = n_groups(bucket, pages)
        if anchor and is_state(bucket):
            n = max(n, cdiv(len(bucket), max(anchor // bucket[0].page, 1)))
        groups.extend([Group(tuple(bucket))] if n == 1 else _split(bucket, n))
    return Grouping(PACKED, tuple(groups))


class StagePlan(Record):
    """One pipeline stage's groups, and what a request costs there."""

    family: str
    unit: int  # bytes charged per page/block of a request
    full_groups: int  # groups whose pages grow with the request
    windows: tuple[tuple[int, int], ...]  # (window, block) of each window group
    null_block: int = 0  # set aside before the check (0.29+)
    # What vLLM's "Maximum concurrency" reads (TUPLES and TUPLES_SLAB; see concurrency_blocks): the
    # bytes of one block of the shared pool, and per group (window, block, the group spec's page bytes).
    pool_block: int = 0
    group_pages: tuple[tuple[int, int, int], ...] = ()

    def need(self, length: int, in_flight: int) -> int:
        """Bytes one request of ``length`` tokens needs (vLLM's _max_memory_usage_bytes_from_groups)."""
        pages = self.full_groups * _pages(0, KV_BLOCK, length, in_flight)
        pages += sum(_pages(window, block, length, in_flight) for window, block in self.windows)
        return self.unit * pages

    @property
    def bytes_per_token(self) -> float:
        """What each further token costs once the windows are full."""
        return self.unit * self.full_groups / KV_BLOCK

    @lru_cache(maxsize=256)  # records are immutable values; a fix's re-plan asks the same
    def longest(self, available: int, in_flight: int, cap: int) -> int:
        """The longest request ``available`` bytes admit, at most ``cap`` (0: none): what vLLM's own
        binary search (``_estimate_max_model_len_from_groups``) finds, since ``need`` never falls
        as the length grows. Past the widest window's span every window cache is full and ``need``
        grows by ``unit × full_groups`` per KV block, so there the answer is counted, not searched
        (a memory search probes this ~20 times a plan, and a fix's re-plan the same again); below
        it, the search. Computed once for the same plan and numbers."""
        budget = available - self.null_block
        if cap < 1 or self.need(1, in_flight) > budget:
            return 0
        span = max((window - 1 + in_flight for window, _ in self.windows), default=1)
        if span <= cap and self.need(span, in_flight) <= budget:
            if not self.full_groups:
                return cap
            windows = sum(cdiv(window - 1 + in_flight, block) + 1 for window, block in self.windows)
            return min(cap, (budget // self.unit - windows) // self.full_groups * KV_BLOCK)
        return self._search(budget, in_flight, min(cap, span))

    def _search(self, budget: int, in_flight: int, cap: int) -> int:
        """The longest length up to ``cap`` whose need fits ``budget`` (need(1) fits), by bisection."""
        low, high, best = 1, cap, 1
        while low <= high:
            mid = (low + high) // 2
            if self.need(mid, in_flight) <= budget:
                best, low = mid, mid + 1
            else:
                high = mid - 1
        return best

    def fits(self, length: int, available: int, in_flight: int) -> bool:
        return self.need(length, in_flight) <= available - self.null_block

    def concurrency_blocks(self, length: int, in_flight: int) -> tuple[int, int]:
        """(bytes per block of the pool, blocks per request) as vLLM's "Maximum concurrency" counts
        them: it prints ``(available // the first) / the second`` (``get_max_concurrency_for_kv_cache_
        config``), ``available // the first`` the fewest of any pipeline stage. Per release family and
        why: docs/memory.md's bullet *vLLM's "Maximum concurrency" is not available / need before 0.29*. The
        lines that section does not name: ``PACKED``, the blocks ``need`` charges (kv_cache_utils.py:
        937@0.29); ``TUPLES_SLAB``, ``UniformTypeKVCacheSpecs`` (kv_cache_interface.py:851-856@0.27.0),
        the slab's block (kv_cache_utils.py:1283-1305@0.27.0), every group on every stage
        (:2052-2091@0.27.0); ``TUPLES``, ``P_g`` (kv_cache_interface.py:828@0.26.0) and the pool's
        block, Σ over page sizes of the size × the most layers of that size in one group
        (``_bucket_layers_by_page_size``, kv_cache_utils.py:1259@0.26.0)."""
        if self.family not in TUPLE_FAMILIES or not self.group_pages:
            return self.unit, self.need(length, in_flight) // self.unit
        if self.family == TUPLES_SLAB:
            return self.pool_block, sum(_pages(window, block, length, in_flight)
                                        for window, block, _ in self.group_pages)
        total = sum(_pages(window, block, length, in_flight) * page for window, block, page in self.group_pages)
        return self.pool_block, cdiv(total, self.group_pages[0][2])


def _pages(window: int, block: int, length: int, in_flight: int) -> int:
    """The blocks one request of ``length`` holds in a cache of this window (0: full) and block
    size (``SlidingWindowSpec.max_admission_blocks_per_request``; a full cache ``cdiv(length, block)``)."""
    return cdiv(min(window - 1 + in_flight, length), block) + 1 if window else cdiv(length, block)


def draft_caches(first: int, count: int, window: int = SWA_WINDOW) -> list[Cache]:
    """The caches of a speculative draft's DeepSeek-V4 layers (MTP, DSpark): each a decoder
    layer numbered from ``num_hidden_layers`` up, so ``compress_ratio`` 1 (attention.py:183@0.24,
    :238@0.33): its sliding-window cache alone, the target's spec (sparse_swa.py:81@0.24,
    :120@0.33), registered after every target layer."""
    swa = layer_caches([0], window=window)[0]
    return [Cache(first + i, swa.page, swa.block, swa.window) for i in range(max(0, min(count, MAX_LAYERS)))]


def _tuple_pool(groups: Sequence[Sequence[Cache]], full_pages: Sequence[int],
                retained: int) -> tuple[int, tuple[tuple[int, int, int], ...]]:
    """0.24–0.26: every window cache's page padded to the nearest larger page of the full group
    (``_get_kv_cache_groups_uniform_groups``, kv_cache_utils.py:1622-1640@0.24.0; gone in 0.27); then the pool's
    block (Σ page × the most layers of that page in one group) and per group (window, block,
    Σ of its pages)."""
    def padded(c: Cache) -> int:
        return min((p for p in full_pages if p >= c.page), default=c.page) if c.window else c.page

    slots: dict[int, int] = {}
    group_pages = []
    for g in groups:
        for page, n in Counter(padded(c) for c in g).items():
            slots[page] = max(slots.get(page, 0), n)
        window = g[0].window + retained if g[0].window else 0
        group_pages.append((window, g[0].block, sum(padded(c) for c in g)))
    return sum(page * n for page, n in slots.items()), tuple(group_pages)


def stage_plans(ratios: Sequence[int], family: str, pp: int = 1, indexer: str = "fp8",
                partition: Sequence[int] | None = None, draft_layers: int = 0,
                retained: int = 0) -> list[StagePlan]:
    """Per pipeline stage, how vLLM charges a request (the whole model grouped, then projected).

    ``draft_layers``: the speculative draft's layers (their caches join the last stage, where the
    drafter runs: gpu_model_runner.py:547@0.24); ``retained``: the ``extra_retained_tokens`` every
    sliding-window spec gets (multi-module MTP, 0.28+: kv_cache_utils.py:2269@0.29). Computed once
    for the same inputs (a fix search re-plans with other arguments and the same caches)."""
    return list(_stage_plans(tuple(ratios), family, pp, indexer, None if partition is None else tuple(partition),
                             draft_layers, retained))


@lru_cache(maxsize=16)
def _stage_plans(ratios: tuple[int, ...], family: str, pp: int, indexer: str, partition: tuple[int, ...] | None,
                 draft_layers: int, retained: int) -> tuple[StagePlan, ...]:
    layers = min(len(ratios), MAX_LAYERS)
    caches = layer_caches(ratios, indexer) + draft_caches(layers, draft_layers)
    grouping = group(caches, family)
    # 0.27–0.28's "Maximum concurrency" counts every group of the whole model on each stage
    slab_pages = tuple((g.window + retained if g.window else 0, g.block, sum(c.page for c in g.caches))
                       for g in grouping.groups) if family == TUPLES_SLAB else ()
    plans = []
    stages = pp_stages(layers, pp, partition)
    if draft_layers > 0 and stages:
        stages[-1] = range(stages[-1].start, layers + max(0, min(draft_layers, MAX_LAYERS)))
    for stage in stages:
        projected = [tuple(c for c in g.caches if c.layer in stage) for g in grouping.groups]
        projected = [g for g in projected if g]
        if not projected:
            continue
        full = sum(1 for g in projected if not g[0].window)
        windows = tuple((g[0].window + retained, g[0].block) for g in projected if g[0].window)
        if family in TUPLE_FAMILIES:
            counts = [_most_common_count(g) for g in projected]
            full_group = next((g for g in projected if not g[0].window), ())
            full_pages = _by_page(full_group)
            if family == TUPLES:
                pool_block, group_pages = _tuple_pool(projected, sorted(full_pages), retained)
            else:  # the densest group's unpadded pages
                pool_block, group_pages = max(sum(c.page for c in g) for g in projected), slab_pages
            plans.append(StagePlan(family, max(counts) * sum(full_pages), full, windows,
                                   pool_block=pool_block, group_pages=group_pages))
        else:
            unit = max(sum(c.page for c in g) for g in projected)
            plans.append(StagePlan(PACKED, unit, full, windows, null_block=unit))
    return tuple(plans)
