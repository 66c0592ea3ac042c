"""bench/micro: Python's Retry-After readers (urllib3 Retry.parse_retry_after,
email.utils.parsedate_to_datetime) timed with timeit on the inputs
parse_bench.c used, then printed with parse_bench's numbers as markdown
tables (ns/op and ratio to polite; what each reader makes of tricky values).

Usage: python3 py_peers.py BENCH_FILE CORRECT_FILE
(the output of `parse_bench bench` and `parse_bench correct`).
A benchmark, not a test: it never fails because something is slow.
"""
import calendar
import email.utils
import re
import statistics
import sys
import time
import timeit

import urllib3
from urllib3.exceptions import InvalidHeader
from urllib3.util.retry import Retry

RETRY = Retry(total=5, respect_retry_after_header=True)


def urllib3_read(value):
    """urllib3's reading, including its error path (an exception)."""
    try:
        return RETRY.parse_retry_after(value)
    except InvalidHeader:
        return None


def email_read(value):
    try:
        return email.utils.parsedate_to_datetime(value)
    except (ValueError, TypeError):
        return None


def ns_per_op(fn, value):
    """Median of 5 timeit runs, each about 0.2 s (timeit's autorange)."""
    t = timeit.Timer(lambda: fn(value))
    number, _ = t.autorange()
    runs = t.repeat(repeat=5, number=number)
    return statistics.median(runs) / number * 1e9


def fmt_date(ts):
    return time.strftime("date %Y-%m-%d %H:%M:%S", time.gmtime(ts))


def urllib3_says(value):
    """What urllib3 understood. Its result is a wait in seconds, clamped at
    0 for past dates, so for a date show the date it parsed (the same
    parsedate_tz + mktime_tz it calls) to compare with the others."""
    if re.match(r"^\s*[0-9]+\s*$", value):
        try:
            return "%d s" % RETRY.parse_retry_after(value)
        except (ValueError, OverflowError) as e:
            return "error (%s)" % type(e).__name__
    try:
        RETRY.parse_retry_after(value)
    except InvalidHeader:
        return "invalid (InvalidHeader)"
    except Exception as e:  # noqa: BLE001 - an unexpected exception is a finding
        return "error (%s)" % type(e).__name__
    # parsedate_tz reports a missing zone as offset 0, so this is UTC.
    return fmt_date(email.utils.mktime_tz(email.utils.parsedate_tz(value)))


def email_says(value):
    try:
        d = email.utils.parsedate_to_datetime(value)
    except (ValueError, TypeError) as e:
        return "invalid (%s)" % type(e).__name__
    if d.tzinfo is None:
        return fmt_date(calendar.timegm(d.timetuple())) + " (naive)"
    return fmt_date(d.timestamp())


def main():
    bench_file, correct_file = sys.argv[1], sys.argv[2]
    c = {}  # (case, input) -> median ns
    other = []
    for line in open(bench_file, encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if f[0] != "BENCH":
            continue
        c[(f[1], f[2])] = float(f[3])
        other.append(f)

    inputs = [
        "120",
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "Tue, 29 Feb 2022 08:49:37 GMT",
        "soon",
    ]
    print("urllib3 %s, Python %s" % (urllib3.__version__, sys.version.split()[0]))
    print()
    print("| input | polite | curl_getdate | strptime+timegm | urllib3 parse_retry_after "
          "| email.utils parsedate_to_datetime |")
    print("|---|---:|---:|---:|---:|---:|")
    for v in inputs:
        pol = c.get(("polite_retry_after_parse", v))
        cells = ["%.0f" % pol if pol else ""]
        for key in ("curl_getdate", "strptime+timegm"):
            ns = c.get((key, v))
            cells.append("%.0f (%.1f×)" % (ns, ns / pol) if ns and pol else "–")
        for fn, ok in ((urllib3_read, True), (email_read, v != "120")):
            if not ok:
                cells.append("–")
                continue
            ns = ns_per_op(fn, v)
            cells.append("%.0f (%.0f×)" % (ns, ns / pol))
        print("| `%s` | %s |" % (v, " | ".join(cells)))

    print()
    print("| case | input | median ns/op | min | max |")
    print("|---|---|---:|---:|---:|")
    for f in other:
        if f[1] in ("curl_getdate", "strptime+timegm"):
            continue
        print("| %s | %s | %s | %s | %s |" % (f[1], f[2] or "–", f[3], f[4], f[5]))

    print()
    print("| value | polite | curl_getdate | libcurl CURLINFO_RETRY_AFTER "
          "| strptime+timegm | urllib3 | email.utils |")
    print("|---|---|---|---|---|---|---|")
    for line in open(correct_file, encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if f[0] != "CORRECT":
            continue
        v = f[1]
        shown = "`%s`" % v.replace(" ", "␠") if v.strip() != v or "  " in v else "`%s`" % v
        if v == "":
            shown = "(empty)"
        print("| %s | %s | %s | %s | %s | %s | %s |"
              % (shown, f[2], f[3], f[4], f[5], urllib3_says(v), email_says(v)))


if __name__ == "__main__":
    main()
