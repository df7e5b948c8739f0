"""Showing results: output formats, the demo's readable tables, figures and the HTML report.
Never simulates and never writes runs."""
