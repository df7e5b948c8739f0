"""DVFS runtime predictors, one module per model family; each is a pure numpy function
(see gpudb.udfs for the SQL wrappers and schema/views/40_predictors.sql for their views).

ANALYTIC names every analytic predictor with a ``pred_<name>`` view, in the order tables show
them: the paper-exact models first, then gpudb's corrected CRISP variants
(gpudb.predictors.crisp_gpudb). Accuracy tables, trace replay and the closed loop read it.
"""

ANALYTIC = ("proportional", "stall", "lead", "miss", "crit", "critbw", "crisp", "crispl",
            "crisp_gpudb", "crispl_gpudb")
