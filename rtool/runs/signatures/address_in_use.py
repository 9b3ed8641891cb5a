"""address-in-use: the rendezvous or store port is taken on the node (EADDRINUSE)."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="address-in-use",
    label="address already in use",
    pattern=r"failed to (?:bind|listen) (?:to|on) \[?[\w.:?-]{0,60}?\]?:(?P<what>\d{1,5}) "
    r"\(errno: 98 - Address already in use\)"
    r"|(?:Error:|\[Errno 98\]|errno: 98 -) Address already in use|name: EADDRINUSE\b"
    r"|The server socket has failed to listen on any local network",
    tier=ROOT,
    action="port {what} is taken on the node (another run or a leftover process): choose a "
    "free MASTER_PORT / rdzv port",
    what_default="the rendezvous",
    why="a port another process holds, not the node's hardware",
    examples=(
        "[W socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:47531 "
        "(errno: 98 - Address already in use).",
        "RuntimeError: The server socket has failed to listen on any local network address. "
        "useIpv6: 0, code: -48, name: EADDRINUSE, message: address already in use",
        "RuntimeError: Address already in use",
    ),
    near_misses=(
        "# Address already in use: pick another MASTER_PORT",
        "MASTER_PORT=29500",
    ),
)
