"""Local stand-ins for Slack, PagerDuty and an SMTP relay, on 127.0.0.1, for tests and the demo.

    slack = SlackLikeServer(token="xoxb-test", channels={"#alerts"}).start()
    slack.webhook_url     # http://127.0.0.1:PORT/services/T000/B000/<secret>  (incoming webhook)
    slack.api_url         # http://127.0.0.1:PORT/api/   (chat.postMessage for WebClient)
    slack.hook_url        # http://127.0.0.1:PORT/hook   (a generic JSON webhook)
    slack.mode = "ratelimit"   # ok|ratelimit|error|invalid_auth|channel_not_found|slow
    slack.script("error", "error")  # the next two requests fail, then `mode` again
    slack.stop(); slack.start()     # down (connection refused) and back, on the same port
    slack.accepted                  # requests answered ok, in order

    pd = PagerDutyLikeServer(routing_key="R0UT1NG...").start()
    pd.url                  # http://127.0.0.1:PORT/v2/enqueue  (Events API v2)
    pd.mode = "ratelimit"   # ok|ratelimit (429)|error (500)|invalid (400)
    pd.open                 # dedup_key -> the trigger of each open alert (resolve closes it)

    smtp = SmtpServer(mode="accept").start()   # accept | tempfail (451) | permfail (550) | slow
    smtp.messages                              # email.message.EmailMessage objects accepted

The SMTP server needs aiosmtpd (a dev dependency), imported only by SmtpServer.start().
Modules: slack (and free_port), pagerduty, smtp.
"""

from devtools.servers.pagerduty import PagerDutyLikeServer
from devtools.servers.slack import SLACK_MODES, SlackLikeServer, free_port
from devtools.servers.smtp import SMTP_MODES, SmtpServer

__all__ = [
    "SLACK_MODES",
    "SMTP_MODES",
    "PagerDutyLikeServer",
    "SlackLikeServer",
    "SmtpServer",
    "free_port",
]
