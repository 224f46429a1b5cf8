"""The order in which the grouped GEMM's schedules take the groups (no DSL).

Both architectures' schedules walk the groups in a ranking chosen on the host: sm90's tile table
(problems/group_gemm/kernel_sm90.py `tile_table`, its rows dealt out to the CTAs in table order) and the
sm100 persistent schedule (problems/group_gemm/schedule_sm100.py; the kernel reads the metadata rows in
that order, so the device walks the tiles in it without a change to its binary).

Rankings:
    group       the problem's list order;
    long_first  larger K first (a tile's time grows with K), then more tiles first, then list order;
    msorted     larger M first, then larger K, then list order (the top B200 grouped entries' order:
                the big groups' tiles go out first and the small ones fill the tail).
"""

from __future__ import annotations

GROUP_RANKINGS = ("group", "long_first", "msorted")


def group_rank(sizes, ranking: str, tiles_per_group=None) -> list[int]:
    """The groups' indices in the order a schedule takes them. `tiles_per_group` (long_first only):
    each group's tile count under the caller's tiling."""
    groups = range(len(sizes))
    if ranking == "group":
        return list(groups)
    if ranking == "long_first":
        if tiles_per_group is None:
            raise ValueError("group_rank: long_first needs tiles_per_group")
        return sorted(groups, key=lambda g: (-sizes[g][2], -tiles_per_group[g], g))
    if ranking == "msorted":
        return sorted(groups, key=lambda g: (-sizes[g][0], -sizes[g][2], g))
    raise ValueError(f"group ranking must be one of {GROUP_RANKINGS}, got {ranking!r}")


def check_permutation(order, groups: int) -> list[int]:
    """`order` as a list, or ValueError unless it names every one of `groups` groups exactly once."""
    order = [int(g) for g in order]
    if sorted(order) != list(range(groups)):
        raise ValueError(f"group order: expected a permutation of 0..{groups - 1}, got {order}")
    return order
