"""Split-K partial sums exchanged between the CTAs of a cluster through distributed shared memory,
for the kernels of both architectures (shared/cute/sm90_gemm.py `_add_split_sums`,
shared/cute/sm100_splitk.py).

A partial is a register fragment of fp32 values; it travels as 16-byte vectors (elements 4v..4v+3 of
the fragment = vector v). A receiving CTA keeps an exchange buffer in shared memory, laid out slot by
slot, thread-minor: vector slot `s` of thread `t` (of `threads`) sits at byte (s * threads + t) * 16,
so a warp's 32 stores of one slot are 512 contiguous bytes (no bank conflict). The sender writes with
`mapa` + `st.shared::cluster` into the other CTA's buffer; a cluster barrier (`barrier.cluster.arrive`,
release, then `barrier.cluster.wait`, acquire) publishes the stores before the owner reads them back
with `ld.shared`. Every non-exited thread of every CTA of the cluster must arrive at each barrier.
Or (`send_partial` with `bar`) with `st.async`, each vector completing its bytes on the owner's mbarrier, into
a buffer that nothing else uses: the owner waits on that barrier alone, and no cluster barrier is needed.

Plain Python over DSL values (no dynamic control flow), so both kernels trace it inline.
"""

from __future__ import annotations

import cutlass.cute as cute
from cutlass import Int32

from shared.cute.ptx import ld_shared_v4_f32, st_async_v4_f32, st_cluster_v4_f32


def cluster_handshake():
    """One cluster barrier: the calling thread's earlier shared-memory stores (local and distributed)
    are visible to every thread of the cluster once the barrier completes."""
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


def slot_address(buf, slot, thread, threads):
    """Shared address of vector slot `slot` of thread `thread` in an exchange buffer at `buf`."""
    return buf + (slot * threads + thread) * 16


def send_partial(frag, vectors, buf, first_slot, thread, threads, rank, bar=None):
    """Vectors `vectors` (a range) of fragment `frag` into CTA `rank`'s exchange buffer at slots
    first_slot + v (distributed shared memory); with `bar` (a shared address, the same in every CTA) through
    st.async, each vector completing its 16 bytes on CTA `rank`'s mbarrier there."""
    for v in vectors:
        addr, vals = slot_address(buf, first_slot + v, thread, threads), [frag[4 * v + j] for j in range(4)]
        if bar is None:
            st_cluster_v4_f32(addr, Int32(rank), *vals)
        else:
            st_async_v4_f32(addr, Int32(rank), *vals, bar)


def add_partial(frag, vectors, buf, first_slot, thread, threads):
    """frag[4v..4v+3] += what this CTA's exchange buffer holds at slot first_slot + v, for v in
    `vectors` (after the cluster barrier that published it)."""
    for v in vectors:
        x = ld_shared_v4_f32(slot_address(buf, first_slot + v, thread, threads))
        for j in range(4):
            frag[4 * v + j] = frag[4 * v + j] + x[j]
