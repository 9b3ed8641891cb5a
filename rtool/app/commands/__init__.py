"""One module per command group. Each keeps heavy imports (jinja2, slack_sdk, requests) inside
its functions, so `rtool --help` stays fast."""
