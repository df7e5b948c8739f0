-- Equalizer's runs (paper 001; gpudb/control/equalizer_loop.py). Equalizer decides every
-- epoch of E core cycles, so its closed-loop runs have intervals cut by cycles, not by work:
-- epoch_cycles holds E (NULL: intervals cut every interval_instructions warp instructions,
-- as for every run before this migration). variant names the Equalizer mechanisms in play:
-- 'full' (per-SM CTA limits and both V/F domains), 'cta' (CTA limits only, V/F nominal) or
-- 'vf' (V/F only); NULL for other runs. Equalizer runs have policy 'closed_loop', predictor
-- 'equalizer' and objective 'energy' or 'performance' (its two modes, Table I); its static
-- V/F baselines (section V: nominal, SM high/low, memory high/low at +-15%) have policy
-- 'static', so the fixed-run views (P-state grids) leave them out.
ALTER TABLE run ADD COLUMN epoch_cycles BIGINT;
ALTER TABLE run ADD COLUMN variant TEXT;
