#!/usr/bin/python3
"""pass_split.py against hand-computed splits, on a small log in ncu's --csv
--page raw form: cuDNN's algorithm search at load on a stream of its own,
two passes (segmentation, embedding and linkage streams interleaved as the
overlapped stages run them), then launches after the last linkage."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pass_split  # noqa: E402

HEAD = ('"ID","Process ID","Kernel Name","Stream","gpu__time_duration.sum"\n'
        '"","","","","ns"\n')
ROWS = [
    # load: cuDNN's search (no marker on stream 14)
    ("fft1d_r2c_256", "14", "1,000"),
    # pass 1
    ("SincConvKernel<1>(const float *)", "13", "400"),
    ("Conv3x3C32Kernel<2, 1, 0>(const float *)", "30", "300"),
    ("LstmResidentKernel(const float *)", "13", "200"),
    ("cudnn_generated_convFwd_xmma_sm90", "30", "100"),
    ("MirrorKernel(double *, int)", "64", "5"),
    ("MergeLoopKernel(double *, int)", "64", "45"),
    # pass 2
    ("SincConvKernel<1>(const float *)", "13", "300"),
    ("sm80_xmma_gemm_f32f32", "13", "100"),
    ("Conv3x3C32Kernel<2, 1, 0>(const float *)", "30", "500"),
    ("MergeLoopKernel(double *, int)", "64", "100"),
    # after the last linkage: the fbank alone
    ("FramesKernel(const float *)", "30", "77"),
]
LOG = ("==PROF== Connected to process 1\n" + HEAD +
       "".join(f'"{i}","1","{n}","{s}","{t}"\n' for i, (n, s, t) in enumerate(ROWS)))


class PassSplitTest(unittest.TestCase):
    def setUp(self):
        self.path = os.path.join(tempfile.mkdtemp(), "ncu.csv")
        open(self.path, "w").write(LOG)

    def run_tool(self, *args):
        return subprocess.run([sys.executable, os.path.join(HERE, "pass_split.py"), self.path,
                               *args], check=True, capture_output=True, text=True).stdout

    def test_streams_named_by_their_markers(self):
        rows, unit = pass_split.read_rows(self.path)
        self.assertEqual(unit, "ns")
        self.assertEqual(rows[0], ("fft1d_r2c_256", "14", 1000.0))  # "1,000"
        self.assertEqual(pass_split.stream_stages(rows),
                         {"13": "segmentation", "30": "embeddings", "64": "linkage"})

    def test_passes_end_with_each_linkage(self):
        rows, _ = pass_split.read_rows(self.path)
        got = pass_split.passes(rows, pass_split.stream_stages(rows))
        self.assertEqual([len(p) for p in got], [7, 4])  # the load's search in pass 1
        self.assertEqual(got[1][0][0], "SincConvKernel<1>(const float *)")

    def test_last_pass_by_default(self):
        out = self.run_tool()
        # Pass 2: 300 + 100 segmentation, 500 embeddings, 100 linkage = 1000.
        self.assertIn("pass 2 of 2: 4 launches, 1000.0 ns", out)
        self.assertIn("| embeddings | 500.0 ns | 50.0 % |", out)
        self.assertIn("| segmentation | 400.0 ns | 40.0 % |", out)
        self.assertIn("| linkage | 100.0 ns | 10.0 % |", out)
        self.assertNotIn("Frames", out)  # after the last linkage: no pass

    def test_first_pass_counts_the_unmarked_stream_as_other(self):
        out = self.run_tool("--pass", "1")
        self.assertIn("pass 1 of 2: 7 launches, 2050.0 ns", out)
        self.assertIn("| other | 1000.0 ns | 48.8 % |", out)
        self.assertIn("| segmentation | 600.0 ns | 29.3 % |", out)

    def test_without_linkage_the_log_is_one_pass(self):
        open(self.path, "w").write(HEAD + '"0","1","SincConvKernel","13","10"\n')
        self.assertIn("pass 1 of 1: 1 launches, 10.0 ns", self.run_tool())


if __name__ == "__main__":
    unittest.main()
