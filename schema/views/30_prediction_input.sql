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

-- Each GPU's highest core P-state: the default base of the accuracy queries.
CREATE OR REPLACE VIEW gpu_top_core AS
SELECT gpu_id, max(freq_mhz) AS top_core_mhz
FROM pstate
WHERE domain = 'core'
GROUP BY gpu_id;
