"""GPGPU-Sim 3.x / Accel-Sim logs (:mod:`gpudb.sources.gpgpusim.log`) as runs, one per kernel
launch, with their periodic statistics as intervals
(:func:`gpudb.sources.gpgpusim.ingest.ingest_logs`, ``gpudb ingest-log``)."""
