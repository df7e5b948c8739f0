"""DVFS control: trace replay of predictor-driven controllers (queries/controller_replay.sql),
the offline policies of paper 004 section 4.3, and controllers run inside the simulator."""
