"""rendezvous: the launch could not gather its ranks (rendezvous or c10d store failures)."""

from rtool.runs.signatures.base import SECONDARY, Declared

SIGNATURE = Declared(
    name="rendezvous",
    label="rendezvous failed",
    pattern=r"Rendezvous(?:Timeout|Connection|Closed)Error\b|DistStoreError: (?:Timed out|Socket)"
    r"|The client socket has timed out after \d|connect\(\) timed out\. Original timeout",
    tier=SECONDARY,
    action="the ranks could not meet: check the rendezvous endpoint (host and port) and that "
    "every node started",
    why="a launch or network problem, not one node's hardware",
    examples=(
        "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
        "1/3 clients joined.",
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to "
        "the C10d store has failed. See inner exception for details.",
        "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to "
        "connect to 192.0.0.1:1234",
    ),
    near_misses=(
        "  rdzv_configs     : {'timeout': 900}",
        "# a rendezvous timeout: raise --rdzv-conf timeout",
        "[INFO] 2021-09-13 22:17:26,653 run: Using nproc_per_node=2.",
    ),
)
