"""Fresh values in the same buffers (harness/fresh_values.py), in-process on small CPU tuples: the
writes keep storage and version counters, every sample changes every buffer's values, and the two
checks see a stale or computed-ahead output."""

import torch

from harness import problem as P
from harness.fresh_values import FRESH, OWN_CALL, ValueSets, input_tensors
from harness.worker import clone_data

REF = P.load_problem("gemm").reference
CASE = {"m": 128, "n": 128, "k": 256, "l": 1}


def value_sets(n: int = 3) -> tuple[ValueSets, list]:
    buffers = [REF.generate_input(**CASE, seed=10 + i, device="cpu") for i in range(n)]
    own = [REF.ref_kernel(clone_data(d)) for d in buffers]
    others = [[(data, REF.ref_kernel(clone_data(data)))
               for data in (REF.generate_input(**CASE, seed=100 + 10 * i + j, device="cpu") for j in (1, 2))]
              for i in range(n)]
    return ValueSets(buffers, REF.output_of, own, others), buffers


def compare(out, want):
    return None if torch.equal(out, want) else "differs"


def test_values_are_written_in_place_without_a_version_bump():
    sets, buffers = value_sets()
    a = buffers[0][0]
    ptr, version, before = a.data_ptr(), a._version, a.view(torch.uint8).clone()
    sets.write(0, 2)
    assert a.data_ptr() == ptr and a._version == version
    assert not torch.equal(a.view(torch.uint8), before)
    targets = input_tensors(buffers[0], [buffers[0][-1]])
    assert [t.data_ptr() for t in targets] == [t.data_ptr() for t in sets.targets[0]]
    assert not any(t is buffers[0][-1] for t in sets.targets[0])  # c, the output, is never written


def test_every_sample_gives_every_buffer_another_set():
    sets, _ = value_sets()
    for _ in range(20):
        held = list(sets.current)
        sets.next_sample()
        assert all(now != was for now, was in zip(sets.current, held))


def test_a_stale_output_fails_the_recheck_and_a_fresh_one_passes():
    sets, buffers = value_sets()
    stale = [REF.ref_kernel(clone_data(d)) for d in buffers]
    sets.next_sample()
    fresh = [REF.ref_kernel(clone_data(d)) for d in buffers]
    assert sets.recheck_error(fresh, compare, 4) is None
    assert sets.recheck_error(stale, compare, 4).startswith(f"{FRESH}: sample 4, call 1 of 3: differs")


def test_the_own_call_pass_sees_outputs_computed_ahead():
    sets, buffers = value_sets()
    honest = sets.own_call_error(lambda d: (REF.ref_kernel(d), None), compare, lambda: None)
    assert honest is None and sets.current == [0, 0, 0]
    kept = {}

    def ahead(d):  # at its first call, every output of the sample from the values held now
        if not kept:
            kept.update({id(x): REF.ref_kernel(clone_data(x)) for x in buffers})
        return kept[id(d)], None

    err = sets.own_call_error(ahead, compare, lambda: None)
    assert err.startswith(f"{OWN_CALL}: call 2 of 3 returned an output not computed from its own inputs")
