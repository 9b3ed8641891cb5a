"""nccl-timeout: a rank waited for a collective (or its watchdog) past the timeout."""

from rtool.runs.signatures.base import SYMPTOM, Declared

SIGNATURE = Declared(
    name="nccl-timeout",
    label="collective timeout (a rank stopped)",
    pattern=r"Watchdog caught collective operation timeout|\) timed out in blocking wait"
    r"|Heartbeat monitor timed out|watchdog got stuck for \d{1,9} seconds"
    r"|detected no heartbeat of its watchdog|Exception \(either an error or timeout\) detected "
    r"by watchdog|\] Timeout at NCCL work: \d|Some NCCL operations have failed or timed out"
    r"|Timed out waiting \d{1,12}ms for (?:recv|send) operation",
    tier=SYMPTOM,
    action="the ranks that print this were left waiting: the rank that stopped first (a crash, "
    "a hang, a dead node) is the cause",
    why="the waiting ranks print it, not the node that failed: never blames the printing node",
    examples=(
        "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600042 milliseconds before timing out.",
        "[rank1]:[E1002 18:16:40.662691402 ProcessGroupNCCL.cpp:756] [Rank 1] Work "
        "WorkNCCL(SeqNum=2521, OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, "
        "Timeout(ms)=600000) timed out in blocking wait.",
        "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! "
        "Process will be terminated after dumping debug info. workMetaList_.size()=103",
        "[rank2]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:"
        "81] Timed out waiting 1800000ms for recv operation to complete",
    ),
    near_misses=(
        "# an NCCL timeout here means a peer died: raise NCCL_TIMEOUT",
        "[I ProcessGroupNCCL.cpp:686] [Rank 0] ProcessGroupNCCL initialization options: "
        "NCCL_ASYNC_ERROR_HANDLING: 1, NCCL_DESYNC_DEBUG: 0, TIMEOUT(ms): 600000",
        'print("NCCL timed out? retrying")',
        "dist.init_process_group('nccl', timeout=timedelta(minutes=30))",
        "n1:12345:12345 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.",
    ),
)
