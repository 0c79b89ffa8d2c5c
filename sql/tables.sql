-- Every table of OUT as a view over its latest Delta version (DuckDB with the delta
-- extension: LOAD delta; the wheel duckdb-extension-delta loads it offline into DuckDB
-- 1.5.5). Set the output first:  SET VARIABLE cogscore_out = '/path/to/OUT';
-- The latest versions may show a run half-way (a table replaced, the next not yet): a
-- reader that must never see that uses `cogscore sql`, which reads the versions the latest
-- finished run recorded in OUT/runs.

CREATE OR REPLACE VIEW episode_scores AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/episode_scores');

CREATE OR REPLACE VIEW rejects AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/rejects');

CREATE OR REPLACE VIEW replaced_episodes AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/replaced_episodes');

CREATE OR REPLACE VIEW task_scores AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/task_scores');

CREATE OR REPLACE VIEW category_scores AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/category_scores');

CREATE OR REPLACE VIEW model_scores AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/model_scores');

CREATE OR REPLACE VIEW rescore_diff AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/rescore_diff');

CREATE OR REPLACE VIEW model_comparisons AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/model_comparisons');

CREATE OR REPLACE VIEW regressions AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/regressions');

CREATE OR REPLACE VIEW task_standings AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/task_standings');

CREATE OR REPLACE VIEW category_standings AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/category_standings');

CREATE OR REPLACE VIEW standings AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/standings');

CREATE OR REPLACE VIEW standing_comparisons AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/standing_comparisons');

CREATE OR REPLACE VIEW standing_changes AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/standing_changes');

CREATE OR REPLACE VIEW task_changes AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/task_changes');

CREATE OR REPLACE VIEW stability AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/stability');

CREATE OR REPLACE VIEW task_health AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/task_health');

CREATE OR REPLACE VIEW category_health AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/category_health');

CREATE OR REPLACE VIEW signals AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/signals');

CREATE OR REPLACE VIEW hypotheses AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/hypotheses');

CREATE OR REPLACE VIEW standing_episodes AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/standing_episodes');

CREATE OR REPLACE VIEW imports AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/imports');

CREATE OR REPLACE VIEW runs AS
SELECT * FROM delta_scan(getvariable('cogscore_out') || '/runs');
