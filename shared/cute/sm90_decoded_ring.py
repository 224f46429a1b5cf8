"""The decoded S ring of the Hopper GEMMs (sm90_gemm.py): the slots of fp16 S sub-tiles that the decoder warps
fill and the consumers' wgmmas read, as a PipelineAsync; with `Sm90Config.share_s`, one ring in each CTA of a
cluster of 2, each CTA decoding part of every slot and sending it to the other.

Why share: every CTA decodes its whole S tile (A in the default roles), and the CTAs that hold the same S tile
decode it again, each of them: the 32 CTAs along N of dual_gemm 512x4096x7168 decode each value of A 32 times.
The decoders share the schedulers with the consumers, whose register decode of the R side is the critical
path, so every decoder instruction costs the consumers time (results/shared-decode/). The two CTAs of a
cluster along the R side hold the same S tile; with share_s each decodes the rows
`sm90_config.shared_s_rows(rank)` of it into its own ring, and one thread copies them into the other CTA's
ring with the bulk-copy engine (cp.async.bulk shared::cta -> shared::cluster), the way a multicast TMA load
fills both CTAs.

The protocol of a slot (both CTAs run the same slots in the same order: one output tile per CTA and the same
K tiles, so the rings stay in step):
- its full barrier counts the CTA's own decoder threads and the bytes the other CTA sends: the decoders
  store their rows, fence them against the async proxy (the copy and the wgmma read them), meet at a named
  barrier, then one of them sets the bytes to expect from the other CTA, starts the copy of its CTA's rows
  (which completes on the other CTA's barrier), and all arrive;
- its empty barrier counts the CTA's own consumer threads and the other CTA's consumer warps: a consumer done
  with the slot arrives on its own, and one lane of each consumer warp on the other CTA's, since that CTA's
  copy writes into it too (as consumers of a multicast TMA stage release it);
- both CTAs pass a cluster barrier once their barriers are initialized (nothing completes on a barrier
  before its init) and again before they exit (no copy or arrival into a CTA that has exited):
  `sm90_gemm._tiles`.
Measured alternative, not kept: each decoder storing its rows into the other ring itself (st.shared::cluster)
with cluster-scope releases and acquires made the kernels 1.7-2.5x slower (results/shared-decode/).
"""

from __future__ import annotations

from dataclasses import dataclass

import cutlass.cute as cute
import cutlass.pipeline as pipeline

from shared.cute.ptx import bulk_copy_to_peer, mbarrier_arrive_peer, mbarrier_expect_tx

MBAR_BYTES = 8


@dataclass(frozen=True)
class DecodedRing:
    """The a_slots-slot ring of decoded S sub-tiles. `peer` is None (the CTA's own ring, a plain PipelineAsync)
    or the rank of the other CTA of the cluster (share_s); `full` is the shared address of the first slot's
    full barrier (PipelineAsync's layout: the slots' full barriers, then their empty ones). Frozen, as the
    DSL's pipelines are: the kernel's dynamic loops then need not carry it."""

    pipe: pipeline.PipelineAsync
    peer: object
    slots: int
    full: object

    @staticmethod
    def create(mbar, slots: int, producers: int, consumers: int, peer=None) -> DecodedRing:
        pipe = pipeline.PipelineAsync.create(
            barrier_storage=mbar.data_ptr(), num_stages=slots,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, producers),
            # with share_s the other CTA's consumers release the slot too, one arrival per warp
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread,
                                                     consumers + (0 if peer is None else consumers // 32)))
        return DecodedRing(pipe, peer, slots, mbar.data_ptr().toint())

    def full_barrier(self, index):
        return self.full + index * MBAR_BYTES

    def slot_after(self, state, j: int):
        """The state j slots after `state`, for a j that does not take it around the ring (a K tile's sub-tiles where
        the slots are a multiple of 4): the same phase, no index test."""
        if j == 0:
            return state
        return pipeline.PipelineState(self.slots, state.count + j, state.index + j, state.phase)

    def producer_acquire(self, state):
        self.pipe.producer_acquire(state)

    def send(self, state, sub_tiles, incoming: int):
        """share_s, one thread of the decoders after they all stored and fenced slot `state`: expect the
        `incoming` bytes of the other CTA on this slot's barrier, and copy each (local address, bytes) of
        `sub_tiles` to the same address of the other CTA, completing on its barrier of the slot."""
        bar = self.full_barrier(state.index)
        mbarrier_expect_tx(bar, incoming)
        for src, size in sub_tiles:
            bulk_copy_to_peer(src, src, size, bar, self.peer)

    def producer_commit(self, state):
        self.pipe.producer_commit(state)

    def consumer_wait(self, state):
        self.pipe.consumer_wait(state)

    def consumer_release(self, state):
        self.pipe.consumer_release(state)
        if self.peer is not None:
            # one arrival per warp on the other CTA's barrier (each crosses the SMs' network), once every
            # lane has passed the wgmma wait that ends its reads of the slot
            cute.arch.sync_warp()
            with cute.arch.elect_one():
                mbarrier_arrive_peer(self.full_barrier(self.slots + state.index), self.peer)
