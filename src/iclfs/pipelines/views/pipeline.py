from kedro.pipeline import Node, Pipeline

from .nodes import sample_views


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                sample_views,
                inputs=["inverted_data", "params:views", "params:training", "params:members", "params:seed"],
                outputs=["view_sample", "view_statistics"],
                name="sample_views",
            )
        ]
    )
