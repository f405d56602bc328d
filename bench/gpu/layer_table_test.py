#!/usr/bin/python3
"""layer_table.py against hand-computed figures (the issue-11 round's stem
and layer3.0.shortcut: 0.23 ms = 6.4 TFLOP/s, 0.215 ms = 12.2 TFLOP/s)."""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layer_table  # noqa: E402

# Lines as GraphConv2d::Describe prints them (current format, with the
# precision token), at batch 32 and a reused one at batch 7.
TF32_LOG = """--embedding_precision=tf32 --conv_api=graph
rtfx_main: cuda:0, 3600.0 s of audio, embedding tf32 (NHWC, fused epilogue, conv api graph)
  graph conv stem 32<-1 3x3/1 on 32x1x80x998 conv+bias+relu tf32: graph eng0_k2=1 (0.23 ms = 6.4 TFLOP/s, ws 0 B; 3 of 9 candidates timed, 0 of them runtime-compiled) {timed: eng0_k2=1 0.2300 ms ws 0.0 MB;} [chosen in 12 ms]
  graph conv layer3.0.shortcut 128<-64 1x1/2 on 32x64x40x499 conv tf32: graph eng9 (0.215 ms = 12.2 TFLOP/s, ws 256901120 B; 8 of 30 candidates timed, 1 of them runtime-compiled) [chosen in 900 ms]
  graph conv layer4.0.conv1 512<-256 3x3/2 on 32x256x10x125 conv+bias+relu tf32: legacy (faster than the best graph engine eng3 (0.1 vs 0.12 ms)) legacy 1.0 TFLOP/s, graph 1.0 TFLOP/s [chosen in 5 ms]
  graph conv stem 32<-1 3x3/1 on 7x1x80x998 conv+bias+relu tf32: graph eng0_k2=1 (the engine timed at batch 32, ws 0 B) [chosen in 1 ms]
"""
# An older binary's lines (no precision token): the run's header says
# "embedding mixed"; one layer only reused at the largest batch.
MIXED_LOG = """rtfx_main: cuda:0, embedding mixed (NHWC, fused epilogue, conv api graph)
  graph conv stem 32<-1 3x3/1 on 32x1x80x998 conv+bias+relu: graph eng1 (from the engine cache; 0.115 ms = 12.8 TFLOP/s, ws 0 B) [chosen in 3 ms]
  graph conv layer3.0.shortcut 128<-64 1x1/2 on 32x64x40x499 conv: graph eng9 (the engine timed at batch 64, ws 0 B) [chosen in 1 ms]
"""


def row(table, name):
    for line in table.splitlines():
        if line.startswith(f"| {name} |") or line.startswith(f"| **{name}**"):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"no row {name} in\n{table}")


class LayerTableTest(unittest.TestCase):

    def test_flop_of_the_trunk_shapes(self):
        # 2 * 32 * 32 * 1 * 9 * 80 * 998 and 2 * 32 * 128 * 64 * 20 * 250
        # (the 1x1/2 shortcut of layer3.0: 40x499 -> 20x250).
        self.assertEqual(layer_table.flop(32, 1, 3, 3, 1, 32, 80, 998),
                         1471610880.0)
        self.assertEqual(layer_table.flop(128, 64, 1, 1, 2, 32, 40, 499),
                         2621440000.0)

    def test_two_runs_side_by_side(self):
        t = layer_table.build_table([("tf32", TF32_LOG), ("mixed", MIXED_LOG)])
        stem = row(t, "stem")
        self.assertEqual(stem[1], "32<-1 3x3/1 on 80x998")
        # tf32: 1.4716 GFLOP in 0.23 ms = 6.398 TFLOP/s = 1.29 % of 494.7.
        self.assertEqual(stem[2:5], ["0.2300", "6.4", "1.3 %"])
        # mixed (from the header): 0.115 ms = 12.797 TFLOP/s = 1.29 % of 989.4.
        self.assertEqual(stem[5:8], ["0.1150", "12.8", "1.3 %"])
        sc = row(t, "layer3.0.shortcut")
        self.assertEqual(sc[2:5], ["0.2150", "12.2", "2.5 %"])
        self.assertEqual(sc[5], "(graph, untimed)")
        # fastest kept the legacy call: its own time counts.
        l4 = row(t, "layer4.0.conv1")
        self.assertTrue(l4[2].startswith("0.1000 (legacy)"), l4)
        self.assertEqual(l4[5], "—")
        # Totals: tf32 0.545 ms; mixed 0.115 ms with one layer untimed.
        total = row(t, "total")
        self.assertEqual(total[2], "**0.545**")
        self.assertEqual(total[5], "**0.115** (1 untimed)")
        self.assertIn("tf32 (batch 32): ms", t.splitlines()[0])
        self.assertIn("% of 989.4", t.splitlines()[0])

    def test_batch_and_peak_options(self):
        t = layer_table.build_table([("tf32", TF32_LOG)], batch=7, peak=100.0)
        stem = row(t, "stem")
        self.assertEqual(stem[2], "(graph, untimed)")
        self.assertNotIn("layer3.0.shortcut", t)
        self.assertIn("% of 100", t.splitlines()[0])

    def test_errors(self):
        with self.assertRaises(ValueError):
            layer_table.build_table([("empty", "rtfx_main: nothing here\n")])
        # No precision token and no header: the peak is unknown.
        bare = MIXED_LOG.split("\n", 1)[1]
        with self.assertRaises(ValueError):
            layer_table.build_table([("bare", bare)])
        self.assertIn("| stem |",
                      layer_table.build_table([("bare", bare)], peak=989.4))

    def test_command_line(self):
        with tempfile.TemporaryDirectory() as d:
            a = os.path.join(d, "rtfx_1.log")
            with open(a, "w") as f:
                f.write(TF32_LOG)
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  "layer_table.py")
            out = subprocess.run([sys.executable, script, a, f"mine={a}"],
                                 capture_output=True, text=True, check=True)
            header = out.stdout.splitlines()[0]
            self.assertIn("--embedding_precision=tf32 --conv_api=graph "
                          "(batch 32): ms", header)
            self.assertIn("mine (batch 32): ms", header)
            bad = subprocess.run([sys.executable, script, os.devnull],
                                 capture_output=True, text=True)
            self.assertEqual(bad.returncode, 1)
            self.assertIn("no 'graph conv' lines", bad.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
