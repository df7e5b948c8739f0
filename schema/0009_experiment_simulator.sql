-- The simulator that produced an experiment's runs, as it names itself, for runs gpudb ingests
-- from another simulator's logs (`gpudb ingest-log`: e.g. 'GPGPU-Sim 3.2.1 [build 15629]').
-- Such runs have source 'sim' like gpudb's own simulated runs; this column tells them apart.
-- NULL for experiments of gpudb's own simulator (sim/) and of measured data.
ALTER TABLE experiment ADD COLUMN simulator TEXT;
