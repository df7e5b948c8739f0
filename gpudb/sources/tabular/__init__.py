"""Measured data in tables: CSV/Parquet files read through a mapping file
(:mod:`gpudb.sources.tabular.mapping`) as whole-run `run` and `metric` rows
(:func:`gpudb.sources.tabular.ingest.ingest`, ``gpudb ingest``)."""
