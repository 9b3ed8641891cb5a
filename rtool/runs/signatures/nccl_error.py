"""nccl-error: NCCL itself failed (a network or CUDA error NCCL reports, or its result code)."""

from rtool.runs.signatures.base import SECONDARY, Declared

SIGNATURE = Declared(
    name="nccl-error",
    label="NCCL error",
    pattern=r"NCCL WARN (?:NET/IB ?: Got (?:completion|async event)|NET/OFI .{0,120}(?:error|fail)"
    r"|Net : (?:Call to|Connection closed)|Call to \w{1,40} failed|Connect to .{0,120} failed"
    r"|socket\w{0,30}: Connection closed|Socket recv failed|\[Proxy Service \d{1,6}\] Failed"
    r"|Cuda failure|.{0,120}Connection (?:closed|reset) by)"
    r"|NCCL error in: [^ ]{1,300}:\d{1,6}, |NCCL error: (?:remote|unhandled|internal|invalid)"
    r"|\bnccl(?:Internal|System|Remote|UnhandledCuda|InvalidUsage|InvalidArgument)Error: "
    r"|NCCL communicator was aborted on rank \d|: Call to recv from .{0,120} failed",
    tier=SECONDARY,
    action="NCCL lost a peer or its network: if every attempt fails on the same nodes, check "
    "their network (IB port, cables); otherwise look for the rank that died first",
    why="NCCL reports the broken link or the dead peer, seen from the printing rank",
    examples=(
        "n1:12345:12400 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<45012> with "
        "error 12, opcode 0, len 0, vendor err 129",
        "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from "
        "peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
        "localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for "
        "details), NCCL version 2.18.1",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely.",
        "socketProgressOpt: Call to recv from 172....<33759> failed : Connection reset by peer",
        "dgxh100-3:225140:225355 [0] misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed "
        "with error Network is unreachable",
    ),
    near_misses=(
        "n1:12345:12345 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>",
        "# NCCL WARN lines mean the fabric is flaky",
        "export NCCL_DEBUG=WARN",
        "if 'ncclInternalError' in str(exc):",
        "ubuntu:9621:9621 [0] misc/cudawrap.cc:179 NCCL WARN Failed to find CUDA library "
        "libcuda.so (NCCL_CUDA_PATH='') : ",
        "kolyoz2:25146:25852 [0] NCCL INFO [Service thread] Connection closed by localRank 0",
    ),
)
