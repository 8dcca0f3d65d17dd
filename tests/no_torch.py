"""The preamble that makes ``import torch`` fail in a child interpreter: for tests that check saved graphs are read,
summarised, diffed and advised without torch."""

BLOCK_TORCH = """\
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked in this test")
sys.meta_path.insert(0, NoTorch())
"""
