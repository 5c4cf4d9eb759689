"""How near their bound do models run, and what does the L2 change? Each model compiled at O3
and profiled twice in one run, side by side: on the device without L2 hits (the device file
with `l2_bytes_per_s` set to `hbm_bytes_per_s`: every gm byte at HBM speed, the model before
the L2 rule) and on the device as shipped (docs/device.md, the L2 rule). Per model:
latency / roofline bound, the cube utilisation (`aic_mac_ratio`), the bytes L2 served, and
the slowest kernel's time / its own lower bound.

    python bench/roofline.py [--models light|none] [--batch N] [--llama CONFIG]
                             [--prefill BxS] [--precision MODE]

`--llama` adds one decoder layer of a LLaMA config (fp16, shape-only weights, timing-only):
its prefill at `--prefill` (default 1x2048), per layer = (2 layers - 1 layer). The light
models take about two minutes; a LLaMA-7B layer at 1x2048 about three.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
from pathlib import Path

import geir
from geir.target.cost_model import CostModel
from geir.target.device import DEVICES_DIR
from geir.testing.suite import LIGHT_MODELS, light_model, with_batch


def without_l2(device: str, folder: Path) -> str:
    """A copy of `device`'s file whose L2 moves at HBM speed: no hit is faster than a miss."""
    data = json.loads((DEVICES_DIR / f"{device}.json").read_text())
    data["l2_bytes_per_s"]["value"] = data["hbm_bytes_per_s"]["value"]
    data["name"]["value"] = f"{device}-no-l2"
    path = folder / f"{device}-no-l2.json"
    path.write_text(json.dumps(data))
    return str(path)


def figures(report: dict) -> dict:
    slowest = max(report["kernels"], key=lambda k: k["time_us"])
    return {
        "latency": report["latency_us"], "x_bound": report["roofline_ratio"],
        "mac": report.get("aic_mac_ratio", 0.0), "l2_mb": report["l2_hit_bytes"] / 1e6,
        "slowest": f"{slowest['time_us'] / max(slowest['lower_bound_us'], 1e-9):.2f}",
    }


def llama_layer(config: str, batch: int, seq: int, device: str) -> dict:
    """One decoder layer's prefill: (2 layers - 1 layer) of the timing-only run."""
    from geir.models import CONFIGS
    from geir.models.llm_report import timing_feeds

    out = {}
    for layers in (1, 2):
        c = dataclasses.replace(CONFIGS[config], layers=layers)
        progs = geir.models.llama(c, batch=batch, seq=seq, dtype="f16", weights="shape-only",
                                  cache="inplace", max_len=seq)
        cm = geir.compile(progs.prefill, opt_level=3, device=device)
        _, out[layers] = cm.profile(timing_feeds(cm, "prefill"), mode="timing")
    one, two = out[1], out[2]
    macs = sum(k["cube_flops"] for k in two["kernels"]) - sum(k["cube_flops"] for k in one["kernels"])
    bound = macs / CostModel(device).peak_cube_flops("f16") * 1e6
    latency = two["latency_us"] - one["latency_us"]
    return {"latency": latency, "x_bound": latency / bound, "mac": two.get("aic_mac_ratio", 0.0),
            "l2_mb": (two["l2_hit_bytes"] - one["l2_hit_bytes"]) / 1e6, "slowest": ""}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", choices=("light", "none"), default="light")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--precision", default="force_fp16")
    p.add_argument("--llama", default=None, help="a geir.models config, e.g. llama-2-7b")
    p.add_argument("--prefill", default="1x2048")
    p.add_argument("--device", default="ascend910b")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        devices = {"no L2": without_l2(a.device, Path(tmp)), "L2": a.device}
        rows = []
        if a.models == "light":
            for name in LIGHT_MODELS:
                model = light_model(name)
                model = with_batch(model, a.batch) if a.batch != 1 else model
                rows.append((f"{name} b{a.batch}", {
                    k: figures(geir.compile(model, opt_level=3, precision_mode=a.precision, device=d).profile()[1])
                    for k, d in devices.items()}))
                print(f"  {name}: done", file=sys.stderr, flush=True)
        if a.llama:
            b, s = map(int, a.prefill.split("x"))
            rows.append((f"{a.llama} prefill {a.prefill}, one layer",
                         {k: llama_layer(a.llama, b, s, d) for k, d in devices.items()}))
    print("| model | latency us, no L2 / L2 | speed-up | x bound, no L2 / L2 | aic_mac_ratio, no L2 / L2 "
          "| L2 hits MB | slowest kernel x its bound, no L2 / L2 |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        n, l = r["no L2"], r["L2"]
        print(f"| {name} | {n['latency']:.1f} / {l['latency']:.1f} | {n['latency'] / l['latency']:.2f}x "
              f"| {n['x_bound']:.2f} / {l['x_bound']:.2f} | {n['mac']:.3f} / {l['mac']:.3f} | {l['l2_mb']:.1f} "
              f"| {n['slowest']} / {l['slowest']} |")
    light = [r for name, r in rows if "prefill" not in name]
    if light:
        geo = {k: math.exp(sum(math.log(r[k]["x_bound"]) for r in light) / len(light)) for k in devices}
        print(f"\ngeometric mean of latency / bound over the light models: no L2 {geo['no L2']:.2f}, L2 {geo['L2']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
