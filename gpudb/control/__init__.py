"""DVFS control: the controllers' decision step (guard.py), which both trace replay of
predictor-driven controllers (queries/controller_replay.sql, through the SQL function
guard_replay) and the closed loop run; the offline policies of paper 004 section 4.3; and
controllers run inside the simulator: one runner (runner.py) for every controller kind, each
kind one module in kinds/."""
