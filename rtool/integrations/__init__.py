"""Thin adapters of rtool.shim for training frameworks (each imports its framework lazily):

- `rtool.integrations.hf.RtoolCallback`: a transformers TrainerCallback
- `rtool.integrations.lightning.RtoolCallback`: a PyTorch Lightning Callback
"""
