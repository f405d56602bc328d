#!/usr/bin/python3
"""ncu_summary.py against hand-computed sums, on two small logs in ncu's
--csv --page raw form (header row, units row, one row per launch, ncu's own
lines in between)."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ncu_summary  # noqa: E402

HEAD = '"ID","Process ID","Kernel Name","gpu__time_duration.sum"\n"","","","ns"\n'
A = ('==PROF== Connected to process 1\n' + HEAD +
     '"0","1","SincConvKernel(const float *)","3,000"\n'
     '"1","1","BroadcastRowsKernel(float *)","70"\n'
     '"2","1","BroadcastRowsKernel(float *)","30"\n'
     '"3","1","sm90_xmma_fprop_implicit_gemm","500"\n')
B = (HEAD +
     '"0","1","SincConvKernel(const float *)","1,500"\n'
     '"1","1","vector_fft_r2c<512>","100"\n'
     '"2","1","sm90_xmma_fprop_implicit_gemm","400"\n'
     '"3","1","sm90_xmma_fprop_implicit_gemm","400"\n')


class NcuSummaryTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.a = os.path.join(self.dir, "a.csv")
        self.b = os.path.join(self.dir, "b.csv")
        open(self.a, "w").write(A)
        open(self.b, "w").write(B)

    def run_tool(self, *args):
        return subprocess.run([sys.executable, os.path.join(HERE, "ncu_summary.py"), *args],
                              check=True, capture_output=True, text=True).stdout

    def test_read_sums_per_name(self):
        total, count, unit = ncu_summary.read(self.a)
        self.assertEqual(unit, "ns")
        self.assertEqual(total["BroadcastRowsKernel(float *)"], 100.0)
        self.assertEqual(count["BroadcastRowsKernel(float *)"], 2)
        self.assertEqual(total["SincConvKernel(const float *)"], 3000.0)  # "3,000"

    def test_one_log(self):
        out = self.run_tool(self.a, "2")
        self.assertIn("ncu: 4 kernels, total 3600.0 ns", out)
        lines = out.splitlines()
        self.assertEqual(len(lines), 3)  # the header and the top 2
        self.assertIn("SincConvKernel", lines[1])
        self.assertIn("83.3%", lines[1])  # 3000 / 3600

    def test_a_against_b(self):
        out = self.run_tool(self.a, self.b)
        # Totals 3600 and 2400 ns: B/A 0.667.
        self.assertIn("B/A 0.667", out)
        sinc = next(l for l in out.splitlines() if "SincConv" in l)
        self.assertEqual(sinc.split()[:5], ["1", "3000.0", "1", "1500.0", "0.500"])
        conv = next(l for l in out.splitlines() if "fprop" in l)
        self.assertEqual(conv.split()[:5], ["1", "500.0", "2", "400.0", "1.600"])
        fft = next(l for l in out.splitlines() if "fft" in l)
        self.assertEqual(fft.split()[:5], ["0", "-", "1", "100.0", "-"])

    def test_exclude(self):
        out = self.run_tool(self.a, self.b, "--exclude", "fprop")
        self.assertNotIn("fprop_implicit", out.split("\n", 1)[1])
        self.assertIn("B/A 0.516", out)  # (1500 + 100) / (3000 + 100)


if __name__ == "__main__":
    unittest.main()
