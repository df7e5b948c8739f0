"""Measurement on an NVIDIA GPU through NVML: a command run at each clock setting, each
repetition a ``measured`` run (:func:`gpudb.sources.nvml.measure.measure`, ``gpudb measure``)."""
