"""What a person sees of a run and of an output: the faces over the engine and the store.

- `summary`: the leaderboard and a run's summary lines (terminal, Prefect artifact);
- `status`: `cogscore status`, `history` and `compare`, printed from `flows.overview`'s facts;
- `sql`: `cogscore sql` (DuckDB over the tables at the versions a run pinned, and nothing else);
- `terminal`, `native`: progress bars, native stderr kept quiet;
- `explain`: from a score down to the turns that earned it (`cogscore explain`);
- `report/`: `cogscore report`, one HTML page.
"""
