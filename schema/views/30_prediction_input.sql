-- Every sample of a fixed run paired with every core P-state of its GPU as a prediction
-- target (the predictors of papers 000 and 004 scale the core clock only; memory clock, SM
-- count and CTA limit stay those of the base run).
CREATE OR REPLACE VIEW prediction_input AS
SELECT
    s.*,
    p.freq_mhz AS target_core_mhz
FROM sample AS s
JOIN pstate AS p ON p.gpu_id = s.gpu_id AND p.domain = 'core'
WHERE s.policy = 'fixed';
