"""Differential fuzzing of the ascend level (testing/fuzz_ascend.py): a bounded campaign of
random race-free programs through the interpreter, the memory planner and checker and the
simulator, with every flag mutation; and the regressions it found."""

import pytest

from geir.dialects import ascend as a
from geir.testing.fuzz_ascend import (
    Program,
    check,
    flag_ops,
    generate,
    removed,
    run_campaign,
)

SEED = 20240601
PROGRAMS = 120

REQUIRED_KINDS = {
    "ascend.copy", "ascend.mmad", "ascend.set_flag", "ascend.wait_flag", "ascend.pipe_barrier",
    "ascend.vadd", "ascend.vmul", "ascend.vadds", "ascend.vexp", "ascend.vdup", "ascend.vreduce",
    "ascend.vbrcb", "scf.for", "scf.if", "ascend.block_idx", "memref.load", "memref.store",
}


@pytest.fixture(scope="module")
def campaign():
    return run_campaign(PROGRAMS, SEED)


def test_campaign_finds_nothing_wrong(campaign):
    failures = campaign["failures"]
    detail = "\n".join(f"seed {o.seed}: {o.mismatches + o.races + o.bounds + o.plan_errors + o.missed} {o.crash or ''}"
                       for o in failures[:5])
    assert not failures, detail
    assert campaign["programs"] == PROGRAMS
    for key in ("mismatches", "unexpected_races", "bound_violations", "plan_check_failures", "mutations_missed",
                "crashes"):
        assert campaign[key] == 0, key


def test_campaign_mutates_every_guarding_flag(campaign):
    # every program has at least three flags that guard a dependency (MTE2 -> V, V -> MTE3
    # or the cube's chain), each removed once and caught
    assert campaign["mutations_caught"] >= 3 * PROGRAMS
    assert campaign["kernels"] > PROGRAMS


def test_campaign_catches_every_family_of_mutation(campaign):
    # flags, barriers the plan relies on, events between streams, overlapping live buffers,
    # and aliasings the checker must reject
    families = campaign["caught_by_family"]
    assert set(families) >= {"flag", "barrier", "event", "live_overlap", "aliasing"}, families
    assert campaign["aliasings_accepted"] > 0  # some aliasings are safe, and checked to be


def test_campaign_covers_the_op_kinds(campaign):
    assert REQUIRED_KINDS <= set(campaign["op_kinds"])


def test_generation_is_deterministic():
    assert str(generate(7).module) == str(generate(7).module)
    assert str(generate(7).module) != str(generate(8).module)


def _first(pred, seeds=range(SEED, SEED + 200)) -> Program:
    for s in seeds:
        p = generate(s)
        if pred(p):
            return p
    raise AssertionError("no program of the kind in 200 seeds")


def test_a_wrong_model_is_a_mismatch():
    """The output oracle can fail: one element of the expected output changed."""
    p = generate(SEED)
    name = next(iter(p.expected))
    p.expected[name] = p.expected[name].copy()
    p.expected[name].flat[0] += 1
    o = check(p, mutate=False)
    assert o.mismatches and name in o.mismatches[0]


def test_a_removed_flag_races_in_the_generated_program():
    """The race oracle can fail: the whole program (not one kernel alone) without one of its
    MTE2 -> V flags has a race in that kernel."""
    p = _first(lambda p: any(g.key[:2] == ("MTE2", "V") for g in p.guards))
    g = next(g for g in p.guards if g.key[:2] == ("MTE2", "V"))
    kernel = next(op for op in p.module.ops if isinstance(op, a.KernelOp) and op.sym_name.data == g.kernel)
    with removed(flag_ops(kernel, g.key)):
        o = check(p, mutate=False)
    assert any(f"@{g.kernel}" in r for r in o.races)
    assert str(p.module) == str(p.module.clone())  # the flags are back


def test_redundant_flags_are_redundant():
    """Flags marked redundant (the buffer they guard is never refilled in a block) do not
    race when removed: the marking hides nothing."""
    result = run_campaign(15, SEED + 1000, confirm_redundant=True, aliasings=0)
    assert result["redundant_flags"] > 0
    assert result["mutations_missed"] == 0, [o.missed for o in result["failures"]]
