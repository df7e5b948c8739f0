"""What each simulator addition and recipe part of issue 37 does to the comparison with the
GTX 1080 Ti (docs/simulator.md, "What each addition does"): the validation of `gpudb evaluate
simulator` run with the shipped gtx1080ti-sim and with each addition taken out, one at a time,
as a Markdown table. A maintainer's tool (about 2-3 minutes a variant on 2 cores):

    python tests/tools/sim_additions.py DB [--seeds 0,1] [--only NAME,...]

DB holds the measured gtx1080ti runs (gpudb ingest of the shared gtx1080ti-train.csv with
fixtures/mappings/gtx1080ti.toml); it is copied per variant, never written.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpudb.store import db  # noqa: E402
from gpudb.workflows.simulator import check_simulator, target  # noqa: E402
from sim.config import fixture_dir  # noqa: E402

# name: (lines to drop from the configuration, values to set, recipe parts left out)
VARIANTS = {
    "shipped": ((), {}, ()),
    "no FP64 unit (FP64 on the SFU)": (("dp_latency_cycles", "dp_interval_cycles"), {}, ()),
    "one LSU transaction a cycle": ((), {"lsu_transactions_per_cycle": "1"}, ()),
    "no per-kernel CTA limit": ((), {}, ("ctas_per_sm",)),
    "no load-chain knob": ((), {}, ("load_chain",)),
}


def variant_config(folder: Path, k: int, drop, values) -> Path:
    text = (fixture_dir("gpus") / "gtx1080ti-sim.toml").read_text()
    text = re.sub(r'^name = .*$', f'name = "gtx1080ti-sim-v{k}"', text, count=1, flags=re.M)
    for key in drop:
        text = re.sub(rf"^{key} = .*\n", "", text, flags=re.M)
    for key, value in values.items():
        text = re.sub(rf"^{key}(\s*)= \S+", rf"{key}\g<1>= {value}", text, count=1, flags=re.M)
    path = folder / f"v{k}.toml"
    path.write_text(text)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    chosen = args.only.split(",") if args.only else list(VARIANTS)
    print("| variant | train MAPE % | held-out MAPE % | held-out worst % | all MAPE % | "
          "core sens. ok | mem sens. ok | power MAPE % |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for k, name in enumerate(VARIANTS):
            if name not in chosen:
                continue
            drop, values, without = VARIANTS[name]
            config = variant_config(folder, k, drop, values)
            path = str(folder / f"v{k}.duckdb")
            shutil.copy(args.db, path)
            t = target(path, "gtx1080ti", str(config), read_only=False)
            check_simulator(path, t, folder / f"v{k}.clones.toml", seeds=seeds,
                            without=frozenset(without))
            con = db.connect(path, read_only=True)
            try:
                got = {split: row for split, *row in con.execute(
                    "SELECT split, avg(sim_time_mape_pct), max(sim_time_mape_pct), "
                    "count(*) FILTER (WHERE abs(sim_core_sens - core_sens) <= 0.03), "
                    "count(*) FILTER (WHERE abs(sim_mem_sens - mem_sens) <= 0.03), "
                    "avg(sim_power_mape_pct), count(*) FROM sim_scaling_kernel "
                    "WHERE sim_gpu_id = ? GROUP BY ROLLUP (split)", [t.model_name]).fetchall()}
            finally:
                con.close()
            train, held, every = got["train"], got["held_out"], got[None]
            print(f"| {name} | {train[0]:.2f} | {held[0]:.2f} | {held[1]:.2f} | {every[0]:.2f} | "
                  f"{every[2]}/{every[5]} | {every[3]}/{every[5]} | {every[4]:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
