"""Real local servers for tests: an SMTP relay (aiosmtpd) and a Slack-like HTTP server.

The classes live in `devtools.servers` (the demo uses them too); pytest fixtures are in
`tests/servers/fixtures.py` (use them with `from tests.servers.fixtures import *` in a conftest,
or `pytest_plugins = ["tests.servers.fixtures"]` at the top-level conftest).
"""

from devtools.servers import SLACK_MODES, SMTP_MODES, SlackLikeServer, SmtpServer, free_port

__all__ = ["SLACK_MODES", "SMTP_MODES", "SlackLikeServer", "SmtpServer", "free_port"]
