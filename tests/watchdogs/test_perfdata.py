"""Nagios/Icinga performance data: the plugin-guidelines format, on generated labels and values,
and on what `rtool watch` prints for a real filesystem and a real log."""

from __future__ import annotations

import os
import re
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from rtool.watchdogs import perfdata
from rtool.watchdogs.metrics import Measure, Metric

# The guidelines' item, written independently of rtool/watchdogs/perfdata.py:
# 'label'=value[UOM];[warn];[crit];[min];[max]  (label quoted; '' is a quote inside)
GUIDELINE = re.compile(
    r"'(?:[^'=]|'')+'=(?:U|-?\d+(?:\.\d+)?(?:s|us|ms|%|B|KB|MB|GB|TB|c)?)"
    r"(?:;(?:[~@]?-?[\d.]*:?-?[\d.]*)?){0,4}"
)

labels = st.text(min_size=0, max_size=40)
finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15)
maybe = st.one_of(st.none(), finite)
metrics = st.sampled_from(list(Metric))


@settings(max_examples=300, deadline=None)
@given(label=labels, value=finite, warn=maybe, crit=maybe, lo=maybe, hi=maybe, metric=metrics)
def test_any_label_and_value_give_a_valid_item(label, value, warn, crit, lo, hi, metric):
    m = Measure(metric, value, warn, crit, lo, hi)
    text = perfdata.item(label, m)
    assert GUIDELINE.fullmatch(text), text
    (parsed,) = perfdata.parse(text)
    assert parsed["label"] == perfdata.clean_label(label)
    assert parsed["uom"] == (metric.info.unit.value or None)
    assert abs(float(parsed["value"] or "nan") - value) <= max(1e-3, abs(value) * 1e-9)
    assert "e" not in text.split("=", 1)[1].lower()  # never an exponent


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(labels, finite, metrics), min_size=1, max_size=8))
def test_rendered_perfdata_parses_with_unique_labels(items):
    perf = perfdata.render((what, Measure(metric, v)) for what, v, metric in items)
    parsed = perfdata.parse(perf)
    assert len(parsed) == len(items)
    found = [p["label"] for p in parsed]
    assert len(set(found)) == len(found)


def test_the_issue_example_and_undetermined_values():
    m = Measure(Metric.DISK_USED_PCT, 91, 80, 90, 0, 100)
    assert perfdata.item("/scratch", m) == "'/scratch'=91%;80;90;0;100"
    assert perfdata.item("a'b=c", Measure(Metric.LOG_AGE, float("nan"))) == "'a''b_c'=U"
    assert (
        perfdata.item("x", Measure(Metric.DISK_FREE_BYTES, 5e12, crit=1.5))
        == "'x'=5000000000000B;;1.5"
    )
    assert perfdata.number(0.5) == "0.5" and perfdata.number(-0.0) == "0"


def test_bad_perfdata_is_refused():
    for bad in ("x=1 2", "'a=b'=1", "x=1e5", "x=1;;;;;", "x=1zz", "'x'=1 "):
        try:
            perfdata.parse(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_watch_prints_perfdata_for_disk_and_log(tmpfs, tmp_path, cli):
    fs = tmpfs("scratch", size="10M", inodes=200)
    log = tmp_path / "train.out"
    log.write_text("step 1\n")
    old = time.time() - 120
    os.utime(log, (old, old))
    r = cli("watch", "disk", str(fs), "--warn-used", "70%", "--max-used", "80%", "--no-notify")
    first, *_ = r.out.splitlines()
    text, perf = first.split(" | ")
    assert text.startswith("DISK OK - ")
    items = {p["label"]: p for p in perfdata.parse(perf)}
    assert items[str(fs)]["uom"] == "%" and items[str(fs)]["warn"] == "70"
    assert items[str(fs)]["crit"] == "80" and items[str(fs)]["max"] == "100"
    assert items[f"{fs} used"]["max"] == str(10 * 1024 * 1024)
    assert items[f"{fs} inodes free"]["min"] == "0"
    r = cli("watch", "log", str(log), "--stale", "1h", "--no-notify")
    text, perf = r.out.strip().split(" | ")
    (age,) = perfdata.parse(perf)
    assert age["label"] == f"{log} age" and age["uom"] == "s" and age["crit"] == "3600"
    assert 119 <= float(age["value"] or 0) < 180
