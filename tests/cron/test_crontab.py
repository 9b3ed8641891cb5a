"""cron.d lines: parsing with croniter, due-ness, problems skipped with a warning."""

from __future__ import annotations

import time

from rtool.cron.jobs import is_due, next_fire, parse_cron_file

TEXT = """\
# a comment
MAILTO=nobody
GREETING="hello world"
*/15 * * * * echo every quarter
@daily   /bin/true

0 6 * * 1-5 echo weekdays
61 * * * * echo bad minute
* * * *
@reboot echo never
"""


def test_parse_lines_env_and_problems() -> None:
    lines, problems = parse_cron_file("jobs", TEXT)
    assert [(ln.lineno, ln.expr, ln.command) for ln in lines] == [
        (4, "*/15 * * * *", "echo every quarter"),
        (5, "@daily", "/bin/true"),
        (7, "0 6 * * 1-5", "echo weekdays"),
    ]
    assert lines[0].env == {"MAILTO": "nobody", "GREETING": "hello world"}
    assert lines[0].name == "cron.d/jobs:4"
    assert [(p.lineno, p.message.split()[0]) for p in problems] == [
        (8, "invalid"),
        (9, "expected"),
        (10, "unsupported"),
    ]


def test_key_survives_moving_the_line_but_not_editing_it() -> None:
    a = parse_cron_file("f", "*/5 * * * * echo x\n")[0][0]
    b = parse_cron_file("f", "# new comment\n*/5 * * * * echo x\n")[0][0]
    c = parse_cron_file("f", "*/5 * * * * echo y\n")[0][0]
    assert a.key == b.key != c.key


def local(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%d %H:%M:%S"))


def test_due_once_however_many_fire_times_were_missed() -> None:
    last = local("2024-05-01 10:01:00")
    assert next_fire("*/15 * * * *", last) == local("2024-05-01 10:15:00")
    assert not is_due("*/15 * * * *", last, local("2024-05-01 10:14:59"))
    assert is_due("*/15 * * * *", last, local("2024-05-01 10:15:00"))
    # 3 hours late: due (the caller runs it once and records the check time)
    assert is_due("*/15 * * * *", last, local("2024-05-01 13:20:00"))
    assert not is_due("0 6 * * *", last, local("2024-05-01 23:59:00"))
