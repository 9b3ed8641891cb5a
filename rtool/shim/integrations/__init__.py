"""Thin adapters of rtool.shim for training frameworks (each imports its framework lazily):

- `rtool.shim.integrations.hf.RtoolCallback`: a transformers TrainerCallback
- `rtool.shim.integrations.lightning.RtoolCallback`: a PyTorch Lightning Callback
"""
