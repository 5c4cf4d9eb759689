"""ascend-plan-memory and ascend-check-memory on compiled models.

Every suite model (the light models, a TorchScript transformer block and a stack of 24) is
compiled by the default pipeline (up to four streams) and its plan checked: no two buffers live
at the same time (counting concurrent streams) overlap, every buffer lies in its space, the
workspace is within 2% of the lower bound. On smaller models the planned program is run:
outputs bit-identical to the program without reuse, and the simulator finds no race between
streams (gm) or pipes (on chip).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import geir
from geir.dialects import ascend as a
from geir.dialects import make_context
from geir.ir.text import parse_module, print_module
from geir.passes.ascend.check_memory import MemoryPlanError, check_memory_plan, host_functions, workspace_arg
from geir.passes.ascend.plan_memory import PlanMemory, host_memory
from geir.testing.suite import LIGHT_MODELS, light_model
from geir.dialects import attr_names

CTX = make_context()
TRANSFORMERS = {"transformer1": dict(layers=1), "transformer24": dict(layers=24, d_model=256, seq=128)}
MODELS = (*LIGHT_MODELS, *TRANSFORMERS)


def model(name: str):
    if name in TRANSFORMERS:
        from geir.testing.transformer import transformer_onnx

        return transformer_onnx(**TRANSFORMERS[name])
    return light_model(name)


@lru_cache(maxsize=3)  # bounded: all suite models compiled at once would not fit in memory
def compiled(name: str, **options) -> geir.api.CompiledModel:
    """The default pipeline (O3: layout, up to four streams, memory reuse)."""
    return geir.compile(model(name), **options)


def plan_attrs(module: ModuleOp) -> dict[str, int | str]:
    host = host_functions(module)[0]
    d = host.attributes[attr_names.MEMORY_PLAN].data
    return {"strategy": d["strategy"].data, "lower_bound": d["lower_bound"].value.data,
            "no_reuse": d["no_reuse"].value.data, "workspace": host.attributes[attr_names.WORKSPACE_SIZE].value.data}


def feeds_of(module: ModuleOp) -> dict[str, np.ndarray]:
    from geir.runtime.ascend_interpreter import ascend_input_specs

    rng = np.random.default_rng(0)
    return {n: rng.standard_normal(s).astype(d) for n, s, d in ascend_input_specs(module)}


@pytest.mark.parametrize("name", MODELS)
def test_compiled_plan_is_safe_and_near_the_bound(name):
    cm = compiled(name)
    module = cm.module
    check_memory_plan(module)
    host = host_functions(module)[0]
    attrs = plan_attrs(module)
    assert attrs["strategy"] == "best"
    assert a.nbytes_of(workspace_arg(host).type) == attrs["workspace"]
    assert attrs["lower_bound"] <= attrs["workspace"] <= 1.02 * attrs["lower_bound"]
    assert attrs["workspace"] <= attrs["no_reuse"]
    gm = [op for op in host.walk() if isinstance(op, a.AllocOp)]
    assert gm and all(op.offset is not None and attr_names.LIVE in op.attributes for op in gm)
    for op in module.walk():
        if isinstance(op, a.AllocOp):
            assert a.int_value(op.offset) % a.OFFSET_ALIGN[op.space] == 0


def test_resnet50_needs_at_least_2_5x_less_than_without_reuse():
    attrs = plan_attrs(compiled("light_resnet50").module)
    assert attrs["no_reuse"] >= 2.5 * attrs["workspace"]


@pytest.mark.parametrize("name", ["transformer1", "light_squeezenet"])
def test_planned_program_matches_no_reuse_and_has_no_races(name):
    from geir.runtime.simulator import check_stream_races, record, simulate

    cm = compiled(name)
    feeds = feeds_of(cm.module)
    outputs, records = record(cm.module, feeds)
    check_stream_races(records)
    simulate(records, strict=True)  # on-chip: no two pipes race on planned bytes
    plain = compiled(name, memory_reuse=False)
    assert plan_attrs(plain.module)["strategy"] == "none"
    assert plan_attrs(plain.module)["workspace"] == plan_attrs(plain.module)["no_reuse"]
    expected = plain.run(feeds)
    for k, v in expected.items():
        np.testing.assert_array_equal(outputs[k], v)


def test_inplace_buffers_are_used_and_marked():
    mem = host_memory(host_functions(compiled("transformer1", disable_passes=("ascend-plan-memory",)).module)[0])
    assert mem.inplace
    module = compiled("transformer1").module
    marked = [op for op in module.walk() if isinstance(op, a.AllocOp) and "inplace" in op.attributes]
    assert len(marked) == len(mem.inplace)


@pytest.mark.parametrize("name", ["light_squeezenet", "light_inception_v1"])
def test_conflicts_match_pairwise_happens_before(name):
    """The sweep's interference graph equals the definition: two buffers conflict unless
    every launch of one happens before every launch of the other."""
    from geir.passes.ascend.check_memory import conflicts, gm_buffers, lifetimes, schedule

    host = host_functions(compiled(name).module)[0]
    sched = schedule(host)
    assert sched.streams > 1
    bufs = [b for b in gm_buffers(host, sched) if len(b.launches)]
    life = lifetimes(sched, [b.launches for b in bufs])
    got = {tuple(sorted(e)) for e in conflicts(sched, life).tolist()}

    def before(x, y) -> bool:
        return all(sched.hb(i, j) for i in x.launches.tolist() for j in y.launches.tolist())

    want = {(i, j) for i in range(len(bufs)) for j in range(i + 1, len(bufs))
            if not before(bufs[i], bufs[j]) and not before(bufs[j], bufs[i])}
    assert got == want


def test_plan_is_idempotent():
    text = print_module(compiled("transformer1").module, elide=True)
    module = parse_module(print_module(compiled("transformer1").module), CTX)
    PlanMemory().apply(CTX, module)
    assert print_module(module, elide=True) == text


# concat-heavy models (inception's branches, squeezenet's fire modules); DenseNet-121 adds
# minutes, not cases: its kernels are the same templates
@pytest.mark.parametrize("name", ["light_inception_v1", "light_squeezenet"])
def test_on_chip_plans_never_need_more_than_the_lowering_s(name):
    before = compiled(name, disable_passes=("ascend-plan-memory",)).module
    after = compiled(name).module

    def tops(module: ModuleOp) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for k in module.ops:
            if isinstance(k, a.KernelOp):
                for op in k.walk():
                    if isinstance(op, a.AllocOp):
                        key = (k.sym_name.data, op.space)
                        out[key] = max(out.get(key, 0), a.int_value(op.offset) + op.nbytes)
        return out

    old, new = tops(before), tops(after)
    assert old.keys() == new.keys()
    assert all(new[k] <= old[k] for k in old)
    assert sum(new.values()) < sum(old.values())


def test_checker_names_both_buffers_of_an_overlap():
    module = parse_module(print_module(compiled("transformer1").module), CTX)
    host = host_functions(module)[0]
    mem = host_memory(host)
    i, j = next((i, int(j)) for i, nb in enumerate(mem.problem.neighbours) for j in nb
                if len(mem.groups[i]) == 1 and len(mem.groups[int(j)]) == 1)
    x, y = mem.buffers[mem.groups[i][0]].op, mem.buffers[mem.groups[j][0]].op
    y.properties["offset"] = x.properties["offset"]
    with pytest.raises(MemoryPlanError, match=f"%{x.memref.name_hint}.*%{y.memref.name_hint}|"
                                              f"%{y.memref.name_hint}.*%{x.memref.name_hint}"):
        check_memory_plan(module)


def test_strategy_option_reaches_the_ir():
    attrs = plan_attrs(compiled("light_squeezenet", memory_strategy="greedy-size").module)
    assert attrs["strategy"] == "greedy-size"


def test_kernel_that_cannot_fit_is_a_clear_error():
    module = parse_module("""
    ascend.kernel @k3_conv1(%x: memref<70x256xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
      %a = ascend.alloc : memref<70x256xf32, "ub">
      %b = ascend.alloc : memref<70x256xf32, "ub">
      %c = ascend.alloc : memref<70x256xf32, "ub">
      ascend.vadd %a, %b, %c : memref<70x256xf32, "ub">
      ascend.return
    }
    """, CTX)
    with pytest.raises(MemoryPlanError, match=r"kernel 'k3_conv1' needs 210 KiB of ub, the device has 192 KiB"):
        PlanMemory().apply(CTX, module)
    PlanMemory(device="ascend310p").apply(CTX, module)  # 256 KiB of ub


def test_unknown_strategy_is_an_option_error():
    with pytest.raises(MemoryPlanError, match="unknown strategy 'fast'"):
        PlanMemory(strategy="fast")
