"""Writes golden.safetensors with the reference safetensors implementation.

ordo's test (tests/tensor/test_safetensors.cpp) reads the file and checks each
value against the literals below, so a file from the Python ecosystem is
known to load. The test suite itself never runs Python; rerun this by hand
(pip install numpy safetensors) only to change the file, and update the test.
BF16 is missing because numpy has no bfloat16; the tests check BF16 bytes by hand.
"""
import os

import numpy as np
from safetensors.numpy import save_file

tensors = {
    "weight": np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -0.125]], dtype=np.float32),
    "bias": np.array([0.1, -1e-300, 2.5], dtype=np.float64),
    "half": np.array([1.5, -65504.0], dtype=np.float16),
    "ids": np.array([0, -1, 2**40, -(2**62)], dtype=np.int64),
    "counts": np.array([7, -8, 2**31 - 1], dtype=np.int32),
    "mask": np.array([[0, 1], [255, 7]], dtype=np.uint8),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "scalar": np.array(42.0, dtype=np.float32),
}
metadata = {"format": "np", "note": "golden file for ordo"}

here = os.path.dirname(os.path.abspath(__file__))
save_file(tensors, os.path.join(here, "golden.safetensors"), metadata=metadata)
