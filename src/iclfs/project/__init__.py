"""The Kedro project's infrastructure: what runs around the stages of :mod:`iclfs.pipelines`.

The run's lifecycle (hooks, leases, run records, the latest switch), MLflow tracking, the configuration
loader and the data sources declared in conf, the Airflow DAG writer, log formatting, and the figures and
frames the stages and the report share. Nothing here is a pipeline stage; ``docs/architecture.md`` draws how
the parts meet.
"""
