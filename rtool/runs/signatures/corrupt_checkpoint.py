"""corrupt-checkpoint: loading a checkpoint at resume failed (truncated zip, bad pickle, header)."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="corrupt-checkpoint",
    label="corrupt or truncated checkpoint",
    pattern=r"PytorchStreamReader failed reading (?:zip archive|file)"
    r"|failed finding central directory|UnpicklingError: (?:invalid load key|pickle data was "
    r"truncated)|Error while deserializing header|Error\(s\) in loading state_dict"
    r"|EOFError: Ran out of input",
    tier=ROOT,
    action="the checkpoint it resumed from is damaged or incomplete: resume from the last "
    "complete one (`rtool watch checkpoint` names it) and move the damaged one aside",
    why="a file, not the node's hardware",
    examples=(
        "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
        "directory",
        "UnpicklingError: pickle data was truncated",
        "safetensors_rust.SafetensorError: Error while deserializing header: "
        "MetadataIncompleteBuffer",
    ),
    near_misses=(
        "# a PytorchStreamReader error means the checkpoint is truncated",
        "except pickle.UnpicklingError:",
        "[12/20 18:16:20 fvcore.common.checkpoint]: Saving checkpoint to "
        "./output/model_0004999.pth",
    ),
)
