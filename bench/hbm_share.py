"""What the HBM share of blocks that finish early is worth: each model compiled and timed
twice in one run, side by side - with the shipped rule (a block that runs while others have
finished moves its bytes at a larger share: the simulator times each block at the mean number
of movers beside it, the tilings price a last partial round of tiles at its own blocks' share,
`CostModel.wave_shares`; docs/report.md) and with the static share it replaced (every block at
1 / the blocks the kernel holds at once, for the whole kernel). Timing-only runs (no data).

Per model: latency, latency / roofline bound and `aic_mac_ratio` under both rules, and the
kernel whose time changed most. Then the geometric mean of latency / bound.

    python bench/hbm_share.py [--batch 16] [--models resnet50,vgg19] [--llama llama-2-7b]

`--llama CONFIG` adds the decode step of two layers of that config (batch 1, a 4096-row cache,
fp16, shape-only weights).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import sys

import geir
from geir.lowering.templates.common import ceil_div
from geir.runtime import simulator
from geir.target.cost_model import CostModel
from geir.testing.suite import LIGHT_MODELS, light_model, with_batch


@contextlib.contextmanager
def static_share():
    """The rule before: no refinement of a block's share, no last round priced apart."""
    refine, shares = simulator.mean_concurrency, CostModel.__dict__["wave_shares"]  # the staticmethod itself

    def whole_kernel(tiles: int, blocks: int) -> list[tuple[int, int]]:
        blocks = max(1, min(blocks, tiles))
        return [(ceil_div(tiles, blocks), blocks)]

    simulator.mean_concurrency = lambda spans: {}
    CostModel.wave_shares = staticmethod(whole_kernel)
    try:
        yield
    finally:
        simulator.mean_concurrency, CostModel.wave_shares = refine, shares


def timed(build) -> dict:
    """Compile (`build()`: a model and its compile options) and time it without data."""
    model, options, feeds = build()
    cm = geir.compile(model, opt_level=3, **options)
    _, report = cm.profile(feeds(cm) if feeds else None, mode="timing")
    return report


def compare(name: str, build) -> dict:
    with static_share():
        before = timed(build)
    after = timed(build)
    kb = {k["name"]: k["time_us"] for k in before["kernels"]}
    moved = max(after["kernels"], key=lambda k: abs(kb.get(k["name"], k["time_us"]) - k["time_us"]))
    return {"name": name, "before": before, "after": after,
            "moved": f"{moved['name']} {kb.get(moved['name'], 0.0):.1f} -> {moved['time_us']:.1f}"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--models", default=",".join(m.removeprefix("light_") for m in LIGHT_MODELS))
    p.add_argument("--precision", default="force_fp16")
    p.add_argument("--llama", default=None, help="a geir.models config, e.g. llama-2-7b")
    a = p.parse_args(argv)
    rows = []
    for name in (m for m in a.models.split(",") if m):
        model = light_model(f"light_{name}")
        model = with_batch(model, a.batch) if a.batch != 1 else model
        rows.append(compare(f"{name} b{a.batch}", lambda model=model: (model, {"precision_mode": a.precision}, None)))
        print(f"  {name}: done", file=sys.stderr, flush=True)
    if a.llama:
        from geir.models import CONFIGS
        from geir.models.llm_report import timing_feeds

        c = dataclasses.replace(CONFIGS[a.llama], layers=2)
        progs = geir.models.llama(c, batch=1, seq=1, dtype="f16", weights="shape-only", cache="inplace", max_len=4096)
        rows.append(compare(f"{a.llama} decode 1x4096, 2 layers",
                            lambda: (progs.decode, {}, lambda cm: timing_feeds(cm, "decode"))))
    print("| model | latency us, static / shipped | x bound, static / shipped | aic_mac_ratio, static / shipped "
          "| the kernel that moved most (us) |")
    print("|---|---|---|---|---|")
    for r in rows:
        b, f = r["before"], r["after"]
        print(f"| {r['name']} | {b['latency_us']:.1f} / {f['latency_us']:.1f} | {b['roofline_ratio']:.2f} / "
              f"{f['roofline_ratio']:.2f} | {b.get('aic_mac_ratio', 0.0):.3f} / {f.get('aic_mac_ratio', 0.0):.3f} "
              f"| {r['moved']} |")
    light = [r for r in rows if "decode" not in r["name"]]
    if light:
        geo = {k: math.exp(sum(math.log(r[k]["roofline_ratio"]) for r in light) / len(light)) for k in ("before", "after")}
        print(f"\ngeometric mean of latency / bound: static {geo['before']:.2f}, shipped {geo['after']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
