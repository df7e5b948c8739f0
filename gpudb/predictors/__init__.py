"""DVFS runtime predictors, one module per model family; each is a pure numpy function
(see gpudb.udfs for the SQL wrappers)."""
