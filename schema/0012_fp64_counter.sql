-- FP64 (double-precision) warp instructions of an interval, GPU-wide like alu_insts and
-- sfu_insts: the simulator executes them on an FP64 unit of their own where a GPU
-- configuration gives one (fixtures/gpus/gtx1080ti-sim.toml: GP102 runs FP64 at 1/32 of the
-- FP32 rate, so an FP64-heavy kernel is bound by that unit, not by the ALUs). Runs simulated
-- before this migration, runs of GPUs without such a unit (0 FP64 instructions) and measured
-- runs leave it NULL or 0.
ALTER TABLE interval ADD COLUMN dp_insts BIGINT;
