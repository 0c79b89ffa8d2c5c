-- Views over cogscore's warehouse tables, for DuckDB (1.1 or newer).
-- Set the output folder first, then read this file:
--   SET VARIABLE cogscore_out = '/path/to/OUT';
--   .read sql/views.sql
-- Every table is hive-partitioned (dump_date=…/[category=…/]part-0.parquet).

CREATE OR REPLACE VIEW episode_scores AS
SELECT * FROM read_parquet(getvariable('cogscore_out') || '/episode_scores/**/*.parquet',
                           hive_partitioning = true, union_by_name = true);

CREATE OR REPLACE VIEW rejects AS
SELECT * FROM read_parquet(getvariable('cogscore_out') || '/rejects/**/*.parquet',
                           hive_partitioning = true, union_by_name = true);

CREATE OR REPLACE VIEW task_scores AS
SELECT * FROM read_parquet(getvariable('cogscore_out') || '/task_scores/**/*.parquet',
                           hive_partitioning = true, union_by_name = true);

CREATE OR REPLACE VIEW category_scores AS
SELECT * FROM read_parquet(getvariable('cogscore_out') || '/category_scores/**/*.parquet',
                           hive_partitioning = true, union_by_name = true);

CREATE OR REPLACE VIEW model_scores AS
SELECT * FROM read_parquet(getvariable('cogscore_out') || '/model_scores/**/*.parquet',
                           hive_partitioning = true, union_by_name = true);

-- The latest night's leaderboard: one row per model, best first.
CREATE OR REPLACE VIEW leaderboard AS
SELECT dump_date, rank, model, score, ci_low, ci_high, categories_covered, n_episodes,
       formula_versions, input_fingerprint
FROM model_scores
WHERE dump_date IS NOT DISTINCT FROM (SELECT max(dump_date) FROM model_scores)
ORDER BY rank, model;

-- Each model's overall score night by night.
CREATE OR REPLACE VIEW model_trend AS
SELECT model, dump_date, score, ci_low, ci_high, rank
FROM model_scores
ORDER BY model, dump_date;

-- Category profile of each model on each night (one column per category).
CREATE OR REPLACE VIEW category_profile AS
PIVOT category_scores
ON category IN ('associative_learning', 'concept_formation', 'language_learning',
                'observational_learning', 'runtime_rl', 'procedural_learning')
USING first(score) GROUP BY dump_date, model;

-- Data quality: unscored episodes per night, model and rule.
CREATE OR REPLACE VIEW reject_reasons AS
SELECT dump_date, model, status, rule, count(*) AS episodes, sum(rows) AS rows
FROM (SELECT *, unnest(rules) AS rule FROM rejects)
GROUP BY ALL
ORDER BY episodes DESC;
