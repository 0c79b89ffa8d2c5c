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
-- categories: ranked_among, a coverage group: rank, rank_low..rank_high and rank_ub count
-- within it, so each group has its own rank 1); score: the mean of the model's task scores,
-- each task weighing the same (the benchmark's own overall score); score_by_category: each
-- category weighing the same. ci_low..ci_high and rank_low..rank_high: intervals of the score
-- and the rank at the level of the run that made the standing (cogscore --level; the runs
-- table's details record it as bootstrap.level; the rank interval holds for every model at
-- once: rank_low = 1 + the models better at Holm p < 1 - level). rank_ub: 1 + the models the
-- verdicts call better (Holm p < 0.05, the verdict column of pairwise): LMArena's "rank
-- (UB)". The two count the same at the default level 0.95 (equal in every row of such a
-- run) and differ only at another --level (rank_ub stays at the verdicts' 0.05); a group
-- whose results do not vary enough to test has rank_ub 1 throughout. tier: a descriptive
-- label, not a claim (docs/decisions.md): the greedy grouping of the verdicts (the best model
-- and every model not significantly worse, then the same among the rest), which can put a
-- model below one it is not significantly worse than; rank_ub is the statement (null: alone
-- in its coverage). n_tasks: the tasks its score averages; oldest_night..newest_night: the
-- nights its results come from (task_standings: which, task by task).
-- cost_usd: what its episodes' model calls cost (contract 1.3; null where they record none),
-- over usage_episodes of its n_episodes; cost_per_episode: per such episode;
-- usage_incomplete: of those, the episodes some of whose calls record no usage (their cost
-- leaves them out); calls: the model calls behind those episodes (calls_per_episode per
-- such episode); latency_ms: the time those calls took (not the harness's wall time);
-- wall_ms: the harness's wall time of those episodes, each from its start to its end
-- (wall_s_per_episode: in seconds per such episode).
CREATE OR REPLACE VIEW leaderboard AS
SELECT as_of, rank, rank_low, rank_high, rank_ub, tier, model, score, ci_low, ci_high,
       score_by_category, ci_low_by_category, ci_high_by_category, rank_by_category,
       categories_covered, ranked_among, n_ranked, n_tasks, n_episodes, oldest_night,
       newest_night, formula_versions, cost_usd, usage_episodes, usage_incomplete,
       cost_usd / nullif(usage_episodes, 0) AS cost_per_episode, input_tokens,
       output_tokens, latency_ms, input_fingerprint, calls,
       calls / nullif(usage_episodes, 0) AS calls_per_episode, wall_ms,
       wall_ms / nullif(usage_episodes, 0) / 1000 AS wall_s_per_episode
FROM standings
WHERE as_of IS NOT DISTINCT FROM (SELECT max(as_of) FROM standings)
ORDER BY categories_covered DESC, ranked_among, rank, model;

-- Each category's own leaderboard as the benchmark stands as of the latest night: one row
-- per category and model, best first (ranked among every model with a score in it; a task
-- in no category, contract 1.4's uncategorised, is in none). score: the mean of its task
-- scores in the category; ci_low..ci_high and rank_low..rank_high as in leaderboard (from
-- the category's own comparisons); rank null: a standing made before categories were ranked.
CREATE OR REPLACE VIEW category_leaderboard AS
SELECT as_of, category, rank, rank_low, rank_high, model, score, ci_low, ci_high, n_tasks,
       n_episodes, formula_version, cost_usd, usage_episodes,
       cost_usd / nullif(usage_episodes, 0) AS cost_per_episode, input_fingerprint
FROM category_standings
WHERE as_of IS NOT DISTINCT FROM (SELECT max(as_of) FROM category_standings)
ORDER BY category, rank, score DESC, model;

-- The latest night's own leaderboard: its episodes alone (a model that did not run that
-- night is not on it; a model that re-ran some tasks is scored on those alone).
CREATE OR REPLACE VIEW night_leaderboard AS
SELECT dump_date, rank, rank_low, rank_high, rank_ub, tier, model, score, ci_low, ci_high,
       score_by_category, ci_low_by_category, ci_high_by_category, rank_by_category,
       categories_covered, ranked_among, n_ranked, n_tasks, n_episodes, formula_versions,
       cost_usd, usage_episodes, usage_incomplete,
       cost_usd / nullif(usage_episodes, 0) AS cost_per_episode, input_tokens,
       output_tokens, latency_ms, input_fingerprint, calls,
       calls / nullif(usage_episodes, 0) AS calls_per_episode, wall_ms,
       wall_ms / nullif(usage_episodes, 0) / 1000 AS wall_s_per_episode
FROM model_scores
WHERE dump_date IS NOT DISTINCT FROM (SELECT max(dump_date) FROM model_scores)
ORDER BY categories_covered DESC, ranked_among, rank, model;

-- The verdicts between models as the benchmark stands as of the latest night, in the scope
-- overall (each task weighing the same): one row per ordered pair (standing_comparisons
-- holds every night and every scope too). p_value: the pair's own p (read it for a
-- comparison planned alone); p_holm: Holm's over every pair of the scope, which the verdict
-- (a_better, b_better, unresolved at 0.05) reads. reason: why a pair's interval, p and
-- verdict are null (design none: e.g. a difference the same on every task, a spread of 0,
-- which is not evidence), its mde null (past the scores' range), or its interval
-- approximate (few tasks); null where none applies (and in tables written before it
-- existed).
CREATE OR REPLACE VIEW pairwise AS
SELECT as_of, scope, model_a, model_b, diff, ci_low, ci_high, p_value, p_holm, verdict,
       paired, mde, design, p_wilcoxon, reason
FROM standing_comparisons
WHERE scope = 'overall'
  AND as_of IS NOT DISTINCT FROM (SELECT max(as_of) FROM standing_comparisons)
ORDER BY model_a, model_b;

-- The same of the latest night's own episodes (model_comparisons).
CREATE OR REPLACE VIEW night_pairwise AS
SELECT dump_date, scope, model_a, model_b, diff, ci_low, ci_high, p_value, p_holm, verdict,
       paired, mde, design, p_wilcoxon, reason
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

-- Category profile of each model as the benchmark stood as of each night (one column per
-- category; category_standings): every model's latest result on every task by then, as the
-- leaderboard and the report show it.
CREATE OR REPLACE VIEW category_profile AS
PIVOT category_standings
ON category IN ('associative_learning', 'concept_formation', 'language_learning',
                'observational_learning', 'runtime_rl', 'procedural_learning')
USING first(score) GROUP BY as_of, model
ORDER BY as_of, model;

-- The same of each night's own episodes (category_scores: a model that did not run that
-- night is not on it): category_profile before issue 47.
CREATE OR REPLACE VIEW night_category_profile AS
PIVOT category_scores
ON category IN ('associative_learning', 'concept_formation', 'language_learning',
                'observational_learning', 'runtime_rl', 'procedural_learning')
USING first(score) GROUP BY dump_date, model
ORDER BY dump_date, model;

-- Data quality: unscored episodes per night, model and rule.
CREATE OR REPLACE VIEW reject_reasons AS
SELECT dump_date, model, status, rule, count(*) AS episodes, sum(rows) AS rows
FROM (SELECT *, unnest(rules) AS rule FROM rejects)
GROUP BY ALL
ORDER BY episodes DESC;
