"""Benchmarks of gpudb itself (UDF views against plain SQL, scaling with the number of runs)."""
