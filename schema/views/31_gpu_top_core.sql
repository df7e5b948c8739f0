-- Each GPU's highest core P-state: the default base of the accuracy queries.
CREATE OR REPLACE VIEW gpu_top_core AS
SELECT gpu_id, max(freq_mhz) AS top_core_mhz
FROM pstate
WHERE domain = 'core'
GROUP BY gpu_id;
