-- Views over cogscore's tables, for DuckDB (any version).
-- They need the tables as relations named episode_scores, rejects, task_scores,
-- category_scores, model_scores, model_comparisons, regressions, rescore_diff, the standings
-- (task_standings, category_standings, standings, standing_comparisons, standing_changes,
-- task_changes, hypotheses) and runs. Two ways to have them:
--   cogscore sql OUT "FROM leaderboard"       registers every table as the latest finished
--                                             run left it (deltalake's Arrow datasets), then
--                                             reads this file: local folders and s3:// alike;
--   or, in DuckDB 1.5.5 with the delta extension (duckdb-extension-delta):
--     SET VARIABLE cogscore_out = '/path/to/OUT';
--     .read sql/tables.sql                    (delta_scan of each table's latest version)
--     .read sql/views.sql
-- dump_date is a string YYYY-MM-DD in every table.

-- The leaderboard: the benchmark as it stands as of the latest night, each model's latest
-- result on every task (whenever it ran). One row per model, the widest coverage first,
-- best first within each coverage (models are ranked among those covering the same
-- categories: ranked_among). score: the mean of the model's task scores, each task weighing
-- the same (the benchmark's own overall score); score_by_category: each category weighing
-- the same. ci_low..ci_high and rank_low..rank_high: intervals of the score and the rank at
-- the level of the run that made the standing (cogscore --level; the runs table's details
-- record it as bootstrap.level; the rank interval holds for every model at once); rank_ub:
-- 1 + the models significantly better (the Holm verdicts); tier: the greedy grouping of those
-- verdicts, not a claim (null: alone in its coverage). n_tasks: the tasks its score averages; oldest_night..newest_night: the
-- nights its results come from (task_standings: which, task by task).
-- cost_usd: what its episodes' model calls cost (contract 1.3; null where they record none),
-- over usage_episodes of its n_episodes; cost_per_episode: per such episode;
-- usage_incomplete: of those, the episodes some of whose calls record no usage (their cost
-- leaves them out).
CREATE OR REPLACE VIEW leaderboard AS
SELECT as_of, rank, rank_low, rank_high, rank_ub, tier, model, score, ci_low, ci_high,
       score_by_category, ci_low_by_category, ci_high_by_category, rank_by_category,
       categories_covered, ranked_among, n_ranked, n_tasks, n_episodes, oldest_night,
       newest_night, formula_versions, cost_usd, usage_episodes, usage_incomplete,
       cost_usd / nullif(usage_episodes, 0) AS cost_per_episode, input_tokens,
       output_tokens, latency_ms, input_fingerprint
FROM standings
WHERE as_of IS NOT DISTINCT FROM (SELECT max(as_of) FROM standings)
ORDER BY categories_covered DESC, ranked_among, rank, model;

-- The latest night's own leaderboard: its episodes alone (a model that did not run that
-- night is not on it; a model that re-ran some tasks is scored on those alone).
CREATE OR REPLACE VIEW night_leaderboard AS
SELECT dump_date, rank, rank_low, rank_high, rank_ub, tier, model, score, ci_low, ci_high,
       score_by_category, ci_low_by_category, ci_high_by_category, rank_by_category,
       categories_covered, ranked_among, n_ranked, n_tasks, n_episodes, formula_versions,
       cost_usd, usage_episodes, usage_incomplete,
       cost_usd / nullif(usage_episodes, 0) AS cost_per_episode, input_tokens,
       output_tokens, latency_ms, input_fingerprint
FROM model_scores
WHERE dump_date IS NOT DISTINCT FROM (SELECT max(dump_date) FROM model_scores)
ORDER BY categories_covered DESC, ranked_among, rank, model;

-- The verdicts between models as the benchmark stands as of the latest night, overall: one
-- row per ordered pair (standing_comparisons holds every night and every category too).
CREATE OR REPLACE VIEW pairwise AS
SELECT as_of, model_a, model_b, diff, ci_low, ci_high, p_holm, verdict, paired, mde,
       design, p_wilcoxon
FROM standing_comparisons
WHERE scope = 'overall'
  AND as_of IS NOT DISTINCT FROM (SELECT max(as_of) FROM standing_comparisons)
ORDER BY model_a, model_b;

-- The same of the latest night's own episodes (model_comparisons).
CREATE OR REPLACE VIEW night_pairwise AS
SELECT dump_date, model_a, model_b, diff, ci_low, ci_high, p_holm, verdict, paired, mde,
       design, p_wilcoxon
FROM model_comparisons
WHERE scope = 'overall'
  AND dump_date IS NOT DISTINCT FROM (SELECT max(dump_date) FROM model_comparisons)
ORDER BY model_a, model_b;

-- The planned hypotheses (cogscore --hypotheses FILE) as the benchmark stands as of the
-- latest night: each claim declared in advance, its test (scipy's, as the benchmark's
-- authors call it), the raw p-value and Benjamini-Hochberg's over the file, the verdict
-- (supported, not supported, contradicted, not estimable) and why. They stand beside the
-- family of every pair (pairwise: Holm), not inside it. Empty where the run that made the
-- latest standing declared none (hypotheses holds every standing's).
CREATE OR REPLACE VIEW planned_hypotheses AS
SELECT as_of, id, claim, test, scope, alternative, a, b, n, n_a_better, n_b_better, mean_a,
       mean_b, estimate, statistic, p_value, p_adjusted, alpha, verdict, reason
FROM hypotheses
WHERE as_of IS NOT DISTINCT FROM (SELECT max(as_of) FROM standings)
ORDER BY id;

-- Each model's standing night by night: its score as the benchmark stood then (a night it
-- did not run keeps its results), its rank and how many tasks it averages.
CREATE OR REPLACE VIEW standing_trend AS
SELECT model, as_of, score, ci_low, ci_high, rank, rank_low, rank_high, n_tasks,
       ranked_among, newest_night
FROM standings
ORDER BY model, as_of;

-- What moved the standings, night by night: alerts and watches (a re-run that moved a
-- model's standing beyond noise), then models new, gone, covering other tasks, or whose
-- standing a rescore (or a night delivered again) moved (kind rescored).
CREATE OR REPLACE VIEW standing_alerts AS
SELECT as_of, level, kind, model, scope, baseline_score, score, change, ci_low, ci_high,
       p_value, q_bh, moved_by, reason
FROM standing_changes
WHERE level IN ('alert', 'watch') OR (scope = 'overall' AND kind NOT IN ('rerun', 'reranked'))
ORDER BY as_of DESC, level, model, scope;

-- Regressions that need a look, every night: alerts first, then watches.
CREATE OR REPLACE VIEW regression_alerts AS
SELECT dump_date, level, model, scope, baseline_score, score, change, ci_low, ci_high,
       p_value, q_bh, margin, baseline_dates
FROM regressions
WHERE level IN ('alert', 'watch')
ORDER BY dump_date DESC, level, model, scope;

-- The output's formula set: the version of each category that its runs score with
-- (pinned when the output was created; changed only by a rescore of every night).
CREATE OR REPLACE VIEW formula_set AS
SELECT k AS category, json_extract_string(j, '$.' || k) AS formula_version
FROM (SELECT formula_set AS j FROM runs
      WHERE status IN ('succeeded', 'nothing_to_do')
      ORDER BY finished DESC, started DESC LIMIT 1) AS latest,
     unnest(json_keys(j)) AS t(k);

-- Nights whose categories were scored with versions other than the set (a partial rescore).
CREATE OR REPLACE VIEW formula_differences AS
SELECT DISTINCT c.dump_date, c.category, c.formula_version, s.formula_version AS set_version
FROM category_scores AS c JOIN formula_set AS s USING (category)
WHERE c.formula_version <> s.formula_version
ORDER BY c.dump_date, c.category;

-- Each model's overall score night by night. `series` changes where the formula versions
-- change: draw one line per series, never a line that joins scores of different formulas.
-- `off_formula_set`: the night was scored with versions other than the output's set.
CREATE OR REPLACE VIEW model_trend AS
SELECT model, dump_date, score, ci_low, ci_high, rank, formula_versions,
       model || ' [' || formula_versions || ']' AS series,
       dump_date IN (SELECT dump_date FROM formula_differences) AS off_formula_set
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
