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

    # Fleet mode (+fleet): the token controller fetches once per registry and refreshes at a random
    # 40..50 % of the token's life; nodes copy its entry and fall back to their own calls.

    def test_fleet_with_the_controller_up_makes_one_call_per_registry_and_refresh(self):
        nodes, registries, hours = 300, 2, 14
        # A refresh every 0.4 to 0.5 token lives: exactly two within 14 h of 12-hour tokens.
        refreshes = math.floor(hours * 3600 / (0.5 * TOKEN_LIFE))
        self.assertEqual(refreshes, math.floor(hours * 3600 / (0.4 * TOKEN_LIFE)))
        results = run(
            f"--nodes={nodes}",
            f"--registries={registries}",
            f"--hours={hours}",
            "--ramp=60",
            # However late the Secret reaches a node, its entry has half a life left.
            "--fleet-propagation=3600",
            "--scenarios=scale-up+disk+jitter+fleet,rollout+disk+fleet,scale-up+disk+jitter",
        )
        # Joining nodes: the controller's first fetch and two refreshes per registry.
        joined = results["scale-up+disk+jitter+fleet"]
        self.assertEqual(joined["controller_calls"], registries * (1 + refreshes))
        # A running fleet: the entry was fetched before the start, so its first refresh comes
        # within half a life, and the next ones 0.4 to 0.5 lives apart.
        running = results["rollout+disk+fleet"]
        self.assertGreaterEqual(running["controller_calls"], registries * refreshes)
        self.assertLessEqual(running["controller_calls"], registries * (1 + refreshes))
        for name in ("scale-up+disk+jitter+fleet", "rollout+disk+fleet"):
            r = results[name]
            self.assertEqual(r["secret_writes"], r["controller_calls"], name)
            self.assertEqual(r["node_fetches"], 0, name)
            self.assertEqual(r["calls"], r["controller_calls"], name)
            self.assertEqual((r["throttled"], r["failed_execs"]), (0, 0), name)
            # The nodes still run the plugin; each run reads the copied entry.
            self.assertGreater(r["execs"], nodes, name)
        # Without fleet mode every node fetches for every registry.
        self.assertGreaterEqual(results["scale-up+disk+jitter"]["calls"], nodes * registries)

    def test_fleet_nodes_that_pull_before_their_sync_fall_back_once(self):
        nodes, registries, hours = 400, 1, 14
        refreshes = math.floor(hours * 3600 / (0.4 * TOKEN_LIFE))
        for fraction in (0.25, 1):
            r = run(
                f"--nodes={nodes}",
                f"--registries={registries}",
                f"--hours={hours}",
                "--ramp=60",
                f"--fleet-pulls-before-sync={fraction}",
                "--scenarios=scale-up+disk+jitter+fleet",
            )["scale-up+disk+jitter+fleet"]
            # Calls: the controller's, plus one per node and registry that pulled before its
            # sync (its own entry then outlives the controller's until the next refresh).
            self.assertLessEqual(r["controller_calls"], registries * (1 + refreshes))
            self.assertEqual(r["calls"], r["controller_calls"] + r["node_fetches"])
            self.assertLessEqual(r["node_fetches"], nodes * registries)
            self.assertEqual((r["throttled"], r["failed_execs"]), (0, 0))
            if fraction == 1:
                self.assertEqual(r["node_fetches"], nodes * registries)
            else:
                # A binomial draw around a quarter of the nodes (seeded, so fixed).
                self.assertGreater(r["node_fetches"], nodes * registries * 0.15)
                self.assertLess(r["node_fetches"], nodes * registries * 0.35)

    def test_fleet_with_the_controller_never_up_is_exactly_todays_fleet(self):
        args = ("--nodes=300", "--registries=2", "--hours=14", "--ramp=60", "--restarts-per-day=4")
        today = run(*args, "--scenarios=scale-up+disk+jitter,rollout+disk")
        down = run(
            *args,
            "--fleet-down=0:20h",
            "--scenarios=scale-up+disk+jitter+fleet,rollout+disk+fleet",
        )
        plain = today["scale-up+disk+jitter"]
        fleet = down["scale-up+disk+jitter+fleet"]
        self.assertEqual(fleet["controller_calls"], 0)
        same = {k: v for k, v in fleet.items() if k != "scenario"}
        self.assertEqual(same, {k: v for k, v in plain.items() if k != "scenario"})
        # In a rollout the nodes start with the controller's last entry; with the controller
        # gone it expires and each node fetches its own, as without fleet mode.
        rollout = down["rollout+disk+fleet"]
        self.assertEqual(rollout["controller_calls"], 0)
        self.assertEqual(rollout["node_fetches"], 300 * 2)
        self.assertEqual((rollout["throttled"], rollout["failed_execs"]), (0, 0))

    def test_fleet_with_the_controller_down_longer_than_a_token_life_falls_back(self):
        nodes, registries, hours = 300, 2, 26
        args = (f"--nodes={nodes}", f"--registries={registries}", f"--hours={hours}", "--ramp=60")
        today = run(*args, "--scenarios=scale-up+disk+jitter")["scale-up+disk+jitter"]
        # Up for the join, down from 1 h to 14 h: the entry of t=0 expires at 12 h.
        r = run(*args, "--fleet-down=1h:13h", "--scenarios=scale-up+disk+jitter+fleet")[
            "scale-up+disk+jitter+fleet"
        ]
        # Each node fetches once when the copied entry runs out, then adopts the new leader's
        # entry (fresher than its own) at 14 h: nothing more until the controller's refreshes.
        self.assertEqual(r["node_fetches"], nodes * registries)
        self.assertEqual((r["throttled"], r["failed_execs"]), (0, 0))
        self.assertEqual(r["calls"], r["controller_calls"] + r["node_fetches"])
        after_takeover = math.floor((hours - 14) * 3600 / (0.4 * TOKEN_LIFE))
        self.assertLessEqual(r["controller_calls"], registries * (2 + after_takeover))
        # Not more than without fleet mode, nor than that mode's bound.
        per_stream = 1 + math.floor(hours * 3600 / (TOKEN_LIFE - DISK_MARGIN))
        self.assertLessEqual(r["node_fetches"], today["calls"])
        self.assertLessEqual(today["calls"], nodes * registries * per_stream)

    def test_nodes_refresh_copied_entries_at_their_own_points_not_all_at_once(self):
        # The controller's entry carries one refresh point (it runs the provider without jitter).
        # Each node draws its own when it copies the entry (wait --cache-jitter, default 10 %), so
        # after a long outage the nodes fall back spread over an hour and more; with
        # --fleet-node-jitter 0 they would all fall back within minutes of the margin.
        args = (
            "--nodes=3000",
            "--registries=1",
            "--hours=14",
            "--ramp=60",
            "--churn=60",
            "--fleet-down=1h:13h",
            "--scenarios=scale-up+disk+jitter+fleet",
        )
        spread = run(*args)["scale-up+disk+jitter+fleet"]
        together = run(*args, "--fleet-node-jitter=0")["scale-up+disk+jitter+fleet"]
        self.assertEqual(spread, run(*args, "--fleet-node-jitter=10")["scale-up+disk+jitter+fleet"])
        self.assertEqual(together["node_fetches"], 3000)
        self.assertEqual(spread["node_fetches"], 3000)
        self.assertGreater(together["peak_after_first_hour"], ECR_RATE)
        self.assertLess(3 * spread["peak_after_first_hour"], together["peak_after_first_hour"])
        self.assertLessEqual(spread["peak_after_first_hour"], ECR_RATE)
        self.assertEqual((spread["throttled"], spread["failed_execs"]), (0, 0))

    def test_a_nodes_own_fresher_entry_is_kept_over_an_older_copy(self):
        # Every node pulls before its first sync, so it fetches its own entry, fresher than the
        # controller's of t=0; the controller is down from 10 minutes on. Kept, a node's own entry
        # is refreshed at join + 11 h 55 min (no jitter): by 12 h 25 min only the nodes that
        # joined in the first 30 of the 60 minutes can have refreshed. Replaced by the copy, all
        # of them would refresh at 11 h 55 min.
        nodes = 400
        r = run(
            f"--nodes={nodes}",
            "--registries=1",
            "--hours=12.4167",
            "--ramp=3600",
            "--churn=60",
            "--fleet-pulls-before-sync=1",
            # Copies at the margin, so a copy would make every node refresh at 11 h 55 min.
            "--fleet-node-jitter=0",
            "--fleet-down=10m:20h",
            "--scenarios=scale-up+disk+fleet",
        )["scale-up+disk+fleet"]
        self.assertEqual(r["controller_calls"], 1)
        self.assertGreater(r["node_fetches"], nodes * 1.3)
        self.assertLess(r["node_fetches"], nodes * 1.6)

    def test_rejects_a_bad_fleet_down_window(self):
        bad = subprocess.run(
            [sys.executable, str(SIM), "--fleet-down=1h"], capture_output=True, text=True
        )
        self.assertEqual(bad.returncode, 2)
        self.assertIn("'1h' is not START:DURATION", bad.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
