"""Traces and reports: timelines (Chrome/Perfetto JSON, Paje), time-independent traces, run reports, plots."""
