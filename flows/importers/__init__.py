"""Importers: records written by other tools (benchmark harnesses) in, contract rows out.

``kaggle``: LearningBench runs recorded by Kaggle's harness ``kaggle-benchmarks``, replayed
through their task files (``cogscore import-kaggle``), or recorded live while the harness
runs (``flows.importers.kaggle_live``). ``scores``: a table of scores made elsewhere
(``cogscore import-scores``). The commands themselves are in ``flows.cli`` (``import_kaggle``,
``import_scores``), their report on a terminal in ``flows.present.imports``.
"""
