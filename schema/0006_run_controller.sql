-- A closed-loop run (`gpudb control`) names its controller in columns, as control_result does,
-- rather than packed into run.policy ('crisp/energy_perf@1%/guarded' before this migration):
-- policy is 'closed_loop', and predictor, objective, max_loss_pct and guard say which. Fixed
-- and measured runs leave the four NULL. max_loss_pct is energy_perf's bound (%), NULL for
-- the other objectives; guard is 'paper' (the papers' controller), 'guarded' (gpudb's
-- default) or its parameters spelled out (gpudb/control/guard.py).
ALTER TABLE run ADD COLUMN predictor TEXT;
ALTER TABLE run ADD COLUMN objective TEXT;
ALTER TABLE run ADD COLUMN max_loss_pct DOUBLE;
ALTER TABLE run ADD COLUMN guard TEXT;
-- The strings closed-loop runs were stored with: '<predictor>/<objective>[@<bound>%][/<guard>]'.
UPDATE run SET
    predictor = split_part(policy, '/', 1),
    objective = split_part(split_part(policy, '/', 2), '@', 1),
    max_loss_pct = TRY_CAST(rtrim(nullif(split_part(split_part(policy, '/', 2), '@', 2), ''), '%')
                            AS DOUBLE),
    guard = coalesce(nullif(split_part(policy, '/', 3), ''), 'paper'),
    policy = 'closed_loop'
WHERE source = 'sim' AND policy LIKE '%/%';
