"""What a person sees of a run and of an output: the faces over the engine and the store.

- `summary`: the leaderboard and a run's summary lines (terminal, Prefect artifact);
- `status`: `cogscore status` and `history`, what an output holds and how it ended;
- `terminal`, `logs`, `native`: progress bars, structured logs, native stderr kept quiet;
- `explain`: from a score down to the turns that earned it (`cogscore explain`);
- `report/`: `cogscore report`, one HTML page.
"""
