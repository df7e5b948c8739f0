"""DVFS control: the controllers' decision step (guard.py), which both trace replay of
predictor-driven controllers (queries/controller_replay.sql, through the SQL function
guard_replay) and the closed loop run; the offline policies of paper 004 section 4.3; and
controllers run inside the simulator: each kind one module in kinds/, whose runs runner.py
plans for gpudb's one runner (gpudb.simulate.runner), as schedule_run.py plans the dynamic
optimal's."""
