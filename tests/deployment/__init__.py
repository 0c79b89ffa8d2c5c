"""End-to-end tests of the nightly deployment: a real Prefect server, work pool and worker."""
