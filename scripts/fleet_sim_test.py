#!/usr/bin/env python3
"""Properties of scripts/fleet-sim that must hold whatever the tuning: run it with a small fleet
and check the bounds the model implies.

Run: python3 scripts/fleet_sim_test.py   (the plot test needs matplotlib, from .venv)
"""

import json
import math
import pathlib
import subprocess
import sys
import tempfile
import unittest

SIM = pathlib.Path(__file__).resolve().parent / "fleet-sim"
TOKEN_LIFE, DISK_MARGIN = 12 * 3600, 300
ECR_RATE = 20


def run(*args):
    out = subprocess.run(
        [sys.executable, str(SIM), "--json", *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return {r["scenario"]: r for r in json.loads(out)}


class FleetSimTest(unittest.TestCase):
    def test_disk_cache_bounds_token_calls_even_with_many_restarts(self):
        nodes, registries, hours = 200, 3, 30
        results = run(
            f"--nodes={nodes}",
            f"--registries={registries}",
            f"--hours={hours}",
            "--restarts-per-day=24",
            "--scenarios=scale-up+disk,scale-up+disk+jitter,rollout+disk,scale-up",
        )
        # A disk token is only replaced once less than the margin is left, so each (node,
        # registry) fetches at most once per (life - margin), however often kubelets restart.
        per_stream = 1 + math.floor(hours * 3600 / (TOKEN_LIFE - DISK_MARGIN))
        bound = nodes * registries * per_stream
        for name in ("scale-up+disk", "scale-up+disk+jitter", "rollout+disk"):
            r = results[name]
            self.assertLessEqual(r["tokens"], bound, name)
            self.assertEqual(r["throttled"], 0, name)
            self.assertEqual(r["calls"], r["tokens"], name)
            self.assertEqual(r["failed_execs"], 0, name)
            # Restarts and expiries do run the plugin; they just do not reach ECR.
            self.assertGreater(r["execs"], r["calls"], name)
        # Every node fetched its first token at scale-up.
        self.assertGreaterEqual(results["scale-up+disk"]["tokens"], nodes * registries)
        # Without the disk cache every restart and every concurrent image costs a call.
        self.assertGreater(results["scale-up"]["calls"], 2 * results["scale-up+disk"]["calls"])

    def test_jitter_spreads_the_refresh_peak(self):
        # High churn, so every node pulls right after its cache expires: without jitter the
        # whole fleet refreshes within the ramp, six hours after joining.
        results = run(
            "--nodes=400",
            "--registries=1",
            "--churn=120",
            "--ramp=60",
            "--hours=13",
            "--restarts-per-day=0",
            "--scenarios=scale-up,scale-up+jitter",
        )
        plain, jittered = results["scale-up"], results["scale-up+jitter"]
        self.assertGreater(plain["peak_after_first_hour"], ECR_RATE)
        self.assertLess(2 * jittered["peak_after_first_hour"], plain["peak_after_first_hour"])

    def test_a_herd_without_disk_cache_is_throttled_and_fails_pulls(self):
        results = run(
            "--nodes=1500",
            "--registries=1",
            "--ramp=10",
            "--hours=1",
            "--scenarios=scale-up,scale-up+disk",
        )
        herd, disk = results["scale-up"], results["scale-up+disk"]
        self.assertGreater(herd["peak"], 200)
        self.assertGreater(herd["throttled"], 0)
        self.assertGreater(herd["failed_execs"], 0)
        self.assertGreater(herd["seconds_over"], 0)
        # The disk cache's lock makes it one token per node. 150 nodes/s still exceed the rate,
        # so some of them fail too, but far fewer than without it.
        self.assertLessEqual(disk["tokens"], 1500)
        self.assertLess(5 * disk["calls"], herd["calls"])
        self.assertLess(5 * disk["failed_execs"], herd["failed_execs"])

    def test_same_seed_same_result_other_seed_other_result(self):
        args = ("--nodes=150", "--registries=2", "--hours=8", "--scenarios=scale-up+jitter,rollout")
        a, b = run(*args, "--seed=7"), run(*args, "--seed=7")
        self.assertEqual(a, b)
        self.assertNotEqual(a, run(*args, "--seed=8"))

    def test_table_and_plot(self):
        args = ["--nodes=50", "--hours=2", "--scenarios=scale-up,rollout+disk"]
        table = subprocess.run(
            [sys.executable, str(SIM), *args], check=True, capture_output=True, text=True
        ).stdout
        self.assertIn("upstream calls", table)
        self.assertIn("rollout+disk", table)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib not installed (scripts/setup-venv installs it)")
        with tempfile.TemporaryDirectory() as tmp:
            png = pathlib.Path(tmp) / "plot.png"
            subprocess.run(
                [sys.executable, str(SIM), *args, f"--out={png}"], check=True, capture_output=True
            )
            self.assertEqual(png.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")

    def test_rejects_unknown_scenarios(self):
        bad = subprocess.run(
            [sys.executable, str(SIM), "--scenarios=scale-up+typo"], capture_output=True, text=True
        )
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unknown scenario(s) scale-up+typo", bad.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
