-- The engine of gpudb's simulator that produced a simulated run (issue 42): 'reference' (the
-- cycle engine, sim/_kernels.py) or 'sampled' (sim/sampled.py: steady stretches copied from
-- detailed windows). NULL for measured runs and for runs ingested from another simulator's
-- logs (experiment.simulator set). A database holds one engine's runs: gpudb refuses to add
-- another engine's (sweep, closed loop, merge), so no view or query pairs runs of two engines.
ALTER TABLE run ADD COLUMN engine TEXT;
UPDATE run SET engine = 'reference'
WHERE source = 'sim'
  AND NOT EXISTS (SELECT 1 FROM experiment AS e
                  WHERE e.experiment_id = run.experiment_id AND e.simulator IS NOT NULL);
