-- The model each GPU's Wu predictions come from by default, in view prediction and the stored
-- queries that score them: the one trained last (created_at; retraining an identical model
-- refreshes it), ties to the greater model_id. One row per GPU with a stored model. pred_wu
-- and core_scaling_error keep every stored model, for ad hoc SQL (core_scaling_error marks
-- this one is_current); the stored queries take -p model_id ID.
CREATE OR REPLACE VIEW wu_model_current AS
SELECT *
FROM wu_model
QUALIFY row_number() OVER (PARTITION BY gpu_id ORDER BY created_at DESC, model_id DESC) = 1;
