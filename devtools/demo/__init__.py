"""The demo (scripts/demo): a training array on a real (local) Slurm that survives a time limit,
a save request, a hang and a kill switch, watched from the cron emulator, with the alerts to show.

    python -m devtools.demo [--dir DIR] [--with-servers] [--keep]
    from devtools.demo.run import run_demo
    code = run_demo(Path("/tmp/demo"), with_servers=True, keep=True)

Modules: workspace (folders, config, cron folder), inbox (the log channel, the local SMTP and
Slack-like servers), narrate (time-stamped lines, spinner), scenario (the Demo's helpers: rtool
calls, Slurm, reading the toy's files), steps and hang_scene (the scenario), observe (pure
parsing and the step accounting), summary (table and summary.json), run (options, the whole
thing). See docs/demo.md.
"""
